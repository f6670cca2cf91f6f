"""``ExternalEnv`` / ``ExternalMultiAgentEnv`` and ``ExternalEnvSampler``: the reference's
semantics (a reward goes to the previous action, rewards add up until the next, none logged is
0.0), the rows the sampler makes (raw, in the policy's coordinates, episodes contiguous), cuts,
``training_enabled=False``, dropped idle episodes and the refusals."""

from __future__ import annotations

import threading
import time
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from rlconf import PPOConfig
from rlconf.policy_spec import PolicySpec
from runtime.algorithms.ppo import PPO
from runtime.core.multi_agent_batch import MultiAgentBatch
from runtime.core.sample_batch import SampleBatch
from runtime.env.external_env import (
    EpisodeConflictError,
    EpisodeError,
    ExternalEnv,
    ExternalEnvClosed,
    ExternalEnvSampler,
    ExternalMultiAgentEnv,
    TooManyEpisodesError,
    UnknownEpisodeError,
)
from runtime.env.rollout_worker import RolloutWorker

OBS = gym.spaces.Box(-10.0, 10.0, (3,), np.float32)
DISCRETE = gym.spaces.Discrete(3)
BOX = gym.spaces.Box(np.array([0.0, -4.0], np.float32), np.array([2.0, 4.0], np.float32))


class Driven(ExternalEnv):
    """Driven by the test's own calls: ``run()`` has nothing to do."""

    def run(self) -> None:
        return None


class DrivenMulti(ExternalMultiAgentEnv):
    def run(self) -> None:
        return None


def make_worker(action_space: gym.Space[Any] = DISCRETE, **rollouts: Any) -> RolloutWorker:
    config = (
        PPOConfig()
        .environment(None, observation_space=OBS, action_space=action_space)
        .rollouts(num_workers=0, **rollouts)
        .training(model={"fcnet_hiddens": [8]})
        .debugging(seed=0)
    )
    return RolloutWorker(env_creator=None, config=config.freeze(), policy_class=PPO.policy_class)


def make_sampler(
    fragment: int = 1000, action_space: gym.Space[Any] = DISCRETE, **kwargs: Any
) -> tuple[Driven, ExternalEnvSampler]:
    rollouts = {k: kwargs.pop(k) for k in ("batch_mode",) if k in kwargs}
    worker = make_worker(action_space, **rollouts)
    env = Driven(action_space, OBS, max_concurrent=kwargs.pop("max_concurrent", 100))
    return env, ExternalEnvSampler(env, worker, fragment, **kwargs)


def rows_of(batch: object) -> SampleBatch:
    """A single-agent batch (typed as one)."""
    assert isinstance(batch, SampleBatch), batch
    return batch


def obs(value: float) -> np.ndarray:
    return np.full(3, value, dtype=np.float32)


def test_rewards_go_to_the_previous_action_and_add_up_until_the_next() -> None:
    env, sampler = make_sampler()
    eid = env.start_episode()
    env.log_returns(eid, 100.0)  # before the first action: in the return only
    first = env.get_action(eid, obs(0))
    assert DISCRETE.contains(first)
    env.log_returns(eid, 1.0)
    env.log_returns(eid, 2.0)
    env.get_action(eid, obs(1))
    env.get_action(eid, obs(2))  # no reward logged: 0.0
    env.log_returns(eid, 5.0, {"note": "last"})
    env.end_episode(eid, obs(3))
    batch = rows_of(sampler.flush())
    assert batch["rewards"].tolist() == [3.0, 0.0, 5.0]
    assert batch["rewards"].dtype == np.float32
    assert batch["obs"][:, 0].tolist() == [0.0, 1.0, 2.0]
    assert batch["new_obs"][:, 0].tolist() == [1.0, 2.0, 3.0]
    assert batch["terminateds"].tolist() == [False, False, True]
    assert batch["truncateds"].tolist() == [False, False, False]
    assert batch["t"].tolist() == [0, 1, 2]
    assert len(set(batch["eps_id"].tolist())) == 1 and batch["eps_id"].dtype == np.int64
    assert {"action_logp", "action_dist_inputs", "vf_preds"} <= {name for name, _ in batch.items()}
    assert "infos" not in batch
    (metrics,) = sampler.pop_metrics()
    assert (metrics.length, metrics.total_reward, metrics.faulty) == (3, 108.0, False)


def test_rows_match_what_the_policy_computes() -> None:
    env, sampler = make_sampler()
    policy = sampler.policy("default_policy")
    eid = env.start_episode()
    env.get_action(eid, obs(0.5))
    env.end_episode(eid, obs(1))
    batch = rows_of(sampler.flush())
    # The observation was preprocessed (flattened) and filtered; the extras are the policy's.
    expected = policy.compute_log_likelihoods(batch["actions"], batch["obs"])
    np.testing.assert_allclose(batch["action_logp"], expected, rtol=1e-5)
    np.testing.assert_allclose(
        batch["vf_preds"], policy.compute_values(batch["obs"]), rtol=1e-5, atol=1e-6
    )


def test_log_action_records_the_given_action_with_its_likelihood() -> None:
    env, sampler = make_sampler()
    policy = sampler.policy("default_policy")
    eid = env.start_episode()
    assert env.log_action(eid, obs(0), 2) is None  # type: ignore[func-returns-value]
    env.log_returns(eid, 1.5)
    env.log_action(eid, obs(1), 0)
    env.end_episode(eid, obs(2))
    batch = rows_of(sampler.flush())
    assert batch["actions"].tolist() == [2, 0]
    assert batch["rewards"].tolist() == [1.5, 0.0]
    expected = policy.compute_log_likelihoods(np.array([2, 0]), batch["obs"])
    np.testing.assert_allclose(batch["action_logp"], expected, rtol=1e-5)


def test_box_actions_go_out_in_the_env_space_and_are_recorded_in_the_policy_space() -> None:
    env, sampler = make_sampler(action_space=BOX)
    eid = env.start_episode()
    actions = [env.get_action(eid, obs(i / 10)) for i in range(20)]
    env.log_action(eid, obs(2.0), np.array([2.0, 0.0], np.float32))  # env coordinates
    env.end_episode(eid, obs(2.1))
    batch = rows_of(sampler.flush())
    for action in actions:
        assert BOX.contains(np.asarray(action, np.float32))
    # normalize_actions (on by default): recorded in [-1, 1] coordinates, unsquashed on the way
    # out; the logged action is mapped back into them.
    recorded = batch["actions"]
    low, high = BOX.low, BOX.high
    unsquashed = low + (np.clip(recorded[:20], -1, 1) + 1) * 0.5 * (high - low)
    np.testing.assert_allclose(unsquashed, np.stack(actions), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(recorded[20], [1.0, 0.0], atol=1e-6)


def test_episodes_without_training_report_metrics_but_no_rows() -> None:
    env, sampler = make_sampler()
    eid = env.start_episode(training_enabled=False)
    env.get_action(eid, obs(0))
    env.log_returns(eid, 4.0)
    env.end_episode(eid, obs(1))
    assert sampler.flush() is None
    (metrics,) = sampler.pop_metrics()
    assert (metrics.length, metrics.total_reward) == (1, 4.0)


def test_a_running_episode_is_cut_at_the_fragment_and_goes_on() -> None:
    env, sampler = make_sampler(fragment=4)
    eid = env.start_episode()
    for i in range(6):
        env.get_action(eid, obs(i))
        env.log_returns(eid, float(i))
    first = rows_of(sampler.next())  # 5 closed rows >= 4: cut
    assert first["t"].tolist() == [0, 1, 2, 3, 4]
    assert first["terminateds"].tolist() == [False] * 5
    # The cut segment's last row leads to the observation the next segment's row starts from.
    assert first["new_obs"][-1, 0] == 5.0
    env.end_episode(eid, obs(6))
    second = rows_of(sampler.flush())
    assert second["t"].tolist() == [5] and second["obs"][0, 0] == 5.0
    assert second["rewards"].tolist() == [5.0] and second["terminateds"].tolist() == [True]
    assert second["eps_id"][0] == first["eps_id"][0]


def test_complete_episodes_waits_for_finished_episodes() -> None:
    env, sampler = make_sampler(fragment=2, batch_mode="complete_episodes")
    running = env.start_episode()
    for i in range(5):
        env.get_action(running, obs(i))
    assert sampler.poll(0.05) is None  # 4 closed rows, but the episode still runs
    done = env.start_episode()
    env.get_action(done, obs(0))
    env.get_action(done, obs(1))
    env.end_episode(done, obs(2))
    batch = rows_of(sampler.poll(1.0))
    assert len(batch) == 2
    assert set(batch["eps_id"].tolist()) == {batch["eps_id"][0]}


def test_concurrent_episodes_give_contiguous_time_ordered_rows() -> None:
    env, sampler = make_sampler(fragment=10_000)
    lengths = {}

    def play(k: int) -> None:
        eid = env.start_episode(f"ep-{k}")
        for _ in range(10 + k):
            env.get_action(eid, obs(k))
            env.log_returns(eid, float(k))
        env.end_episode(eid, obs(k))
        lengths[float(k)] = 10 + k

    threads = [threading.Thread(target=play, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    batch = rows_of(sampler.flush())
    assert len(batch) == sum(lengths.values())
    ids = batch["eps_id"]
    starts = np.flatnonzero(np.concatenate([[True], ids[1:] != ids[:-1]]))
    assert len(starts) == 6  # each episode one run of rows
    for start, end in zip(starts, [*starts[1:], len(ids)], strict=True):
        rows = batch[int(start) : int(end)]
        assert rows["t"].tolist() == list(range(end - start))
        k = float(rows["obs"][0, 0])
        assert len(rows) == lengths[k] and set(rows["rewards"].tolist()) == {k}
        assert rows["terminateds"].tolist() == [False] * (len(rows) - 1) + [True]


def test_refusals_name_the_episode_and_leave_it_usable() -> None:
    env, sampler = make_sampler(max_concurrent=2)
    eid = env.start_episode("a")
    with pytest.raises(EpisodeConflictError, match="already started"):
        env.start_episode("a")
    with pytest.raises(UnknownEpisodeError, match="'nope' is not running"):
        env.get_action("nope", obs(0))
    with pytest.raises(EpisodeError, match=r"observation of episode 'a'.* is not in Box"):
        env.get_action(eid, np.full(3, 99.0, np.float32))
    with pytest.raises(EpisodeError, match="not in Discrete"):
        env.log_action(eid, obs(0), 7)
    with pytest.raises(EpisodeError, match="not finite"):
        env.log_returns(eid, float("nan"))
    env.start_episode("b")
    with pytest.raises(TooManyEpisodesError, match="max_concurrent=2"):
        env.start_episode("c")
    # A call in flight holds the episode: another call of it is refused.
    sampler._claim(eid)
    with pytest.raises(EpisodeConflictError, match="in flight"):
        env.log_returns(eid, 1.0)
    sampler._release(eid_episode := sampler._episodes[eid])
    assert not eid_episode.busy
    env.get_action(eid, obs(0))
    env.end_episode(eid, obs(1))
    with pytest.raises(UnknownEpisodeError, match="already completed"):
        env.get_action(eid, obs(0))
    with pytest.raises(EpisodeConflictError, match="already completed"):
        env.start_episode("a")
    batch = rows_of(sampler.flush())
    assert len(batch) == 1


def test_an_idle_episode_is_dropped_and_the_others_keep_their_rows() -> None:
    env, sampler = make_sampler(fragment=1000, episode_timeout=0.3)
    gone = env.start_episode("vanished")
    env.get_action(gone, obs(1))
    env.get_action(gone, obs(1))
    kept = env.start_episode("kept")
    deadline = time.monotonic() + 0.6
    while time.monotonic() < deadline:
        env.get_action(kept, obs(2))
        time.sleep(0.02)
    env.end_episode(kept, obs(2))
    batch = rows_of(sampler.poll(0.0, partial=True))
    assert set(batch["obs"][:, 0].tolist()) == {2.0}
    metrics = sampler.pop_metrics()
    assert sorted(m.faulty for m in metrics) == [False, True]
    with pytest.raises(UnknownEpisodeError, match="dropped after"):
        env.get_action(gone, obs(1))


def test_reward_clipping_applies_to_rows_not_to_returns() -> None:
    worker = make_worker()
    config = worker.config.copy().environment(clip_rewards=1.0).freeze()
    worker = RolloutWorker(env_creator=None, config=config, policy_class=PPO.policy_class)
    env = Driven(DISCRETE, OBS)
    sampler = ExternalEnvSampler(env, worker, 100)
    eid = env.start_episode()
    env.get_action(eid, obs(0))
    env.log_returns(eid, 7.0)
    env.end_episode(eid, obs(1))
    batch = rows_of(sampler.flush())
    assert batch["rewards"].tolist() == [1.0]
    assert sampler.pop_metrics()[0].total_reward == 7.0


def test_run_loop_is_started_by_the_sampler_and_ended_by_close() -> None:
    errors: list[BaseException] = []

    class Loop(ExternalEnv):
        def run(self) -> None:
            try:
                while True:
                    eid = self.start_episode()
                    for i in range(5):
                        self.get_action(eid, obs(i))
                        self.log_returns(eid, 1.0)
                    self.end_episode(eid, obs(5))
            except ExternalEnvClosed as error:
                errors.append(error)

    env = Loop(DISCRETE, OBS)
    sampler = ExternalEnvSampler(env, make_worker(), 12)
    batch = rows_of(sampler.next())
    assert len(batch) >= 12 and set(batch["rewards"].tolist()) == {1.0}
    sampler.close()
    env.join(10)
    assert not env.is_alive() and len(errors) == 1
    with pytest.raises(ExternalEnvClosed):
        sampler.next()


def test_memory_models_are_refused() -> None:
    config = (
        PPOConfig()
        .environment(None, observation_space=OBS, action_space=DISCRETE)
        .rollouts(num_workers=0)
        .training(model={"fcnet_hiddens": [8], "use_lstm": True, "lstm_cell_size": 8})
    )
    worker = RolloutWorker(env_creator=None, config=config.freeze(), policy_class=PPO.policy_class)
    with pytest.raises(ValueError, match="memory"):
        ExternalEnvSampler(Driven(DISCRETE, OBS), worker, 10)


# ---------------------------------------------------------------------- multi-agent


def map_agents(agent_id: Any, episode: Any, worker: Any = None, **kwargs: Any) -> str:
    return "p0" if agent_id == "a" else "p1"


def multi_agent_sampler(fragment: int = 1000) -> tuple[DrivenMulti, ExternalEnvSampler]:
    spaces = (OBS, DISCRETE)
    config = (
        PPOConfig()
        .environment(None, observation_space=OBS, action_space=DISCRETE)
        .rollouts(num_workers=0)
        .training(model={"fcnet_hiddens": [8]})
        .multi_agent(
            policies={"p0": PolicySpec(None, *spaces), "p1": PolicySpec(None, *spaces)},
            policy_mapping_fn=map_agents,
        )
    )
    worker = RolloutWorker(
        env_creator=None,
        config=config.freeze(),
        policy_class=PPO.policy_class,
        policy_spaces={"p0": spaces, "p1": spaces},
    )
    env = DrivenMulti(DISCRETE, OBS)
    return env, ExternalEnvSampler(env, worker, fragment)


def test_multi_agent_rewards_and_dones_per_agent() -> None:
    env, sampler = multi_agent_sampler()
    eid = env.start_episode()
    env.log_returns(eid, {"b": 10.0})  # before b acts: its return only
    actions = env.get_action(eid, {"a": obs(0), "b": obs(1)})
    assert set(actions) == {"a", "b"} and all(DISCRETE.contains(v) for v in actions.values())
    env.log_returns(eid, {"a": 1.0, "b": 2.0})
    env.log_returns(eid, {"a": 1.0})
    assert set(env.get_action(eid, {"a": obs(2)})) == {"a"}  # only a acts now
    env.log_returns(eid, {"a": 4.0, "b": 8.0}, multiagent_done_dict={"a": True})
    assert set(env.get_action(eid, {"a": obs(3), "b": obs(4)})) == {"b"}  # a is done
    env.log_returns(eid, {"b": 16.0})
    env.end_episode(eid, {"b": obs(5)})
    batch = sampler.flush()
    assert isinstance(batch, MultiAgentBatch)
    a, b = batch["p0"], batch["p1"]
    assert a["rewards"].tolist() == [2.0, 4.0]
    assert a["terminateds"].tolist() == [False, True]
    assert a["obs"][:, 0].tolist() == [0.0, 2.0] and a["new_obs"][:, 0].tolist() == [2.0, 3.0]
    assert b["rewards"].tolist() == [10.0, 16.0]
    assert b["obs"][:, 0].tolist() == [1.0, 4.0] and b["new_obs"][:, 0].tolist() == [4.0, 5.0]
    assert b["terminateds"].tolist() == [False, True]
    assert a["t"].tolist() == [0, 1] and b["t"].tolist() == [0, 1]
    assert set(a["agent_index"].tolist()) != set(b["agent_index"].tolist())
    (metrics,) = sampler.pop_metrics()
    assert metrics.agent_rewards == {("a", "p0"): 6.0, ("b", "p1"): 36.0}
    assert (metrics.length, metrics.total_reward) == (3, 42.0)


def test_multi_agent_observations_are_checked_in_their_policy_space() -> None:
    env, _ = multi_agent_sampler()
    eid = env.start_episode()
    with pytest.raises(EpisodeError, match="agent 'b'"):
        env.get_action(eid, {"a": obs(0), "b": np.zeros(2, np.float32)})
    with pytest.raises(EpisodeError, match="dict keyed by agent id"):
        env.get_action(eid, obs(0))
    assert set(env.get_action(eid, {"a": obs(0)})) == {"a"}


class _ExternalCartPole(ExternalEnv):
    """CartPole driven by its own loop, as an application would drive it."""

    def __init__(self, config: Any = None) -> None:
        self.env = gym.make("CartPole-v1")
        super().__init__(self.env.action_space, self.env.observation_space)

    def run(self) -> None:
        while True:
            episode_id = self.start_episode()
            obs, _ = self.env.reset(seed=0)
            done = False
            while not done:
                action = self.get_action(episode_id, obs)
                obs, reward, terminated, truncated, _ = self.env.step(action)
                self.log_returns(episode_id, float(reward))
                done = terminated or truncated
            self.end_episode(episode_id, obs)


def test_an_algorithm_trains_on_an_external_env_it_is_given() -> None:
    algo = (
        PPOConfig()
        .environment(_ExternalCartPole)
        .rollouts(num_workers=0, rollout_fragment_length=100)
        .training(train_batch_size=400, sgd_minibatch_size=100, num_sgd_iter=2)
        .debugging(seed=0)
        .build()
    )
    try:
        worker = algo.workers.local_worker()
        assert worker.external_env is not None and len(worker.envs) == 1
        results = [algo.train() for _ in range(2)]
    finally:
        algo.stop()
    assert results[-1]["timesteps_total"] >= 800
    assert results[-1]["episodes_total"] > 0
    assert results[-1]["info"]["num_env_steps_trained"] >= 800
