"""Multi-agent training in the driver (num_workers=0): what the sampler puts in each policy's
batch (agents joining late and leaving early, turn-based rewards, fragments and complete
episodes), step counting by env or agent steps, policies_to_train, per-policy config
overrides, observation_fn, env checking, the config cross checks, every algorithm, results,
evaluation and callbacks. No Ray is started here. Adding and removing policies, the policy
map's cache, checkpoints and acting are in ``test_multi_agent_api.py``."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any, ClassVar, Literal

import gymnasium as gym
import numpy as np
import pytest
import torch

from rlconf import (
    A2CConfig,
    AlgorithmConfig,
    ConfigError,
    DQNConfig,
    PGConfig,
    PolicySpec,
    PPOConfig,
)
from runtime import DefaultCallbacks, make_multi_agent
from runtime.core.multi_agent_batch import MultiAgentBatch
from runtime.core.sample_batch import SampleBatch
from runtime.env.episode import MultiAgentEpisode
from runtime.env.multi_agent_checks import MultiAgentEnvError
from runtime.env.multi_agent_runner import FULLY_CHECKED_STEPS
from tests.multi_agent_envs import (
    AGENT_NUMBER,
    SCRIPT,
    SCRIPT_LENGTH,
    MalformedEnv,
    ScriptedEnv,
    TurnEnv,
    map_by_index,
    map_malformed,
    map_scripted,
    map_turns,
    obs_of,
    scripted_reward,
    train_only_p0,
)

MultiAgentCartPole = make_multi_agent("CartPole-v1")
TWO = {"p0": PolicySpec(), "p1": PolicySpec()}
NUMBER_AGENT = {1: "a", 2: "b", 3: "c", 4: "d"}


def _ppo(
    env: Any = MultiAgentCartPole,
    *,
    env_config: dict[str, Any] | None = None,
    policies: Any = None,
    mapping: Any = map_by_index,
    fragment: int = 25,
    batch: int = 100,
    **multi: Any,
) -> PPOConfig:
    """A small PPO; CartPole copies with 2 agents -> p0, p1 by default."""
    return (
        PPOConfig()
        .environment(env, env_config={"num_agents": 2} if env_config is None else env_config)
        .rollouts(num_workers=0, rollout_fragment_length=fragment)
        .training(
            train_batch_size=batch,
            sgd_minibatch_size=min(batch, 50),
            num_sgd_iter=1,
            model={"fcnet_hiddens": [8]},
        )
        .multi_agent(
            policies=TWO if policies is None else policies, policy_mapping_fn=mapping, **multi
        )
        .debugging(seed=0)
    )


def _trajectories(batch: SampleBatch) -> dict[tuple[int, int], SampleBatch]:
    """The rows of each (episode, agent) in a policy batch."""
    keys = list(zip(batch["eps_id"].tolist(), batch["agent_index"].tolist(), strict=True))
    out = {}
    for key in dict.fromkeys(keys):
        index = np.flatnonzero([k == key for k in keys])
        assert np.all(np.diff(index) == 1), f"trajectory {key} is not contiguous"
        out[key] = batch[int(index[0]) : int(index[-1]) + 1]
    return out


def _scripted_sample(num: int = 3, **settings: Any) -> tuple[Any, list[MultiAgentBatch]]:
    """``num`` fragments of ``ScriptedEnv`` (``a`` -> p0, the others -> p1)."""
    env_config = {"truncate_at_end": settings.pop("truncate_at_end", False)}
    config = _ppo(ScriptedEnv, env_config=env_config, mapping=map_scripted).rollouts(**settings)
    algo = config.build()
    worker = algo.workers.local_worker()
    return algo, [worker.sample() for _ in range(num)]


def _scripted_rows(batches: list[MultiAgentBatch]) -> dict[str, Counter[tuple[Any, ...]]]:
    """Each agent's rows as (obs time, new_obs time, reward, terminated, truncated, policy)."""
    rows: dict[str, Counter[tuple[Any, ...]]] = {agent: Counter() for agent in SCRIPT}
    for batch in batches:
        for pid, b in batch.policy_batches.items():
            for i in range(len(b)):
                agent = NUMBER_AGENT[int(b["obs"][i, 0])]
                assert int(b["new_obs"][i, 0]) == AGENT_NUMBER[agent]
                key = (
                    int(b["obs"][i, 1]),
                    int(b["new_obs"][i, 1]),
                    round(float(b["rewards"][i]), 4),
                    bool(b["terminateds"][i]),
                    bool(b["truncateds"][i]),
                    pid,
                )
                rows[agent][key] += 1
    return rows


# ------------------------------------------------------------------- sampling


@pytest.mark.parametrize("truncate_at_end", [False, True], ids=["terminated", "truncated"])
def test_agents_joining_late_and_leaving_early_give_exactly_their_rows(
    truncate_at_end: bool,
) -> None:
    # 2 sub-envs x 4 steps a fragment; 3 fragments = 12 steps per sub-env = 2 whole episodes
    # each; every transition closes by the end of an episode.
    algo, batches = _scripted_sample(
        batch_mode="truncate_episodes",
        rollout_fragment_length=4,
        num_envs_per_worker=2,
        truncate_at_end=truncate_at_end,
    )
    try:
        assert [b.env_steps() for b in batches] == [8, 8, 8]
        for batch in batches:
            assert set(batch.policy_batches) == {"p0", "p1"}
            assert batch.agent_steps() == sum(len(b) for b in batch.policy_batches.values())
        joined = MultiAgentBatch.concat_samples(batches)
        assert joined.env_steps() == 24
        assert joined.agent_steps() == 4 * 16
        rows = ScriptedEnv().expected_rows()
        assert len(joined["p0"]) == 4 * rows["a"]
        assert len(joined["p1"]) == 4 * (rows["b"] + rows["c"] + rows["d"])
        for agent, (join, leave) in SCRIPT.items():
            last = min(leave, SCRIPT_LENGTH)
            ends_episode = last == SCRIPT_LENGTH
            expected: Counter[tuple[Any, ...]] = Counter()
            for t in range(join, last):
                done = t + 1 == last
                # The last row: the agent left (terminated) or the episode ended (as the env says).
                truncated = done and ends_episode and truncate_at_end
                terminated = done and not truncated
                pid = "p0" if agent == "a" else "p1"
                reward = round(scripted_reward(agent, t), 4)
                expected[(t, t + 1, reward, terminated, truncated, pid)] = 4  # 4 episodes
            assert _scripted_rows(batches)[agent] == expected, agent
    finally:
        algo.stop()


def test_turn_based_rewards_are_summed_between_an_agents_turns() -> None:
    config = _ppo(TurnEnv, env_config={}, mapping=map_turns, fragment=6)
    algo = config.build()
    try:
        batch = algo.workers.local_worker().sample()  # one whole episode: 6 env steps
        expected = TurnEnv.expected_rewards(6)
        assert batch.env_steps() == 6 and batch.agent_steps() == 6
        x, y = batch["p0"], batch["p1"]
        x_order, y_order = np.argsort(x["obs"][:, 1]), np.argsort(y["obs"][:, 1])
        np.testing.assert_allclose(x["rewards"][x_order], expected["x"])  # [3, 7, 11]
        np.testing.assert_allclose(y["rewards"][y_order], expected["y"])  # [500, 900, 600]
        np.testing.assert_array_equal(x["obs"][x_order, 1], [0, 2, 4])
        np.testing.assert_array_equal(x["new_obs"][x_order, 1], [2, 4, 6])
        np.testing.assert_array_equal(y["obs"][y_order, 1], [1, 3, 5])
        np.testing.assert_array_equal(y["new_obs"][y_order, 1], [3, 5, 6])
        assert x["terminateds"][x_order].tolist() == [False, False, True]
        assert y["terminateds"][y_order].tolist() == [False, False, True]
    finally:
        algo.stop()


def test_the_horizon_ends_the_episode_and_truncates_the_agents_still_in_it() -> None:
    # Episodes cut after 4 env steps: c left at 3 and d at 4 (terminated by the env); a and b
    # are still in at 4: their last rows are truncated.
    algo, batches = _scripted_sample(2, horizon=4, rollout_fragment_length=4, num_envs_per_worker=1)
    try:
        assert [b.env_steps() for b in batches] == [4, 4]
        assert [b.agent_steps() for b in batches] == [12, 12]
        rows = _scripted_rows(batches)
        assert {agent: sum(c.values()) for agent, c in rows.items()} == {
            "a": 8,
            "b": 4,
            "c": 6,
            "d": 6,
        }
        last = {agent: max(c) for agent, c in rows.items()}  # the row with the latest obs
        assert last["a"][:2] == (3, 4) and last["a"][3:5] == (False, True)
        assert last["b"][:2] == (3, 4) and last["b"][3:5] == (False, True)
        assert last["c"][:2] == (2, 3) and last["c"][3:5] == (True, False)
        assert last["d"][:2] == (3, 4) and last["d"][3:5] == (True, False)
    finally:
        algo.stop()


def test_a_soft_horizon_starts_the_next_episode_on_the_running_env() -> None:
    # Episodes cut every 2 env steps without a reset: the env's clock goes on to its own end
    # at 6 (terminated), and the rows at the cuts are truncated (they bootstrap).
    algo, batches = _scripted_sample(
        1, horizon=2, soft_horizon=True, rollout_fragment_length=6, num_envs_per_worker=1
    )
    try:
        (batch,) = batches
        assert batch.env_steps() == 6
        episodes = algo.workers.local_worker().get_metrics()
        assert [e.length for e in episodes] == [2, 2, 2]
        a = batch["p0"]
        order = np.argsort(a["obs"][:, 1])
        assert a["obs"][order, 1].tolist() == [0, 1, 2, 3, 4, 5]
        assert a["new_obs"][order, 1].tolist() == [1, 2, 3, 4, 5, 6]
        assert a["truncateds"][order].tolist() == [False, True, False, True, False, False]
        assert a["terminateds"][order].tolist() == [False] * 5 + [True]
        eps = a["eps_id"][order]
        assert eps[0] == eps[1] != eps[2] == eps[3] != eps[4] == eps[5]
        # b joins at 2, as a new episode begins: it acts from then on, in the running env.
        rows = _scripted_rows(batches)
        assert sorted(k[:2] for k in rows["b"]) == [(2, 3), (3, 4), (4, 5), (5, 6)]
    finally:
        algo.stop()


@pytest.mark.parametrize("batch_mode", ["truncate_episodes", "complete_episodes"])
def test_cartpole_copies_count_agent_and_env_steps(
    batch_mode: Literal["truncate_episodes", "complete_episodes"],
) -> None:
    config = _ppo(fragment=30).rollouts(batch_mode=batch_mode, num_envs_per_worker=2)
    algo = config.build()
    try:
        worker = algo.workers.local_worker()
        for _ in range(3):
            batch = worker.sample()
            episodes = worker.get_metrics()
            assert batch.agent_steps() == len(batch["p0"]) + len(batch["p1"])
            assert batch.env_steps() <= batch.agent_steps() <= 2 * batch.env_steps()
            for policy_batch in batch.policy_batches.values():
                assert policy_batch["obs"].shape[1:] == (4,)
                assert (policy_batch["rewards"] == 1).all()
            if batch_mode == "truncate_episodes":
                assert batch.env_steps() == 30 * 2
            else:
                assert batch.env_steps() == sum(e.length for e in episodes) >= 30 * 2
    finally:
        algo.stop()


def test_complete_episodes_hold_each_agents_whole_trajectory() -> None:
    algo, batches = _scripted_sample(
        batch_mode="complete_episodes", rollout_fragment_length=6, num_envs_per_worker=1
    )
    try:
        expected = ScriptedEnv().expected_rows()  # a: 6, b: 4, c: 3, d: 3
        for batch in batches:  # one episode each
            assert batch.env_steps() == 6
            assert len(batch["p0"]) == expected["a"]
            assert len(batch["p1"]) == expected["b"] + expected["c"] + expected["d"]
            for policy_batch in batch.policy_batches.values():
                assert len(set(policy_batch["eps_id"].tolist())) == 1
                for rows in _trajectories(policy_batch).values():
                    agent = NUMBER_AGENT[int(rows["obs"][0, 0])]
                    join, leave = SCRIPT[agent]
                    times = np.arange(join, min(leave, SCRIPT_LENGTH))
                    # RLlib's t: the env step that closed each transition.
                    np.testing.assert_array_equal(rows["t"], times)
                    np.testing.assert_array_equal(
                        rows["obs"], [obs_of(agent, int(t)) for t in times]
                    )
                    np.testing.assert_array_equal(rows["new_obs"][:-1], rows["obs"][1:])
                    assert rows["terminateds"].tolist() == [False] * (len(rows) - 1) + [True]
    finally:
        algo.stop()


def test_cartpole_copies_trajectories_end_in_their_own_episode() -> None:
    config = _ppo(fragment=30).rollouts(batch_mode="complete_episodes")
    algo = config.build()
    try:
        worker = algo.workers.local_worker()
        batch = worker.sample()
        episodes = worker.get_metrics()
        for pid, agent in (("p0", 0), ("p1", 1)):
            # CartPole's reward is 1 a step: an agent's reward sum is its number of rows.
            assert len(batch[pid]) == sum(e.agent_rewards[(agent, pid)] for e in episodes)
            for rows in _trajectories(batch[pid]).values():
                np.testing.assert_array_equal(rows["t"], np.arange(len(rows)))
                np.testing.assert_array_equal(rows["new_obs"][:-1], rows["obs"][1:])
                assert not (rows["terminateds"][:-1] | rows["truncateds"][:-1]).any()
                assert rows["terminateds"][-1] or rows["truncateds"][-1]
    finally:
        algo.stop()


# ------------------------------------------------------------------- counting steps


@pytest.mark.parametrize("count_steps_by", ["env_steps", "agent_steps"])
def test_count_steps_by(count_steps_by: str) -> None:
    n = 100
    algo = _ppo(fragment=10, batch=n, count_steps_by=count_steps_by).build()
    try:
        result = algo.train()
        env_steps = result["num_env_steps_sampled"]
        agent_steps = result["num_agent_steps_sampled"]
        assert result["agent_timesteps_total"] == agent_steps
        if count_steps_by == "env_steps":
            assert n <= env_steps < n + 10
            assert n < agent_steps <= 2 * env_steps
            assert result["timesteps_total"] == env_steps
        else:
            assert n <= agent_steps < n + 2 * 10
            assert n / 2 <= env_steps < n
            assert result["timesteps_total"] == agent_steps
    finally:
        algo.stop()


# ------------------------------------------------------------------- policies to train


def _module_tensors(algo: Any, pid: str) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in algo.get_policy(pid).module.state_dict().items()}


@pytest.mark.parametrize("to_train", [["p0"], train_only_p0], ids=["list", "function"])
def test_policies_not_to_train_keep_their_weights_bit_for_bit(to_train: Any) -> None:
    algo = _ppo(policies_to_train=to_train).build()
    try:
        p0, p1 = _module_tensors(algo, "p0"), _module_tensors(algo, "p1")
        for _ in range(3):
            result = algo.train()
            assert set(result["info"]["learner"]) == {"p0"}
        for name, tensor in _module_tensors(algo, "p1").items():
            assert torch.equal(tensor, p1[name]), name
        assert any(not torch.equal(t, p0[k]) for k, t in _module_tensors(algo, "p0").items())
        # p1 still acts: its agents have episodes.
        assert set(result["policy_reward_mean"]) == {"p0", "p1"}
    finally:
        algo.stop()


# ------------------------------------------------------------------- errors and cross checks


def _map_agent_1_to_nope(agent_id: Any, episode: Any = None, **kwargs: Any) -> str:
    return "p0" if agent_id == 0 else "nope"


def test_mapping_to_an_unknown_policy_names_the_agent_and_the_id() -> None:
    with pytest.raises(ValueError, match=r"agent 1 to policy 'nope'") as info:
        algo = _ppo(mapping=_map_agent_1_to_nope).build()
        try:
            algo.train()
        finally:
            algo.stop()
    assert "'p0'" in str(info.value) and "'p1'" in str(info.value)


def test_policies_to_train_naming_a_non_policy_fails_at_validate() -> None:
    config = _ppo(policies_to_train=["p0", "px"])
    with pytest.raises(ConfigError, match="px"):
        config.validate()


def test_spaces_that_cant_be_inferred_fail_at_build_naming_the_policy() -> None:
    config = _ppo(
        ScriptedEnv,
        env_config={"per_agent_spaces": "distinct"},
        mapping=map_scripted,
        policies={"p0": PolicySpec(), "p1": PolicySpec(), "lonely": PolicySpec()},
    )
    with pytest.raises(ValueError, match=r"policy 'lonely'.*can't be inferred"):
        config.build()


def test_a_policy_no_agent_maps_to_builds_when_its_spaces_are_given() -> None:
    spec = PolicySpec(
        observation_space=gym.spaces.Box(-1, 1, (5,)), action_space=gym.spaces.Discrete(3)
    )
    config = _ppo(
        ScriptedEnv,
        env_config={"per_agent_spaces": True},
        mapping=map_scripted,
        policies={"p0": PolicySpec(), "p1": PolicySpec(), "lonely": spec},
    )
    algo = config.build()
    try:
        assert algo.get_policy("lonely").action_space == gym.spaces.Discrete(3)
        algo.train()
    finally:
        algo.stop()


# ------------------------------------------------------------------- per-policy config


def test_policy_spec_config_overrides_that_policys_learning_rate() -> None:
    algo = _ppo(policies={"p0": PolicySpec(config={"lr": 1e-3}), "p1": PolicySpec()}).build()
    try:
        default_lr = PPOConfig()["lr"]
        assert default_lr != 1e-3
        assert algo.get_policy("p0").learner.cur_lr == pytest.approx(1e-3)
        assert algo.get_policy("p1").learner.cur_lr == pytest.approx(default_lr)
        learner = algo.train()["info"]["learner"]
        assert learner["p0"]["learner_stats"]["cur_lr"] == pytest.approx(1e-3)
        assert learner["p1"]["learner_stats"]["cur_lr"] == pytest.approx(default_lr)
    finally:
        algo.stop()


def test_policy_spec_config_overrides_that_policys_postprocessing() -> None:
    # gamma 0 and lambda 1: the value targets are the rewards, for p1 only.
    p1 = PolicySpec(config={"gamma": 0.0, "lambda": 1.0})
    algo = _ppo(policies={"p0": PolicySpec(), "p1": p1}).build()
    try:
        batch = algo.workers.local_worker().sample()
        np.testing.assert_allclose(batch["p1"]["value_targets"], batch["p1"]["rewards"])
        assert not np.allclose(batch["p0"]["value_targets"], batch["p0"]["rewards"])
    finally:
        algo.stop()


def test_unknown_key_in_a_policy_spec_config_is_refused_at_multi_agent() -> None:
    with pytest.raises(ConfigError, match="lrr"):
        PPOConfig().multi_agent(
            policies={"p0": PolicySpec(config={"lrr": 1e-3})}, policy_mapping_fn=map_by_index
        )


# ------------------------------------------------------------------- observation_fn, checks


def add_seven(agent_obs: dict[Any, Any], **kwargs: Any) -> dict[Any, Any]:
    """observation_fn: every observation gets a third entry, 7."""
    return {a: np.append(o, np.float32(7.0)) for a, o in agent_obs.items()}


def test_observation_fn_changes_what_the_policies_see() -> None:
    three = gym.spaces.Box(0.0, 100.0, (3,), np.float32)
    spec = PolicySpec(observation_space=three)
    config = _ppo(
        ScriptedEnv,
        env_config={},
        mapping=map_scripted,
        policies={"p0": spec, "p1": spec},
        observation_fn=add_seven,
    ).rollouts(batch_mode="complete_episodes", rollout_fragment_length=6)
    algo = config.build()
    try:
        batch = algo.workers.local_worker().sample()
        for policy_batch in batch.policy_batches.values():
            assert policy_batch["obs"].shape[1:] == (3,)
            assert (policy_batch["obs"][:, 2] == 7).all()
            assert (policy_batch["new_obs"][:, 2] == 7).all()
        algo.train()
    finally:
        algo.stop()


@pytest.mark.parametrize("disable", [True, False])
def test_disable_env_checking_lets_an_obs_outside_its_space_through(disable: bool) -> None:
    config = _ppo(
        MalformedEnv,
        env_config={"mistake": "obs_outside", "at_step": 2},
        mapping=map_malformed,
        fragment=5,
    ).environment(disable_env_checking=disable)
    algo = config.build()
    try:
        worker = algo.workers.local_worker()
        if disable:
            batch = worker.sample()
            assert [50.0, 500.0] in batch["p1"]["obs"].tolist()
        else:
            with pytest.raises(ValueError, match=r"obs\['agent_1'\].*outside"):
                worker.sample()
    finally:
        algo.stop()


@pytest.mark.parametrize(
    ("mistake", "message"),
    [
        ("no_all_in_terminateds", r"terminateds without the key '__all__'"),
        ("no_all_in_truncateds", r"truncateds without the key '__all__'"),
        ("obs_outside", r"obs\['agent_1'\].*outside the agent's observation space"),
    ],
)
def test_a_malformed_env_fails_training_naming_the_agent_and_the_key(
    mistake: str, message: str
) -> None:
    config = _ppo(MalformedEnv, env_config={"mistake": mistake}, mapping=map_malformed)
    algo = config.build()
    try:
        with pytest.raises(ValueError, match=message) as info:
            algo.train()
        assert "MalformedEnv" in str(info.value)
    finally:
        algo.stop()


@pytest.mark.parametrize("late", [False, True])
def test_observations_are_checked_in_each_sub_env_s_first_steps(late: bool) -> None:
    # The full checks cost more than the rest of a step; later steps are not checked against
    # the observation spaces.
    at_step = FULLY_CHECKED_STEPS + 1 if late else FULLY_CHECKED_STEPS
    env_config = {"mistake": "obs_outside", "at_step": at_step, "length": 1000}
    algo = _ppo(MalformedEnv, env_config=env_config, mapping=map_malformed, fragment=60).build()
    try:
        worker = algo.workers.local_worker()
        if late:
            rows = [worker.sample()["p1"]["obs"].tolist() for _ in range(2)]
            assert [50.0, 500.0] in rows[0] + rows[1]
        else:
            worker.sample()
            with pytest.raises(MultiAgentEnvError, match=r"obs\['agent_1'\].*outside"):
                worker.sample()
    finally:
        algo.stop()


@pytest.mark.parametrize("mistake", ["no_all_in_terminateds", "no_all_in_truncateds"])
def test_a_missing_all_is_an_error_after_the_fully_checked_steps(mistake: str) -> None:
    env_config = {"mistake": mistake, "at_step": FULLY_CHECKED_STEPS + 5, "length": 1000}
    algo = _ppo(MalformedEnv, env_config=env_config, mapping=map_malformed, fragment=60).build()
    try:
        worker = algo.workers.local_worker()
        worker.sample()
        with pytest.raises(MultiAgentEnvError, match=r"without the key '__all__'"):
            worker.sample()
    finally:
        algo.stop()


def test_the_malformed_env_without_a_mistake_trains() -> None:
    algo = _ppo(MalformedEnv, env_config={}, mapping=map_malformed).build()
    try:
        result = algo.train()
        assert set(result["info"]["learner"]) == {"p0", "p1"}
    finally:
        algo.stop()


# ------------------------------------------------------------------- every algorithm


def _small(config: AlgorithmConfig) -> AlgorithmConfig:
    return (
        config.environment(MultiAgentCartPole, env_config={"num_agents": 2})
        .rollouts(num_workers=0, rollout_fragment_length=25)
        .multi_agent(policies=TWO, policy_mapping_fn=map_by_index)
        .reporting(min_time_s_per_reporting=0)  # A2C's default is 10 s an iteration
        .debugging(seed=0)
    )


@pytest.mark.parametrize(
    "config",
    [
        PGConfig().training(train_batch_size=100, model={"fcnet_hiddens": [8]}),
        A2CConfig().training(train_batch_size=100, model={"fcnet_hiddens": [8]}),
        DQNConfig().training(
            train_batch_size=16,
            num_steps_sampled_before_learning_starts=50,
            model={"fcnet_hiddens": [8]},
            hiddens=[8],
        ),
    ],
    ids=["PG", "A2C", "DQN"],
)
def test_every_algorithm_trains_two_policies(config: AlgorithmConfig) -> None:
    algo = _small(config).build()
    try:
        for _ in range(3):
            result = algo.train()
        learner = result["info"]["learner"]
        assert set(learner) == {"p0", "p1"}
        for pid in ("p0", "p1"):
            assert "learner_stats" in learner[pid]
        assert set(result["policy_reward_mean"]) == {"p0", "p1"}
        if isinstance(config, DQNConfig):
            assert set(algo.replay_buffers) == {"p0", "p1"}
            assert all(len(buffer) > 0 for buffer in algo.replay_buffers.values())
    finally:
        algo.stop()


# ------------------------------------------------------------------- results


def test_results_have_per_policy_rewards_and_agent_steps() -> None:
    algo = _ppo().reporting(metrics_num_episodes_for_smoothing=1000).build()
    try:
        result = algo.train()
        for key in ("policy_reward_mean", "policy_reward_min", "policy_reward_max"):
            assert set(result[key]) == {"p0", "p1"}
        for pid in ("p0", "p1"):
            assert (
                result["policy_reward_min"][pid]
                <= result["policy_reward_mean"][pid]
                <= result["policy_reward_max"][pid]
            )
            assert len(result["hist_stats"][f"policy_{pid}_reward"]) == result["episodes_this_iter"]
            assert "learner_stats" in result["info"]["learner"][pid]
        # CartPole: an agent's reward is its episode length; an episode lasts as long as its
        # longer-lived agent.
        assert result["episode_reward_mean"] == pytest.approx(
            result["policy_reward_mean"]["p0"] + result["policy_reward_mean"]["p1"]
        )
        assert result["agent_timesteps_total"] == result["num_agent_steps_sampled"]
        assert result["agent_timesteps_total"] > result["timesteps_total"]
    finally:
        algo.stop()


def test_a_single_agent_run_reports_no_policy_rewards() -> None:
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .rollouts(num_workers=0, rollout_fragment_length=50)
        .training(train_batch_size=100, sgd_minibatch_size=50, num_sgd_iter=1)
        .debugging(seed=0)
    )
    algo = config.build()
    try:
        result = algo.train()
        assert result["policy_reward_mean"] == {}
        assert result["policy_reward_min"] == {} and result["policy_reward_max"] == {}
        assert set(result["info"]["learner"]) == {"default_policy"}
        assert result["agent_timesteps_total"] == result["timesteps_total"]
    finally:
        algo.stop()


# ------------------------------------------------------------------- evaluation


def test_evaluation_on_the_local_worker_runs_exactly_the_episodes_asked_for() -> None:
    config = _ppo().evaluation(
        evaluation_interval=1, evaluation_duration=4, evaluation_num_workers=0
    )
    algo = config.build()
    try:
        for _ in range(2):
            evaluation = algo.train()["evaluation"]
            assert evaluation["episodes_this_iter"] == 4
            assert len(evaluation["hist_stats"]["episode_reward"]) == 4
            assert set(evaluation["policy_reward_mean"]) == {"p0", "p1"}
            assert len(evaluation["hist_stats"]["policy_p0_reward"]) == 4
    finally:
        algo.stop()


# ------------------------------------------------------------------- callbacks


class EpisodeRecorder(DefaultCallbacks):
    """Records what the multi-agent episode hooks receive."""

    seen: ClassVar[list[tuple[str, Any]]] = []

    def on_episode_start(self, *, episode: Any, **kwargs: Any) -> None:
        EpisodeRecorder.seen.append(("start", type(episode)))

    def on_episode_step(self, *, episode: Any, **kwargs: Any) -> None:
        EpisodeRecorder.seen.append(("step", type(episode)))

    def on_episode_end(self, *, episode: Any, **kwargs: Any) -> None:
        agents = {a: episode.policy_for(a) for a in episode.get_agents()}
        EpisodeRecorder.seen.append(("end", (agents, dict(episode.agent_rewards))))

    def on_postprocess_trajectory(
        self, *, agent_id: Any, policy_id: str, postprocessed_batch: Any, **kwargs: Any
    ) -> None:
        rows = postprocessed_batch
        EpisodeRecorder.seen.append(("trajectory", (agent_id, policy_id, len(rows), rows["obs"])))


def test_callbacks_see_multi_agent_episodes_and_each_agents_trajectory() -> None:
    EpisodeRecorder.seen.clear()
    config = (
        _ppo(ScriptedEnv, env_config={}, mapping=map_scripted, fragment=6)
        .rollouts(batch_mode="complete_episodes")
        .callbacks(EpisodeRecorder)
    )
    algo = config.build()
    try:
        EpisodeRecorder.seen.clear()
        algo.workers.local_worker().sample()
        seen = EpisodeRecorder.seen
        kinds = Counter(kind for kind, _ in seen)
        assert kinds["step"] == 6 and kinds["end"] == 1
        assert {value for kind, value in seen if kind in ("start", "step")} == {MultiAgentEpisode}
        ((agents, rewards),) = [value for kind, value in seen if kind == "end"]
        assert agents == {"a": "p0", "b": "p1", "c": "p1", "d": "p1"}
        for agent, (join, leave) in SCRIPT.items():
            total = sum(scripted_reward(agent, t) for t in range(join, min(leave, 6)))
            assert rewards[(agent, agents[agent])] == pytest.approx(total)
        trajectories = [v for kind, v in seen if kind == "trajectory"]
        assert {agent for agent, *_ in trajectories} == set(SCRIPT)
        rows = ScriptedEnv().expected_rows()
        for agent, policy_id, length, obs in trajectories:
            assert policy_id == agents[agent]
            assert (obs[:, 0] == AGENT_NUMBER[agent]).all()
            if agent in ("c", "d"):  # they left before the end
                assert length == rows[agent]
    finally:
        algo.stop()


def test_mapping_errors_name_the_agent_even_at_reset() -> None:
    with pytest.raises(ValueError, match=re.escape("agent 1 to policy 'nope'")):
        algo = _ppo(mapping=_map_agent_1_to_nope).build()
        try:
            algo.workers.local_worker().sample()
        finally:
            algo.stop()


# ------------------------------------------------------------------ single-agent envs


class _FarResetCartPole(gym.Wrapper[Any, Any, Any, Any]):
    """CartPole whose reset puts the cart far outside the observation space's bounds."""

    def __init__(self, config: Any = None) -> None:
        super().__init__(gym.make("CartPole-v1"))

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        obs, info = self.env.reset(**kwargs)
        obs[0] = 100.0
        return obs, info


def _single_agent(env: Any, **environment: Any) -> PPOConfig:
    return (
        PPOConfig()
        .environment(env, **environment)
        .rollouts(num_workers=0, rollout_fragment_length=10)
        .training(train_batch_size=20, sgd_minibatch_size=10, num_sgd_iter=1)
    )


def test_a_single_agent_reset_observation_outside_its_space_is_an_error_unless_disabled() -> None:
    checked = _single_agent(_FarResetCartPole).build()
    try:
        with pytest.raises(ValueError, match=r"reset\(\) returned obs.*outside"):
            checked.workers.local_worker().sample()
    finally:
        checked.stop()
    algo = _single_agent(_FarResetCartPole, disable_env_checking=True).build()
    try:
        batch = algo.workers.local_worker().sample()
        assert batch["obs"][0][0] == 100.0
    finally:
        algo.stop()


@pytest.mark.parametrize("key", ["policy_mapping_fn", "observation_fn"])
def test_multi_agent_functions_are_refused_for_a_single_agent_env(key: str) -> None:
    config = _single_agent("CartPole-v1")
    if key == "policy_mapping_fn":
        config.multi_agent(policy_mapping_fn=map_by_index)
    else:
        config.multi_agent(observation_fn=map_by_index)
    with pytest.raises(ConfigError, match=rf"multiagent\.{key}.*single-agent env"):
        config.build()
