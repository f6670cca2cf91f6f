"""The reference's multi-agent contract: its own test envs (our versions, in
``envs_multi_agent_peers.py``) sample and train; rewards given to an agent while others move add
up into its transition, those before its first action count in the returns only; ``t`` is the
agent's own step; a one-argument ``policy_mapping_fn`` works with a DeprecationWarning; the
space helpers of ``MultiAgentEnv``."""

from __future__ import annotations

import warnings
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from rlconf import PGConfig, PolicySpec, PPOConfig
from runtime import MultiAgentEnv, MultiAgentEnvError, RolloutWorker, make_multi_agent
from runtime.algorithms.pg import PG
from runtime.core.multi_agent_batch import MultiAgentBatch
from runtime.env.env_registry import env_creator_for
from tests.envs_multi_agent_peers import (
    EarlyDoneMultiAgent,
    FlexAgentsMultiAgent,
    Out,
    RoundRobinMultiAgent,
    SometimesZeroAgentsMultiAgent,
)

TWO = {"p0": PolicySpec(), "p1": PolicySpec()}


def map_parity(agent_id: Any, episode: Any = None, worker: Any = None, **kwargs: Any) -> str:
    return f"p{int(agent_id) % 2}"


PEERS: dict[str, tuple[type[MultiAgentEnv], dict[str, Any]]] = {
    "round_robin": (RoundRobinMultiAgent, {"num_agents": 3, "increment_obs": True}),
    "flex_agents": (FlexAgentsMultiAgent, {}),
    "early_done": (EarlyDoneMultiAgent, {}),
    "sometimes_zero_agents": (SometimesZeroAgentsMultiAgent, {}),
}


def _ppo(env: type[MultiAgentEnv], env_config: dict[str, Any]) -> PPOConfig:
    return (
        PPOConfig()
        .environment(env, env_config=env_config)
        # (FlexAgents can strand an episode with no agent left to act: the horizon ends it.)
        .rollouts(num_workers=0, rollout_fragment_length=50, num_envs_per_worker=2, horizon=100)
        .training(
            train_batch_size=200,
            sgd_minibatch_size=50,
            num_sgd_iter=1,
            model={"fcnet_hiddens": [8]},
        )
        .multi_agent(policies=TWO, policy_mapping_fn=map_parity)
        .reporting(min_time_s_per_reporting=0)
        .debugging(seed=0)
    )


@pytest.mark.parametrize("name", sorted(PEERS))
def test_the_reference_peer_envs_sample_and_train(name: str) -> None:
    env, env_config = PEERS[name]
    algo = _ppo(env, env_config).build()
    try:
        worker = algo.workers.local_worker()
        batch = worker.sample()
        assert isinstance(batch, MultiAgentBatch) and batch.env_steps() == 100
        assert batch.agent_steps() > 0
        for policy_batch in batch.policy_batches.values():
            assert np.isfinite(policy_batch["advantages"]).all()
            assert np.isfinite(policy_batch["rewards"]).all()
        result = algo.train()
        assert result["num_env_steps_sampled"] >= 200
        assert result["num_faulty_episodes"] == 0
        learned = result["info"]["learner"]
        assert learned and all(
            np.isfinite(stats["learner_stats"]["total_loss"]) for stats in learned.values()
        )
    finally:
        algo.stop()


def test_round_robin_agents_get_the_rewards_of_their_turns() -> None:
    """Each agent's observation (and the reward of its last action, 100 a step) comes only when
    its turn comes again; its 5 actions make 5 rows of reward 100 except the last (the env gives
    a done agent 0), t being, as in RLlib, the index of the env step that closed the row: the
    one just before the agent's next turn."""
    algo = (
        _ppo(RoundRobinMultiAgent, {"num_agents": 3, "increment_obs": True})
        .rollouts(batch_mode="complete_episodes", rollout_fragment_length=1, num_envs_per_worker=1)
        .build()
    )
    try:
        worker = algo.workers.local_worker()
        batch = worker.sample()
        (episode,) = worker.get_metrics()
        assert episode.length == 3 * 5 + 3 - 1  # 5 turns each, then the done agents' turns
        # The 0 given to agents 1 and 2 with their first observation counts in the returns.
        assert episode.agent_rewards == {(0, "p0"): 400.0, (1, "p1"): 400.0, (2, "p0"): 400.0}
        for policy_batch in batch.policy_batches.values():
            by_agent = defaultdict(list)
            for k in range(len(policy_batch)):
                by_agent[int(policy_batch["agent_index"][k])].append(k)
            for index, rows in by_agent.items():
                assert policy_batch["rewards"][rows].tolist() == [100.0] * 4 + [0.0]
                # Agent i acts at env steps i, i + 3, ...; its next observation comes with
                # the step before its next turn.
                assert policy_batch["t"][rows].tolist() == [index + 2 + 3 * n for n in range(5)]
                assert policy_batch["terminateds"][rows].tolist() == [False] * 4 + [True]
    finally:
        algo.stop()


# ------------------------------------------------------------------ reward accumulation

A, B = "a", "b"
#: Env step -> (who acts at it, the obs after it, rewards, terminateds). ``a`` and ``b`` take
#: turns; ``b`` is rewarded before its first action; ``a`` is done at step 4 and rewarded
#: after that; ``b``'s last action waits two steps for its observation.
SCRIPT: dict[int, tuple[set[str], dict[str, int], dict[str, float], dict[str, bool]]] = {
    1: ({A}, {B: 1}, {A: 1.0, B: 10.0}, {}),
    2: ({B}, {A: 2}, {A: 2.0, B: 20.0}, {}),
    3: ({A}, {B: 3}, {A: 4.0, B: 40.0}, {}),
    4: ({B}, {A: 4}, {A: 8.0, B: 80.0}, {A: True}),
    5: (set(), {}, {A: 100.0, B: 160.0}, {}),
    6: (set(), {B: 6}, {B: 320.0}, {B: True, "__all__": True}),
}


class TurnScript(MultiAgentEnv):
    """Plays ``SCRIPT``; observations are the env step, as a 1-vector."""

    observation_space = gym.spaces.Box(0.0, 10.0, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, config: Mapping[str, Any] | None = None) -> None:
        self.possible_agents = [A, B]
        super().__init__(config)
        self.k = 0

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[Any, Any], dict[Any, Any]]:
        self.k = 0
        return {A: np.zeros(1, np.float32)}, {}

    def step(self, action_dict: dict[Any, Any]) -> Out:
        self.k += 1
        acting, obs, rewards, terms = SCRIPT[self.k]
        assert set(action_dict) == acting, (self.k, action_dict)
        terms = {"__all__": False, **terms}
        return (
            {agent: np.full(1, k, np.float32) for agent, k in obs.items()},
            dict(rewards),
            terms,
            {"__all__": False},
            {},
        )


def map_turn_script(agent_id: Any, episode: Any = None, worker: Any = None, **kw: Any) -> str:
    return "p0" if agent_id == A else "p1"


def test_rewards_add_up_into_the_transition_they_fall_in() -> None:
    config = (
        PGConfig()
        .environment(TurnScript)
        .rollouts(num_workers=0, rollout_fragment_length=6, batch_mode="complete_episodes")
        .training(model={"fcnet_hiddens": [4]})
        .multi_agent(policies=TWO, policy_mapping_fn=map_turn_script)
    )
    worker = RolloutWorker(
        env_creator=env_creator_for(TurnScript),
        config=config.freeze(),
        policy_class=PG.policy_class,
    )
    batch = worker.sample()
    (episode,) = worker.get_metrics()
    a, b = batch["p0"], batch["p1"]
    # a: acted at steps 1 and 3; 1+2 until its obs at step 2, 4+8 until done at step 4.
    assert a["rewards"].tolist() == [3.0, 12.0]
    assert a["obs"][:, 0].tolist() == [0.0, 2.0] and a["new_obs"][:, 0].tolist() == [2.0, 4.0]
    # t, as in RLlib: the index of the env step that closed the row (steps 2 and 4).
    assert a["terminateds"].tolist() == [False, True] and a["t"].tolist() == [1, 3]
    # b: its 10 came before its first action (returns only); 20+40, then 80+160+320 while its
    # last action waited for the observation of step 6.
    assert b["rewards"].tolist() == [60.0, 560.0]
    assert b["obs"][:, 0].tolist() == [1.0, 3.0] and b["new_obs"][:, 0].tolist() == [3.0, 6.0]
    assert b["terminateds"].tolist() == [False, True] and b["t"].tolist() == [2, 5]
    # The returns hold every reward: b's 10 before it acted, a's 100 after it was done.
    assert episode.agent_rewards == {(A, "p0"): 115.0, (B, "p1"): 630.0}
    assert (episode.length, episode.total_reward) == (6, 745.0)
    worker.stop()


# ------------------------------------------------------------------ mapping functions


def map_agent_only(agent_id: Any) -> str:
    return f"p{agent_id}"


def test_a_one_argument_mapping_fn_works_with_a_deprecation_warning() -> None:
    config = (
        PGConfig()
        .environment(make_multi_agent("CartPole-v1"), env_config={"num_agents": 2})
        .rollouts(num_workers=0, rollout_fragment_length=10)
        .training(model={"fcnet_hiddens": [4]})
        .multi_agent(policies=TWO, policy_mapping_fn=map_agent_only)
    )
    with pytest.warns(DeprecationWarning, match=r"fn\(agent_id, episode, worker, \*\*kwargs\)"):
        algo = config.build()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # checked once per function, not per agent
            batch = algo.workers.local_worker().sample()
        assert {pid: len(rows) for pid, rows in batch.policy_batches.items()} == {
            "p0": 10,
            "p1": 10,
        }
    finally:
        algo.stop()


def test_a_type_error_inside_a_full_mapping_fn_is_not_taken_for_the_old_form() -> None:
    def broken(agent_id: Any, episode: Any, worker: Any = None, **kwargs: Any) -> str:
        raise TypeError("inside the mapping function")

    env = make_multi_agent("CartPole-v1")({"num_agents": 2})
    worker = RolloutWorker(
        env_creator=lambda ctx: env,
        config=PGConfig()
        .rollouts(num_workers=0, rollout_fragment_length=5)
        .multi_agent(
            policies={
                "p0": PolicySpec(
                    observation_space=env.observation_space, action_space=env.action_space
                )
            },
            policy_mapping_fn=broken,
        )
        .freeze(),
        policy_class=PG.policy_class,
    )
    with pytest.raises(TypeError, match="inside the mapping function"):
        worker.sample()
    worker.stop()


# ------------------------------------------------------------------ space helpers


class Mixed(MultiAgentEnv):
    """Agent "img" observes a Box, agent "pos" a Discrete; both act with the shared space."""

    observation_spaces = {  # noqa: RUF012 (the API's class attribute)
        "img": gym.spaces.Box(0.0, 1.0, (2,), np.float32),
        "pos": gym.spaces.Discrete(3),
    }
    action_space = gym.spaces.Discrete(2)


def test_space_helpers_sample_and_check_per_agent_dicts() -> None:
    env = Mixed()
    obs = env.observation_space_sample()
    assert set(obs) == {"img", "pos"}
    assert env.observation_space_contains(obs)
    assert set(env.observation_space_sample(["pos"])) == {"pos"}
    assert env.observation_space_sample([]) == {}
    actions = env.action_space_sample(["img", "__all__"])
    assert set(actions) == {"img"} and env.action_space_contains(actions)
    assert set(env.action_space_sample()) == {"img", "pos"}
    # Any subset of the agents (a turn-based env's obs or actions hold only some).
    assert env.observation_space_contains({"pos": 2})
    assert not env.observation_space_contains({"pos": 3})
    assert not env.observation_space_contains({"img": np.full(2, 5.0, np.float32)})
    assert not env.action_space_contains({"img": 2})
    not_a_dict: Any = [0, 1]
    assert not env.action_space_contains(not_a_dict)
    with pytest.raises(MultiAgentEnvError, match=r"no observation space for agent 'ghost'"):
        env.observation_space_contains({"ghost": 0})


def test_sampling_without_agent_ids_needs_the_env_to_know_its_agents() -> None:
    env = FlexAgentsMultiAgent()  # agents come and go: none known in advance
    assert env.action_space_sample([7]) in ({7: 0}, {7: 1})
    with pytest.raises(MultiAgentEnvError) as info:
        env.action_space_sample()
    message = str(info.value)
    assert "'FlexAgentsMultiAgent': action_space_sample() without agent_ids" in message
    assert "pass agent_ids=[...] or set possible_agents" in message
