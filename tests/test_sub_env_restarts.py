"""``restart_failed_sub_environments``: a sub-env that raises in ``reset()`` or ``step()`` is
made again, the episode it was running is dropped (no rows, no ``on_episode_end``) and counted
in ``num_faulty_episodes``, and the worker goes on sampling; single-agent and multi-agent,
training and evaluation. Without it the exception propagates, with a note naming the sub-env."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterator
from typing import Any, Literal

import gymnasium as gym
import numpy as np
import pytest

from rlconf import PGConfig, PolicySpec, PPOConfig
from runtime import DefaultCallbacks, RolloutWorker, make_multi_agent
from runtime.algorithms.pg import PG
from runtime.algorithms.ppo import PPO

#: Sub-envs made so far, by (tag, worker index, vector index).
MADE: Counter[tuple[str, int, int]] = Counter()


class Crash(RuntimeError):
    pass


class CrashingCartPole(gym.Env[Any, Any]):
    """CartPole. Sub-env ``env_config["crash_env"]`` (default 1) of each worker, as first made,
    raises ``Crash``: at its ``crash_step``-th ``step()`` call, or (``crash_reset``) in its
    first ``reset()``; the sub-env made in its place does not."""

    def __init__(self, config: Any) -> None:
        self.inner = gym.make("CartPole-v1")
        self.observation_space = self.inner.observation_space
        self.action_space = self.inner.action_space
        key = (config.get("tag", ""), config.worker_index, config.vector_index)
        MADE[key] += 1
        crashes = MADE[key] == 1 and config.vector_index == config.get("crash_env", 1)
        self.crash_step = config.get("crash_step") if crashes else None
        self.crash_reset = crashes and bool(config.get("crash_reset"))
        self.steps = 0
        self.closed = False

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        if self.crash_reset:
            self.crash_reset = False
            raise Crash("reset went wrong")
        return self.inner.reset(seed=seed, options=options)

    def step(self, action: Any) -> Any:
        self.steps += 1
        if self.steps == self.crash_step:
            raise Crash(f"step {self.steps} went wrong")
        return self.inner.step(action)

    def close(self) -> None:
        self.closed = True


class Episodes(DefaultCallbacks):
    """Records the episodes each sub-env started and those that ended."""

    started: dict[int, list[int]]
    ended: set[int]

    def __init__(self) -> None:
        super().__init__()
        self.started = defaultdict(list)
        self.ended = set()

    def on_episode_start(self, *, episode: Any, env_index: int = 0, **kwargs: Any) -> None:
        self.started[env_index].append(episode.episode_id)

    def on_episode_end(self, *, episode: Any, **kwargs: Any) -> None:
        self.ended.add(episode.episode_id)


@pytest.fixture(autouse=True)
def _fresh_counts() -> Iterator[None]:
    MADE.clear()
    yield
    MADE.clear()


def _worker(
    *,
    restart_failed_sub_environments: bool,
    batch_mode: Literal["truncate_episodes", "complete_episodes"] = "truncate_episodes",
    **crash: Any,
) -> RolloutWorker:
    config = (
        PGConfig()
        .environment(CrashingCartPole, env_config=crash)
        .rollouts(
            num_workers=0,
            num_envs_per_worker=2,
            rollout_fragment_length=50,
            batch_mode=batch_mode,
        )
        .fault_tolerance(restart_failed_sub_environments=restart_failed_sub_environments)
        .training(model={"fcnet_hiddens": [4]})
        .callbacks(Episodes)
        .debugging(seed=0)
    )
    return RolloutWorker(
        env_creator=lambda ctx: CrashingCartPole(ctx),
        config=config.freeze(),
        policy_class=PG.policy_class,
    )


def test_a_sub_env_that_raises_in_step_is_made_again_and_its_episode_dropped() -> None:
    # (A CartPole episode lasts 8 steps or more: sub-env 1 fails in its first episode.)
    worker = _worker(restart_failed_sub_environments=True, crash_step=3)
    old = worker.envs[1]
    batch = worker.sample()
    callbacks = worker.callbacks
    assert isinstance(callbacks, Episodes)
    faulty = callbacks.started[1][0]
    # Sub-env 1's first episode (2 steps and the failed one) is not in the batch; the rest is.
    assert faulty not in batch["eps_id"] and faulty not in callbacks.ended
    assert int((batch["env_id"] == 0).sum()) == 50 and int((batch["env_id"] == 1).sum()) == 47
    assert batch["t"][batch["env_id"] == 1][0] == 0  # sub-env 1 went on with a new episode
    assert worker.envs[1] is not old and old.closed and worker.num_sub_env_restarts == 1
    assert worker.runner is not None and worker.runner.envs[1] is worker.envs[1]
    metrics = worker.get_metrics()
    assert sum(e.faulty for e in metrics) == 1
    assert all(e.length > 0 for e in metrics if not e.faulty)
    assert len(worker.sample()) == 100  # the new sub-env samples on
    assert worker.num_sub_env_restarts == 1
    worker.stop()


def test_a_sub_env_that_raises_in_reset_is_made_again() -> None:
    worker = _worker(restart_failed_sub_environments=True, crash_reset=True)
    assert len(worker.sample()) == 100
    (faulty,) = [e for e in worker.get_metrics() if e.faulty]
    assert (faulty.length, faulty.total_reward) == (0, 0.0)
    assert worker.num_sub_env_restarts == 1
    worker.stop()


@pytest.mark.parametrize(
    ("crash", "call"), [({"crash_step": 3}, "step()"), ({"crash_reset": True}, "reset()")]
)
def test_without_restarts_the_error_propagates_naming_the_sub_env(
    crash: dict[str, Any], call: str
) -> None:
    worker = _worker(restart_failed_sub_environments=False, **crash)
    with pytest.raises(Crash) as info:
        worker.sample()
    (note,) = info.value.__notes__
    assert f"sub-environment 1 (CrashingCartPole) of rollout worker 0 in {call}" in note
    assert "restart_failed_sub_environments=True" in note
    assert worker.num_sub_env_restarts == 0
    worker.stop()


def test_complete_episodes_keep_only_the_episodes_that_finished() -> None:
    worker = _worker(
        restart_failed_sub_environments=True, batch_mode="complete_episodes", crash_step=3
    )
    batch = worker.sample()
    callbacks = worker.callbacks
    assert isinstance(callbacks, Episodes)
    assert set(np.unique(batch["eps_id"]).tolist()) <= callbacks.ended
    assert callbacks.started[1][0] not in batch["eps_id"]
    assert len(batch) >= 100
    worker.stop()


def _ppo(**crash: Any) -> PPOConfig:
    return (
        PPOConfig()
        .environment(CrashingCartPole, env_config=crash)
        .rollouts(num_workers=0, num_envs_per_worker=2, rollout_fragment_length=50)
        .training(
            train_batch_size=100,
            sgd_minibatch_size=50,
            num_sgd_iter=1,
            model={"fcnet_hiddens": [8]},
        )
        .fault_tolerance(restart_failed_sub_environments=True)
        .reporting(min_time_s_per_reporting=0)
        .debugging(seed=0)
    )


def test_training_counts_the_faulty_episode_of_its_iteration() -> None:
    algo = _ppo(crash_step=3).build()
    try:
        first = algo.train()
        assert first["num_faulty_episodes"] == 1
        assert first["sampler_results"]["num_faulty_episodes"] == 1
        # The dropped rows are not sampled ones: 97 in the first round, so a second ran.
        assert first["num_env_steps_sampled"] == 97 + 100
        assert first["episodes_this_iter"] == first["episodes_total"] >= 1
        assert np.isfinite(first["episode_reward_mean"])
        second = algo.train()
        assert second["num_faulty_episodes"] == 0
        assert second["episodes_total"] == first["episodes_total"] + second["episodes_this_iter"]
    finally:
        algo.stop()


def test_evaluation_runs_its_episodes_past_a_failed_sub_env() -> None:
    config = _ppo().evaluation(
        evaluation_interval=1,
        evaluation_duration=4,
        evaluation_config={"env_config": {"tag": "eval", "crash_step": 3}},
    )
    algo = config.build()
    try:
        evaluation = algo.train()["evaluation"]
        assert evaluation["num_faulty_episodes"] == 1
        assert evaluation["episodes_this_iter"] == 4  # the faulty one is not one of them
        assert len(evaluation["hist_stats"]["episode_lengths"]) == 4
    finally:
        algo.stop()


# ------------------------------------------------------------------ multi-agent

MultiAgentCrashingCartPole = make_multi_agent(lambda ctx: CrashingCartPole(ctx))


def map_by_index(agent_id: Any, episode: Any = None, worker: Any = None, **kwargs: Any) -> str:
    return f"p{agent_id}"


def _ma_worker(restart: bool, **crash: Any) -> RolloutWorker:
    env_config = {"num_agents": 2, **crash}
    config = (
        PPOConfig()
        .environment(MultiAgentCrashingCartPole, env_config=env_config)
        .rollouts(num_workers=0, num_envs_per_worker=2, rollout_fragment_length=40)
        .training(model={"fcnet_hiddens": [4]})
        .multi_agent(
            policies={"p0": PolicySpec(), "p1": PolicySpec()}, policy_mapping_fn=map_by_index
        )
        .fault_tolerance(restart_failed_sub_environments=restart)
        .callbacks(Episodes)
        .debugging(seed=0)
    )
    return RolloutWorker(
        env_creator=lambda ctx: MultiAgentCrashingCartPole(ctx),
        config=config.freeze(),
        policy_class=PPO.policy_class,
    )


def test_a_multi_agent_sub_env_that_raises_is_made_again_and_its_episode_dropped() -> None:
    # Agent 0's CartPole in multi-agent sub-env 1 raises at its 3rd step.
    worker = _ma_worker(True, crash_step=3)
    old = worker.envs[1]
    batch = worker.sample()
    callbacks = worker.callbacks
    assert isinstance(callbacks, Episodes)
    faulty = callbacks.started[1][0]
    assert faulty not in callbacks.ended
    for policy_batch in batch.policy_batches.values():
        # Its agents' 2 transitions closed before the failed step are gone; sub-env 1 went on
        # with a new episode (at most 37 steps left of the 40: agents that are done wait).
        assert faulty not in policy_batch["eps_id"]
        from_env_1 = policy_batch["env_id"] == 1
        assert 0 < int(from_env_1.sum()) <= 37 and policy_batch["t"][from_env_1][0] == 0
        assert np.isfinite(policy_batch["advantages"]).all()
    assert worker.envs[1] is not old and worker.num_sub_env_restarts == 1
    assert sum(e.faulty for e in worker.get_metrics()) == 1
    assert batch.env_steps() == 80
    assert worker.sample().env_steps() == 80
    worker.stop()


def test_a_multi_agent_sub_env_that_raises_in_reset_is_made_again() -> None:
    worker = _ma_worker(True, crash_reset=True)
    assert worker.sample().env_steps() == 80
    assert sum(e.faulty for e in worker.get_metrics()) == 1
    worker.stop()


def test_without_restarts_a_multi_agent_sub_env_error_propagates() -> None:
    worker = _ma_worker(False, crash_step=3)
    with pytest.raises(Crash) as info:
        worker.sample()
    (note,) = info.value.__notes__
    assert "sub-environment 1 (MultiAgentLambda) of rollout worker 0 in step()" in note
    worker.stop()


def test_multi_agent_evaluation_runs_its_episodes_past_a_failed_sub_env() -> None:
    config = (
        PPOConfig()
        .environment(MultiAgentCrashingCartPole, env_config={"num_agents": 2})
        .rollouts(num_workers=0, rollout_fragment_length=20)
        .training(
            train_batch_size=40, sgd_minibatch_size=20, num_sgd_iter=1, model={"fcnet_hiddens": [4]}
        )
        .multi_agent(
            policies={"p0": PolicySpec(), "p1": PolicySpec()}, policy_mapping_fn=map_by_index
        )
        .evaluation(
            evaluation_interval=1,
            evaluation_duration=3,
            evaluation_config={
                "env_config": {"num_agents": 2, "tag": "eval", "crash_step": 3, "crash_env": 0}
            },
        )
        .fault_tolerance(restart_failed_sub_environments=True)
        .reporting(min_time_s_per_reporting=0)
    )
    algo = config.build()
    try:
        evaluation = algo.train()["evaluation"]
        assert evaluation["num_faulty_episodes"] == 1
        assert evaluation["episodes_this_iter"] == 3
    finally:
        algo.stop()
