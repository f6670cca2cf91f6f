"""What a callback reads of an episode does not depend on which other hooks it overrides.

A callbacks class overriding only ``on_postprocess_trajectory`` (or only ``on_episode_end``, or
only ``on_episode_start``) sees the same ``length``, rewards and last-step accessors as one that
also overrides ``on_episode_step``, and those values match the env steps the rows record: in
``on_postprocess_trajectory`` a finished episode shows its end, and one the fragment cut its
env steps so far and its latest step. Single-agent (CartPole, two sub-envs) and multi-agent
(``ScriptedEnv``); local workers only (no Ray)."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import pytest

from rlconf import PolicySpec, PPOConfig
from runtime import DefaultCallbacks, Episode
from runtime.core.sample_batch import SampleBatch
from runtime.env.episode import SINGLE_AGENT_ID
from tests.multi_agent_envs import SCRIPT, SCRIPT_LENGTH, ScriptedEnv, map_scripted, obs_of
from tests.multi_agent_envs import scripted_reward as reward_of

SB = SampleBatch
View = dict[str, Any]


def _plain(value: Any) -> Any:
    """A value as plain Python (arrays as lists), so that views compare with ``==``."""
    if value is None:
        return None
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return np.asarray(value).tolist()


def _view(episode: Episode, agent: Any) -> View:
    """What ``episode`` shows of itself and of ``agent``'s last step."""
    return {
        "id": episode.episode_id,
        "length": episode.length,
        "total_reward": round(episode.total_reward, 6),
        "agent_rewards": {k: round(v, 6) for k, v in episode.agent_rewards.items()},
        "agent": agent,
        "obs": _plain(episode.last_observation_for(agent)),
        "info": _plain(episode.last_info_for(agent)),
        "action": _plain(episode.last_action_for(agent)),
        "prev_action": _plain(episode.prev_action_for(agent)),
        "reward": round(episode.last_reward_for(agent), 6),
        "prev_reward": round(episode.prev_reward_for(agent), 6),
        "extra": _plain(episode.last_extra_action_outs_for(agent)),
        "terminated": episode.last_terminated_for(agent),
        "truncated": episode.last_truncated_for(agent),
    }


class Recorder(DefaultCallbacks):
    """Base of the recording callbacks: ``seen`` holds each call's view (and, for a
    trajectory, its rows)."""

    seen: ClassVar[list[tuple[str, View, SampleBatch | None]]] = []


class TrajectoryOnly(Recorder):
    def on_postprocess_trajectory(
        self, *, episode: Episode, agent_id: Any, postprocessed_batch: SampleBatch, **kwargs: Any
    ) -> None:
        Recorder.seen.append(("trajectory", _view(episode, agent_id), postprocessed_batch.copy()))


class EndOnly(Recorder):
    def on_episode_end(self, *, episode: Episode, **kwargs: Any) -> None:
        for agent in episode.get_agents():
            Recorder.seen.append(("end", _view(episode, agent), None))


class StartOnly(Recorder):
    def on_episode_start(self, *, episode: Episode, env_index: int, **kwargs: Any) -> None:
        Recorder.seen.append(("start", {**_view(episode, SINGLE_AGENT_ID), "env": env_index}, None))

    def on_episode_end(self, *, episode: Episode, env_index: int, **kwargs: Any) -> None:
        Recorder.seen.append(("end", {**_view(episode, SINGLE_AGENT_ID), "env": env_index}, None))


def _with_step_hook(cls: type[Recorder]) -> type[Recorder]:
    """``cls`` that also overrides ``on_episode_step`` (a no-op)."""

    def on_episode_step(self: Any, **kwargs: Any) -> None:
        pass

    return type(f"{cls.__name__}AndStep", (cls,), {"on_episode_step": on_episode_step})


def _record(
    config: PPOConfig, callbacks: type[Recorder], fragments: int
) -> list[tuple[str, View, SampleBatch | None]]:
    Recorder.seen = []
    algo = config.callbacks(callbacks).debugging(seed=0).build()
    try:
        worker = algo.workers.local_worker()
        for _ in range(fragments):
            worker.sample()
    finally:
        algo.stop()
    return Recorder.seen


def _same_views(config: PPOConfig, callbacks: type[Recorder], fragments: int) -> list[Any]:
    """The views ``callbacks`` records, checked equal to those of ``callbacks`` that also
    overrides ``on_episode_step``."""
    seen = _record(config, callbacks, fragments)
    with_step = _record(config, _with_step_hook(callbacks), fragments)
    assert [(hook, view) for hook, view, _ in seen] == [(hook, view) for hook, view, _ in with_step]
    assert seen
    return seen


def _cartpole(**rollouts: Any) -> PPOConfig:
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .rollouts(
            num_workers=0,
            num_envs_per_worker=2,
            **{"rollout_fragment_length": 16, **rollouts},
        )
        .training(train_batch_size=32, sgd_minibatch_size=32, model={"fcnet_hiddens": [8]})
    )


def _fell(obs: Any) -> bool:
    """CartPole's termination: the cart off the track or the pole past 12 degrees."""
    return bool(abs(obs[0]) > 2.4 or abs(obs[2]) > 12 * 2 * np.pi / 360)


# ------------------------------------------------------------------- single-agent


def test_a_trajectory_hook_alone_sees_each_episodes_steps_so_far() -> None:
    seen = _same_views(_cartpole(), TrajectoryOnly, fragments=4)
    kinds = set()
    for _, view, rows in seen:
        assert rows is not None
        length = int(rows[SB.T][-1]) + 1
        assert view["agent"] == SINGLE_AGENT_ID
        assert view["length"] == length  # this episode's env steps, earlier fragments' too
        assert view["total_reward"] == length  # CartPole: 1 per step
        assert view["agent_rewards"] == {(SINGLE_AGENT_ID, "default_policy"): length}
        assert view["action"] == int(rows[SB.ACTIONS][-1])
        if len(rows) >= 2:
            assert view["prev_action"] == int(rows[SB.ACTIONS][-2])
        assert view["reward"] == 1.0
        assert view["prev_reward"] == (1.0 if length >= 2 else 0.0)
        np.testing.assert_allclose(view["obs"], rows[SB.NEXT_OBS][-1], rtol=1e-6)
        assert view["extra"]["action_logp"] == pytest.approx(float(rows["action_logp"][-1]))
        assert view["terminated"] == bool(rows[SB.TERMINATEDS][-1])
        assert view["truncated"] == bool(rows[SB.TRUNCATEDS][-1])
        assert view["terminated"] == _fell(view["obs"])
        kinds.add("finished" if view["terminated"] else "cut")
    assert kinds == {"finished", "cut"}


def test_an_episode_end_hook_alone_sees_the_last_step() -> None:
    seen = _same_views(_cartpole(), EndOnly, fragments=4)
    for _, view, _ in seen:
        length = view["length"]
        assert length > 1
        assert view["total_reward"] == length
        assert view["agent_rewards"] == {(SINGLE_AGENT_ID, "default_policy"): length}
        assert view["action"] in (0, 1) and view["prev_action"] in (0, 1)
        assert view["reward"] == view["prev_reward"] == 1.0
        assert view["terminated"] and _fell(view["obs"])
        assert {"action_logp", "action_dist_inputs"} <= set(view["extra"])


def test_a_soft_horizons_next_episode_starts_from_the_running_envs_observation() -> None:
    seen = _same_views(
        _cartpole(horizon=5, soft_horizon=True, rollout_fragment_length=12), StartOnly, 1
    )
    last_end: dict[int, View] = {}
    carried = 0
    for hook, view, _ in seen:
        env = view["env"]
        if hook == "end":
            last_end[env] = view
            continue
        assert view["length"] == 0 and view["obs"] is not None and view["action"] is None
        previous = last_end.get(env)
        if previous is not None and not previous["terminated"]:
            assert view["obs"] == previous["obs"]
            carried += 1
    assert carried


# ------------------------------------------------------------------- multi-agent


def _scripted() -> PPOConfig:
    # 2 sub-envs x 4 env steps a fragment; episodes of 6 steps: the first fragment cuts each
    # episode at 4, the second finishes it and cuts the next at 2.
    return (
        PPOConfig()
        .environment(ScriptedEnv, env_config={})
        .rollouts(num_workers=0, num_envs_per_worker=2, rollout_fragment_length=4)
        .training(train_batch_size=16, sgd_minibatch_size=16, model={"fcnet_hiddens": [8]})
        .multi_agent(
            policies={"p0": PolicySpec(), "p1": PolicySpec()}, policy_mapping_fn=map_scripted
        )
    )


def _expected_rewards(length: int) -> dict[tuple[str, str], float]:
    """Each agent's rewards over the first ``length`` env steps of ``ScriptedEnv``."""
    out = {}
    for agent, (join, leave) in SCRIPT.items():
        if join < length:
            total = sum(reward_of(agent, t) for t in range(join, min(leave, length)))
            out[(agent, map_scripted(agent))] = round(total, 6)
    return out


def _check_agent(view: View) -> None:
    """``view`` of a ``ScriptedEnv`` agent against the script, given the episode's length."""
    agent, length = view["agent"], view["length"]
    join, leave = SCRIPT[agent]
    seen_at = min(length, leave)  # the env time of the agent's latest observation
    expected = _expected_rewards(length)
    assert view["agent_rewards"] == expected
    assert view["total_reward"] == pytest.approx(sum(expected.values()))
    assert view["obs"] == obs_of(agent, seen_at).tolist()
    assert view["info"] == {"t": seen_at}
    assert view["reward"] == round(reward_of(agent, seen_at - 1), 6)
    assert view["prev_reward"] == (
        round(reward_of(agent, seen_at - 2), 6) if seen_at - 2 >= join else 0.0
    )
    assert view["terminated"] == (seen_at == min(leave, SCRIPT_LENGTH))
    assert not view["truncated"]
    assert view["action"] in (0, 1)


def test_a_multi_agent_trajectory_hook_alone_sees_each_agents_last_step() -> None:
    seen = _same_views(_scripted(), TrajectoryOnly, fragments=3)
    lengths = set()
    for _, view, rows in seen:
        assert rows is not None
        _check_agent(view)
        # The rows: the agent's latest observation is its last row's next one.
        assert int(rows[SB.NEXT_OBS][-1, 1]) == min(view["length"], SCRIPT[view["agent"]][1])
        assert view["action"] == int(rows[SB.ACTIONS][-1])
        if len(rows) >= 2:
            assert view["prev_action"] == int(rows[SB.ACTIONS][-2])
        assert view["extra"]["action_logp"] == pytest.approx(float(rows["action_logp"][-1]))
        lengths.add(view["length"])
    # Cut at 4 and at 2, finished at 6.
    assert lengths == {2, 4, SCRIPT_LENGTH}


def test_a_multi_agent_episode_end_hook_alone_sees_each_agents_last_step() -> None:
    seen = _same_views(_scripted(), EndOnly, fragments=3)
    assert {view["agent"] for _, view, _ in seen} == set(SCRIPT)
    for _, view, _ in seen:
        assert view["length"] == SCRIPT_LENGTH
        _check_agent(view)
        assert view["terminated"]
