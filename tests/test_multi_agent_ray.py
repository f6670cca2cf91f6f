"""Multi-agent setups on Ray: remote rollout and evaluation workers with several policies, the
policy spaces of a driver without an env, add/remove policy on every worker, a recreated worker
catching up on the policies added since the start, and a multi-agent Tune trial. One Ray session
(2 CPUs) for the module.

Mapping functions and callbacks are module-level so that remote workers (and Tune's trial
actor) unpickle them by reference; the env class made by ``make_multi_agent`` travels by value.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import ray
from ray import tune

import runtime
from rlconf import PPOConfig
from runtime import PPO
from runtime.callbacks import DefaultCallbacks
from runtime.core.multi_agent_batch import MultiAgentBatch
from tests.ray_session import local_ray

#: The slow tier (`python -m pytest -m slow`): Ray sessions with remote actors, clusters and Tune.
pytestmark = pytest.mark.slow

MultiCartPole = runtime.make_multi_agent("CartPole-v1")
CARTPOLE = gym.make("CartPole-v1")
SPACES = (CARTPOLE.observation_space, CARTPOLE.action_space)


def agent_to_policy(agent_id: Any, *args: Any, **kwargs: Any) -> str:
    """Agent i acts with policy ``p<i>``."""
    return f"p{agent_id}"


def agent_1_to_added(agent_id: Any, *args: Any, **kwargs: Any) -> str:
    """Agent 0 keeps ``p0``; agent 1 acts with the policy ``added``."""
    return "p0" if agent_id == 0 else "added"


class PoliciesSampled(DefaultCallbacks):
    """Records on each worker the policies its sample() calls returned rows of."""

    def __init__(self) -> None:
        self.sampled: set[str] = set()

    def on_sample_end(self, *, worker: Any, samples: Any, **kwargs: Any) -> None:
        self.sampled.update(MultiAgentBatch.wrap(samples).policy_batches)


def _sampled(worker: Any) -> list[str]:
    return sorted(worker.callbacks.sampled)


def _policy_ids(worker: Any) -> list[str]:
    return sorted(worker.policy_map)


def _config() -> PPOConfig:
    """2-agent CartPole on 2 remote rollout workers and 1 remote evaluation worker (0.75 CPU
    in all, leaving room for the Tune trial); agent i -> p<i>, only p0 learns."""
    return (
        PPOConfig()
        .environment(MultiCartPole, env_config={"num_agents": 2})
        .rollouts(num_workers=2, rollout_fragment_length=25)
        .resources(num_cpus_per_worker=0.25, num_cpus_for_driver=0)
        .training(
            train_batch_size=100,
            sgd_minibatch_size=50,
            num_sgd_iter=1,
            model={"fcnet_hiddens": [8]},
        )
        .multi_agent(
            policies={"p0", "p1"}, policy_mapping_fn=agent_to_policy, policies_to_train=["p0"]
        )
        .evaluation(evaluation_interval=1, evaluation_num_workers=1, evaluation_duration=2)
        .fault_tolerance(recreate_failed_workers=True)
        .callbacks(PoliciesSampled)
        .debugging(seed=0)
    )


@pytest.fixture(scope="module", autouse=True)
def ray_session() -> Iterator[None]:
    with local_ray():
        yield


class Trained:
    """The module's algorithm, its initial weights and the results of its 2 iterations."""

    def __init__(self) -> None:
        self.algo: PPO = _config().build()
        self.initial = self.algo.get_weights()
        self.results = [self.algo.train(), self.algo.train()]


@pytest.fixture(scope="module")
def trained() -> Iterator[Trained]:
    state = Trained()
    try:
        yield state
    finally:
        state.algo.stop()


def _assert_same_weights(a: dict[str, Any], b: dict[str, Any]) -> None:
    assert a.keys() == b.keys()
    for name, value in a.items():
        np.testing.assert_array_equal(value, b[name], err_msg=name)


def _every_worker(algo: PPO, func: Any) -> list[Any]:
    """``func`` on the rollout workers (local first) and then on the evaluation workers."""
    assert algo.evaluation_workers is not None
    return algo.workers.foreach_worker(func) + algo.evaluation_workers.foreach_worker(func)


# ------------------------------------------------------------------ training


def test_two_remote_workers_sample_both_policies_and_get_the_trained_weights(
    trained: Trained,
) -> None:
    algo, last = trained.algo, trained.results[-1]
    assert last["training_iteration"] == 2 and last["num_healthy_workers"] == 2
    assert set(last["info"]["learner"]) == {"p0"}  # p1 does not learn
    assert set(last["policy_reward_mean"]) == {"p0", "p1"}
    assert algo.workers.foreach_worker(_policy_ids, local=False) == [["p0", "p1"]] * 2
    assert algo.workers.foreach_worker(_sampled, local=False) == [["p0", "p1"]] * 2
    local = algo.get_weights()
    # p0 learned and its new weights reached both remote workers; p1 kept its initial ones
    assert any(
        not np.array_equal(value, trained.initial["p0"][name])
        for name, value in local["p0"].items()
    )
    _assert_same_weights(local["p1"], trained.initial["p1"])
    for weights in algo.workers.foreach_worker(lambda w: w.get_weights(), local=False):
        _assert_same_weights(weights["p0"], local["p0"])
        _assert_same_weights(weights["p1"], local["p1"])


def test_the_driver_has_no_env_and_takes_the_spaces_from_a_remote_worker(
    trained: Trained,
) -> None:
    algo = trained.algo
    local = algo.workers.local_worker()
    assert local.envs == []
    assert local.policy_spaces == {"p0": SPACES, "p1": SPACES}
    # no spaces given and none in the driver: inferred by a remote worker's env
    algo.add_policy("inferred")
    try:
        assert local.policy_spaces["inferred"] == SPACES
        spaces = algo.workers.foreach_worker(lambda w: w.policy_spaces["inferred"], local=False)
        assert spaces == [SPACES, SPACES]
    finally:
        algo.remove_policy("inferred")


# ------------------------------------------------------------------ evaluation


def test_evaluation_reports_the_rewards_of_each_policy(trained: Trained) -> None:
    evaluation = trained.results[-1]["evaluation"]
    assert evaluation["episodes_this_iter"] == 2
    assert set(evaluation["policy_reward_mean"]) == {"p0", "p1"}
    assert trained.algo.evaluation_workers is not None
    assert trained.algo.evaluation_workers.foreach_worker(_policy_ids) == [["p0", "p1"]]


# ------------------------------------------------------------------ fault tolerance


def test_a_recreated_worker_gets_the_policies_added_since_the_start(trained: Trained) -> None:
    algo = trained.algo
    recreated_before = algo.workers.num_recreated
    algo.add_policy("late", policy_state=algo.get_policy("p0").get_state())
    try:
        ray.kill(algo.workers.remote_workers()[0], no_restart=True)
        result = algo.train()
        assert result["num_recreated_workers"] == recreated_before + 1
        assert algo.workers.num_healthy_workers() == 2
        assert algo.workers.foreach_worker(_policy_ids) == [["late", "p0", "p1"]] * 3
        local = algo.get_weights()
        for weights in algo.workers.foreach_worker(lambda w: w.get_weights(), local=False):
            for policy_id in ("late", "p0", "p1"):
                _assert_same_weights(weights[policy_id], local[policy_id])
        # the new worker samples with the current mapping: both policies in use
        assert algo.workers.foreach_worker(_sampled, local=False) == [["p0", "p1"]] * 2
    finally:
        algo.remove_policy("late")


def test_training_goes_on_when_every_remote_worker_was_recreated(trained: Trained) -> None:
    algo = trained.algo
    recreated_before = algo.workers.num_recreated
    for actor in algo.workers.remote_workers():
        ray.kill(actor, no_restart=True)
    try:
        result = algo.train()
    finally:
        # both are replaced (and get the policies) whether or not the iteration goes on
        assert algo.workers.num_recreated == recreated_before + 2
        assert algo.workers.foreach_worker(_policy_ids, local=False) == [["p0", "p1"]] * 2
    assert result["num_healthy_workers"] == 2


# ------------------------------------------------------------------ add / remove policy


def test_an_added_policy_reaches_every_worker_trains_and_is_removed_from_every_worker(
    trained: Trained,
) -> None:
    algo = trained.algo
    p1_state = algo.get_policy("p1").get_state()
    algo.add_policy(
        "added",
        policy_state=p1_state,
        policy_mapping_fn=agent_1_to_added,
        policies_to_train=["p0", "added"],
    )
    try:
        # 3 rollout workers (the local one first), 1 evaluation worker
        assert _every_worker(algo, _policy_ids) == [["added", "p0", "p1"]] * 4
        # it starts from p1's weights everywhere
        for weights in _every_worker(algo, lambda w: w.get_weights(["added"])):
            _assert_same_weights(weights["added"], p1_state["weights"])
        result = algo.train()
        assert set(result["info"]["learner"]) == {"p0", "added"}
        # (no training episode with "added" need have finished yet; evaluation runs new ones)
        assert set(result["evaluation"]["policy_reward_mean"]) == {"p0", "added"}
        # trained, and its new weights were sent to every worker
        local = algo.get_weights(["added"])["added"]
        assert any(not np.array_equal(v, p1_state["weights"][k]) for k, v in local.items())
        for weights in _every_worker(algo, lambda w: w.get_weights(["added"])):
            _assert_same_weights(weights["added"], local)
    finally:
        algo.remove_policy("added", policy_mapping_fn=agent_to_policy, policies_to_train=["p0"])
    assert _every_worker(algo, _policy_ids) == [["p0", "p1"]] * 4
    # evaluation starts new episodes: they map agent 1 to p1 again; training goes on
    assert set(algo.evaluate()["evaluation"]["policy_reward_mean"]) == {"p0", "p1"}
    assert set(algo.train()["info"]["learner"]) == {"p0"}


def to_p0(agent_id: Any, *args: Any, **kwargs: Any) -> str:
    return "p0"


def test_training_goes_on_after_removing_a_policy_that_running_episodes_use() -> None:
    algo = (
        PPOConfig()
        .environment(MultiCartPole, env_config={"num_agents": 2})
        .rollouts(num_workers=0, num_envs_per_worker=4, rollout_fragment_length=10)
        .training(train_batch_size=40, sgd_minibatch_size=20, num_sgd_iter=1)
        .multi_agent(policies={"p0", "p1"}, policy_mapping_fn=agent_to_policy)
        .debugging(seed=0)
        .build()
    )
    try:
        algo.train()
        runner = algo.workers.local_worker().runner
        assert runner is not None
        assert "p1" in runner._to_act  # some episode's agent 1 waits to act with p1
        algo.remove_policy("p1", policy_mapping_fn=to_p0)
        assert set(algo.train()["info"]["learner"]) == {"p0"}
    finally:
        algo.stop()


# ------------------------------------------------------------------ Tune


def test_a_multi_agent_tune_trial_reports_the_rewards_of_each_policy(tmp_path: Path) -> None:
    config = (
        PPOConfig()
        .environment(MultiCartPole, env_config={"num_agents": 2})
        .rollouts(num_workers=1, rollout_fragment_length=50)
        .resources(num_cpus_per_worker=0.5, num_cpus_for_driver=0.5)
        .training(
            train_batch_size=100,
            sgd_minibatch_size=50,
            num_sgd_iter=1,
            model={"fcnet_hiddens": [8]},
        )
        .multi_agent(policies={"p0", "p1"}, policy_mapping_fn=agent_to_policy)
        .debugging(seed=0)
    )
    tuner = tune.Tuner(
        PPO,
        param_space=config,  # type: ignore[arg-type]
        run_config=tune.RunConfig(
            storage_path=str(tmp_path), stop={"training_iteration": 1}, verbose=0
        ),
    )
    results = tuner.fit()
    assert len(results) == 1 and results.errors == []
    metrics = results[0].metrics or {}
    assert metrics["training_iteration"] == 1
    assert set(metrics["policy_reward_mean"]) == {"p0", "p1"}
    assert set(metrics["info"]["learner"]) == {"p0", "p1"}
