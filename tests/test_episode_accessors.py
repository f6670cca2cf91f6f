"""The episode callbacks see, single- and multi-agent alike: one agent-keyed ``Episode`` (the
reference's ``MultiAgentEpisode``; a single-agent env's is the one-agent case, agent
``"agent0"`` with ``default_policy``) and each agent's last step through the reference's
accessors, the policy's extra outputs and a memory model's state included. Local workers only
(no Ray)."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from rlconf import PolicySpec, PPOConfig
from rlconf.model_config import ModelConfigDict
from runtime import DefaultCallbacks, Episode, MultiAgentEpisode, make_multi_agent
from runtime.env.episode import SINGLE_AGENT_ID

TwoCartPoles = make_multi_agent("CartPole-v1")


class EpisodeReader(DefaultCallbacks):
    """Records what each hook reads of its episode."""

    seen: ClassVar[list[tuple[str, dict[str, Any]]]] = []

    @staticmethod
    def _agent(episode: Episode, agent: Any) -> dict[str, Any]:
        return {
            "policy": episode.policy_for(agent),
            "obs": episode.last_observation_for(agent),
            "raw_obs": episode.last_raw_obs_for(agent),
            "action": episode.last_action_for(agent),
            "prev_action": episode.prev_action_for(agent),
            "reward": episode.last_reward_for(agent),
            "prev_reward": episode.prev_reward_for(agent),
            "extra": dict(episode.last_extra_action_outs_for(agent)),
            "state": [np.array(s) for s in episode.rnn_state_for(agent)],
            "terminated": episode.last_terminated_for(agent),
            "truncated": episode.last_truncated_for(agent),
            "done": episode.last_done_for(agent),
        }

    def _read(self, hook: str, episode: Episode) -> None:
        EpisodeReader.seen.append(
            (
                hook,
                {
                    "id": episode.episode_id,
                    "type_ok": isinstance(episode, MultiAgentEpisode),
                    "agents": episode.get_agents(),
                    "length": episode.length,
                    "total_reward": episode.total_reward,
                    "agent_rewards": dict(episode.agent_rewards),
                    "agent_steps": episode.total_agent_steps,
                    "env_steps": episode.total_env_steps,
                    "by_agent": {a: self._agent(episode, a) for a in episode.get_agents()},
                },
            )
        )

    def on_episode_start(self, *, episode: Episode, **kwargs: Any) -> None:
        self._read("start", episode)

    def on_episode_step(self, *, episode: Episode, **kwargs: Any) -> None:
        self._read("step", episode)

    def on_episode_end(self, *, episode: Episode, **kwargs: Any) -> None:
        self._read("end", episode)

    def on_postprocess_trajectory(self, *, agent_id: Any, policy_id: str, **kwargs: Any) -> None:
        EpisodeReader.seen.append(("trajectory", {"agent": agent_id, "policy": policy_id}))


def _sample(config: PPOConfig) -> list[tuple[str, dict[str, Any]]]:
    EpisodeReader.seen = []
    algo = config.callbacks(EpisodeReader).debugging(seed=0).build()
    try:
        algo.workers.local_worker().sample()
    finally:
        algo.stop()
    return EpisodeReader.seen


def _single_agent(model: ModelConfigDict | None = None) -> PPOConfig:
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .rollouts(num_workers=0, num_envs_per_worker=1, rollout_fragment_length=64)
        .training(train_batch_size=64, sgd_minibatch_size=64, model=model or {})
    )


def _steps_of(seen: list[tuple[str, dict[str, Any]]], episode_id: int) -> list[dict[str, Any]]:
    return [r for hook, r in seen if hook == "step" and r["id"] == episode_id]


def test_a_single_agent_episode_is_the_one_agent_case_with_each_steps_record() -> None:
    seen = _sample(_single_agent())
    start = next(r for hook, r in seen if hook == "start")
    assert start["type_ok"]
    assert start["agents"] == [SINGLE_AGENT_ID]
    first = start["by_agent"][SINGLE_AGENT_ID]
    assert first["policy"] == "default_policy"
    assert np.asarray(first["obs"]).shape == (4,)
    assert first["action"] is None and first["extra"] == {} and first["state"] == []
    steps = _steps_of(seen, start["id"])
    assert len(steps) >= 2
    previous: dict[str, Any] | None = None
    for step in steps:
        agent = step["by_agent"][SINGLE_AGENT_ID]
        assert agent["action"] in (0, 1)
        assert agent["reward"] == 1.0
        assert {"action_logp", "action_dist_inputs"} <= set(agent["extra"])
        assert np.isfinite(agent["extra"]["action_logp"])
        assert step["agent_rewards"] == {(SINGLE_AGENT_ID, "default_policy"): step["length"]}
        assert step["total_reward"] == step["length"] == step["agent_steps"]
        if previous is None:
            assert agent["prev_action"] is None and agent["prev_reward"] == 0.0
        else:
            assert agent["prev_action"] == previous["action"]
            assert agent["prev_reward"] == previous["reward"]
            assert not np.array_equal(agent["obs"], previous["obs"])
        assert not agent["done"] or step is steps[-1]
        previous = agent
    ends = [r for hook, r in seen if hook == "end" and r["id"] == start["id"]]
    if ends:
        end = ends[0]["by_agent"][SINGLE_AGENT_ID]
        assert end["done"] and (end["terminated"] or end["truncated"])
        assert ends[0]["agent_rewards"] == {(SINGLE_AGENT_ID, "default_policy"): ends[0]["length"]}
    trajectories = [r for hook, r in seen if hook == "trajectory"]
    assert trajectories
    assert all(r == {"agent": SINGLE_AGENT_ID, "policy": "default_policy"} for r in trajectories)


def test_a_memory_models_state_is_each_episodes_from_its_initial_state_on() -> None:
    seen = _sample(_single_agent({"use_lstm": True, "lstm_cell_size": 8, "vf_share_layers": True}))
    start = next(r for hook, r in seen if hook == "start")
    initial = start["by_agent"][SINGLE_AGENT_ID]["state"]
    assert [s.shape for s in initial] == [(8,), (8,)]
    assert all(not s.any() for s in initial)
    states = [s["by_agent"][SINGLE_AGENT_ID]["state"] for s in _steps_of(seen, start["id"])]
    assert all([s.shape for s in state] == [(8,), (8,)] for state in states)
    # The state moves on from step to step.
    assert any(s.any() for s in states[0])
    assert not all(np.array_equal(a, b) for a, b in zip(states[0], states[1], strict=True))


def test_multi_agent_episodes_record_each_agents_step_and_state() -> None:
    config = (
        PPOConfig()
        .environment(TwoCartPoles, env_config={"num_agents": 2})
        .rollouts(num_workers=0, num_envs_per_worker=1, rollout_fragment_length=32)
        .training(train_batch_size=64, sgd_minibatch_size=64)
        .multi_agent(
            policies={
                "plain": PolicySpec(),
                "lstm": PolicySpec(
                    config={
                        "model": {"use_lstm": True, "lstm_cell_size": 8, "vf_share_layers": True}
                    }
                ),
            },
            policy_mapping_fn=lambda agent_id, *args, **kwargs: ("plain", "lstm")[agent_id],
        )
    )
    seen = _sample(config)
    start = next(r for hook, r in seen if hook == "start")
    assert start["type_ok"]
    # The observations of a reset are there before its agents are mapped (when they act).
    assert start["by_agent"] == {} and start["agents"] == []
    steps = _steps_of(seen, start["id"])
    assert len(steps) >= 2
    assert sorted(steps[0]["agents"]) == [0, 1]
    # Both agents act at every step until one is done: two agent steps per env step, each
    # counted once its transition closes (at the next observation).
    assert [s["env_steps"] for s in steps[:2]] == [1, 2]
    assert [s["agent_steps"] for s in steps[:2]] == [0, 2]
    for step in steps:
        plain, lstm = step["by_agent"][0], step["by_agent"][1]
        assert (plain["policy"], lstm["policy"]) == ("plain", "lstm")
        for agent in (plain, lstm):
            if not agent["done"]:
                assert agent["action"] in (0, 1) and agent["reward"] == 1.0
                assert {"action_logp", "action_dist_inputs"} <= set(agent["extra"])
        assert plain["state"] == []
        assert [s.shape for s in lstm["state"]] == [(8,), (8,)]
    second = steps[1]["by_agent"]
    assert second[0]["prev_action"] == steps[0]["by_agent"][0]["action"]
    assert second[1]["prev_action"] == steps[0]["by_agent"][1]["action"]
    # The default agent of the accessors is the single-agent one: not an agent here.
    assert SINGLE_AGENT_ID not in steps[0]["agents"]
