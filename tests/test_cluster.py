"""A Ray cluster of several nodes, simulated on this machine with ``ray.cluster_utils.Cluster``
(a head and two worker nodes of 2 logical CPUs each): where the placement strategies put the
rollout workers, plans no node can hold refused at build, training through the loss of a node,
and a Tune sweep over the nodes. One cluster for the module; a test that removes a worker node
starts a new one afterwards, so every test finds three."""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import gymnasium as gym
import numpy as np
import pytest
import ray
from ray import tune
from ray._common.utils import reset_ray_address
from ray.cluster_utils import Cluster

from rlconf import PPOConfig
from rlconf.sweep import grid_search
from runtime import PPO, DefaultCallbacks, register_env
from runtime.cluster import placement
from runtime.cluster.placement import ResourceError, check_plan_fits
from runtime.cluster.resources import resource_plan
from runtime.env.worker_set import WorkerFailure
from tests.envs import RecreationCallbacks

#: The slow tier (`python -m pytest -m slow`): Ray sessions with remote actors, clusters and Tune.
pytestmark = pytest.mark.slow

NODE_CPUS = 2
NUM_NODES = 3
Strategy = Literal["PACK", "SPREAD", "STRICT_PACK", "STRICT_SPREAD"]


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    cluster = Cluster()
    try:
        cluster.add_node(num_cpus=NODE_CPUS, include_dashboard=False)  # the head
        # The head wrote its address where a plain ray.init() on this machine looks for a
        # running cluster: other processes (tests run beside this one) must not join it.
        reset_ray_address()
        for _ in range(NUM_NODES - 1):
            cluster.add_node(num_cpus=NODE_CPUS)
        cluster.wait_for_nodes()
        ray.init(
            address=cluster.address,
            logging_level=logging.ERROR,
        )
        yield cluster
    finally:
        ray.shutdown()
        cluster.shutdown()  # type: ignore[no-untyped-call]


@pytest.fixture(autouse=True)
def idle(cluster: Cluster) -> None:
    """Wait until the CPUs of an earlier test's actors show as free again: Ray places bundles
    by its view of the free resources, which lags a moment behind stopped actors."""
    deadline = time.monotonic() + 30
    while True:
        total = ray.cluster_resources().get("CPU", 0.0)  # type: ignore[no-untyped-call]
        free = ray.available_resources().get("CPU", 0.0)  # type: ignore[no-untyped-call]
        if free >= total:
            return
        if time.monotonic() > deadline:
            pytest.fail(f"the cluster's CPUs are still in use: {free:g} of {total:g} free")
        time.sleep(0.1)


def _config(num_workers: int, strategy: Strategy = "PACK") -> PPOConfig:
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .rollouts(num_workers=num_workers, num_envs_per_worker=1, rollout_fragment_length=50)
        # 1 CPU per worker on nodes of 2: where the workers land is up to the strategy.
        .resources(num_cpus_per_worker=1, num_cpus_for_driver=0, placement_strategy=strategy)
        .training(
            train_batch_size=200,
            sgd_minibatch_size=100,
            num_sgd_iter=1,
            model={"fcnet_hiddens": [16]},
        )
        .debugging(seed=0)
    )


def _node_id(_worker: Any = None) -> str:
    return str(ray.get_runtime_context().get_node_id())


def _worker_nodes(algo: PPO) -> list[str]:
    return algo.workers.foreach_worker(_node_id, local=False)


def _alive_nodes() -> set[str]:
    return {node["NodeID"] for node in ray.nodes() if node["Alive"]}  # type: ignore[no-untyped-call]


def _assert_finite(result: dict[str, Any]) -> None:
    stats = result["info"]["learner"]["default_policy"]["learner_stats"]
    values = {"episode_reward_mean": result["episode_reward_mean"], **stats}
    assert all(math.isfinite(float(v)) for v in values.values()), values


# ---------------------------------------------------------------------- placement strategies


@pytest.mark.parametrize(
    ("strategy", "num_workers", "num_nodes"),
    [("SPREAD", 3, 3), ("STRICT_PACK", 2, 1)],
)
def test_the_placement_strategy_decides_the_nodes_of_the_rollout_workers(
    cluster: Cluster, strategy: Strategy, num_workers: int, num_nodes: int
) -> None:
    algo = _config(num_workers, strategy).build()
    try:
        nodes = _worker_nodes(algo)
        assert len(nodes) == num_workers
        assert len(set(nodes)) == num_nodes
        assert set(nodes) <= _alive_nodes()
        _assert_finite(algo.train())
    finally:
        algo.stop()


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (
            # 3 CPUs in all (the cluster has 6), but STRICT_PACK wants them on one node.
            _config(3, "STRICT_PACK"),
            r"STRICT_PACK puts all 3 bundles \(3 rollout worker\(s\) x \{CPU: 1\} = "
            r"\{CPU: 3\}\) on one node, but the nodes have 3 nodes x \{CPU: 2\}",
        ),
        (
            # 4 bundles on 3 nodes, although the CPUs would do.
            _config(4, "STRICT_SPREAD"),
            r"STRICT_SPREAD puts each of the 4 bundles .* on a node of its own, but the alive "
            r"nodes can hold only 3 that way; the nodes have 3 nodes x \{CPU: 2\}",
        ),
        (
            # Under any strategy: a bundle is never split over nodes.
            _config(1, "SPREAD").resources(num_cpus_per_worker=3),
            r"no alive node can hold the rollout worker 1's bundle \{CPU: 3\} .*the nodes have "
            r"3 nodes x \{CPU: 2\}",
        ),
    ],
    ids=["strict-pack-larger-than-a-node", "strict-spread-more-bundles-than-nodes", "bundle"],
)
def test_a_plan_no_node_can_hold_is_refused_at_build(
    cluster: Cluster, config: PPOConfig, message: str
) -> None:
    groups = len(ray.util.placement_group_table())
    # Refused up front: the timeout's message ("waited 30 s") would mean it was waited for.
    with pytest.raises(ResourceError, match=message) as error:
        config.resources(placement_timeout_s=30).build()
    assert "waited" not in str(error.value)
    assert len(ray.util.placement_group_table()) == groups  # nothing was reserved


def test_check_plan_fits_counts_the_driver_bundle_of_a_tune_trial(cluster: Cluster) -> None:
    # Driver {CPU: 1} + 2 workers x {CPU: 1}: fits the totals, and one bundle per node.
    three = resource_plan(_config(2, "STRICT_SPREAD").resources(num_cpus_for_driver=1))
    check_plan_fits(three, "PPO", driver=True)
    check_plan_fits(resource_plan(_config(2, "STRICT_PACK")), "PPO", driver=False)
    with pytest.raises(ResourceError, match=r"driver \{CPU: 1\} \+ 2 rollout worker"):
        check_plan_fits(
            resource_plan(_config(2, "STRICT_PACK").resources(num_cpus_for_driver=1)),
            "PPO",
            driver=True,
        )
    with pytest.raises(ResourceError, match=r"CPU 7 \(cluster total 6\).*num_cpus_for_driver"):
        check_plan_fits(
            resource_plan(_config(3).resources(num_cpus_for_driver=4)), "PPO", driver=True
        )
    with pytest.raises(ResourceError, match=r"the driver's bundle \{CPU: 3\}"):
        check_plan_fits(
            resource_plan(_config(1).resources(num_cpus_for_driver=3)), "PPO", driver=True
        )


def test_strict_spread_gives_each_bundle_a_node_that_holds_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    nodes = [{"CPU": 2.0}, {"CPU": 1.0}, {"CPU": 1.0}]
    monkeypatch.setattr(placement, "alive_node_resources", lambda: nodes)
    # Driver {CPU: 2} on the large node, a worker {CPU: 1} on each of the others.
    check_plan_fits(
        resource_plan(_config(2, "STRICT_SPREAD").resources(num_cpus_for_driver=2)),
        "PPO",
        driver=True,
    )
    # Three bundles for three nodes and 4 CPUs in all, but only one node holds {CPU: 1.5}.
    uneven = _config(2, "STRICT_SPREAD").resources(num_cpus_for_driver=1, num_cpus_per_worker=1.5)
    with pytest.raises(
        ResourceError,
        match=r"STRICT_SPREAD puts each of the 3 bundles \(driver \{CPU: 1\} \+ 2 rollout "
        r"worker\(s\) x \{CPU: 1.5\} = \{CPU: 4\}\) on a node of its own, but the alive nodes "
        r"can hold only 2 that way; the nodes have 2 nodes x \{CPU: 1\}, 1 node x \{CPU: 2\}",
    ):
        check_plan_fits(resource_plan(uneven), "PPO", driver=True)


# ---------------------------------------------------------------------- losing a node


@pytest.fixture
def nodes_made_up(cluster: Cluster) -> Iterator[None]:
    """For a test that removes worker nodes: new ones take their places afterwards, so the
    later tests find the three nodes again."""
    yield
    while len(cluster.worker_nodes) < NUM_NODES - 1:
        cluster.add_node(num_cpus=NODE_CPUS)
    cluster.wait_for_nodes()


def _a_worker_node_of(cluster: Cluster, algo: PPO) -> Any:
    """A node that hosts one of ``algo``'s rollout workers, never the head."""
    hosts = set(_worker_nodes(algo))
    nodes = [node for node in cluster.worker_nodes if node.node_id in hosts]
    # SPREAD puts 2 workers on 2 nodes, so at most one of them is the head.
    assert nodes, "no rollout worker on a node other than the head"
    return nodes[0]


@pytest.mark.usefixtures("nodes_made_up")
def test_workers_lost_with_their_node_are_recreated_on_the_others(
    cluster: Cluster, tmp_path: Path
) -> None:
    RecreationCallbacks.recreated = []
    config = (
        _config(2, "SPREAD")
        .fault_tolerance(recreate_failed_workers=True)
        .callbacks(RecreationCallbacks)
    )
    algo = config.build()
    try:
        _assert_finite(algo.train())
        before = dict(zip(algo.workers.remote_worker_ids(), _worker_nodes(algo), strict=True))
        node = _a_worker_node_of(cluster, algo)
        lost = sorted(i for i, host in before.items() if host == node.node_id)
        cluster.remove_node(node)
        results = [algo.train() for _ in range(3)]
        for result in results:
            _assert_finite(result)
            assert result["num_healthy_workers"] == 2
        # Noticed in the first iteration after the loss, and counted from then on.
        assert [r["num_recreated_workers"] for r in results] == [len(lost)] * 3
        assert sorted(RecreationCallbacks.recreated) == lost
        after = dict(zip(algo.workers.remote_worker_ids(), _worker_nodes(algo), strict=True))
        assert sorted(after) == [1, 2]
        assert set(after.values()) <= _alive_nodes() - {node.node_id}
        assert all(after[i] == before[i] for i in after if i not in lost)
        local = algo.get_weights()["default_policy"]
        for weights in algo.workers.foreach_worker(lambda w: w.get_weights(), local=False):
            for name, value in weights["default_policy"].items():
                np.testing.assert_array_equal(value, local[name])
        checkpoint = algo.save(str(tmp_path))
        iteration = algo.iteration
    finally:
        algo.stop()
    restored = PPO.from_checkpoint(checkpoint)
    try:
        assert restored.iteration == iteration
        for name, value in restored.get_weights()["default_policy"].items():
            np.testing.assert_array_equal(value, local[name])
        _assert_finite(restored.train())
    finally:
        restored.stop()


@pytest.mark.usefixtures("nodes_made_up")
def test_a_replacement_with_no_node_left_for_its_bundle_fails_instead_of_hanging(
    cluster: Cluster,
) -> None:
    # Only the node to lose has the worker's custom resource: its bundle can't be placed again.
    node = cluster.add_node(num_cpus=NODE_CPUS, resources={"sim": 1})
    cluster.wait_for_nodes()
    algo = (
        _config(1)
        .resources(custom_resources_per_worker={"sim": 1}, placement_timeout_s=1)
        .fault_tolerance(recreate_failed_workers=True)
        .build()
    )
    try:
        assert _worker_nodes(algo) == [node.node_id]
        cluster.remove_node(node)
        with pytest.raises(
            ResourceError,
            match=r"remote worker 1: waited 1 s \(placement_timeout_s\) for the placement group "
            r"\(1 bundles, strategy PACK, state RESCHEDULING\) to place its bundle "
            r"\{CPU: 1, sim: 1\} again on the alive nodes, which have 3 nodes x "
            r"\{CPU: 2, sim: 0\}.*ignore_worker_failures=True",
        ):
            algo.train()
    finally:
        algo.stop()


def _cartpole_until_marked(config: Any) -> gym.Env[Any, Any]:
    """CartPole, or an error while the file ``config["marker"]`` exists."""
    if Path(config["marker"]).exists():
        raise RuntimeError("this env can't start now")
    return gym.make("CartPole-v1")


def test_a_replacement_that_fails_to_start_fails_training_instead_of_looping(
    cluster: Cluster, tmp_path: Path
) -> None:
    marker = tmp_path / "broken"
    register_env("cartpole_until_marked", _cartpole_until_marked)
    algo = (
        _config(1)
        .environment("cartpole_until_marked", env_config={"marker": str(marker)})
        .fault_tolerance(recreate_failed_workers=True)
        .build()
    )
    try:
        marker.touch()
        ray.kill(algo.workers.remote_workers()[0], no_restart=True)
        with pytest.raises(
            WorkerFailure,
            match=r"(?s)replacement of remote worker 1 failed to start.*can.t start now",
        ):
            algo.train()
    finally:
        algo.stop()


@pytest.mark.usefixtures("nodes_made_up")
def test_ignore_worker_failures_trains_on_without_the_workers_of_a_lost_node(
    cluster: Cluster,
) -> None:
    algo = _config(2, "SPREAD").fault_tolerance(ignore_worker_failures=True).build()
    try:
        sampled = algo.train()["num_env_steps_sampled"]
        node = _a_worker_node_of(cluster, algo)
        survivors = sum(1 for host in _worker_nodes(algo) if host != node.node_id)
        assert survivors == 1  # SPREAD put the two on two nodes
        cluster.remove_node(node)
        for _ in range(2):
            result = algo.train()
            _assert_finite(result)
            assert result["num_healthy_workers"] == survivors
            assert result["num_recreated_workers"] == 0
            assert result["num_env_steps_sampled"] > sampled
            sampled = result["num_env_steps_sampled"]
        assert algo.workers.num_healthy_workers() == survivors
        assert set(_worker_nodes(algo)) <= _alive_nodes() - {node.node_id}
    finally:
        algo.stop()


# ---------------------------------------------------------------------- Tune


class NodeReport(DefaultCallbacks):
    """Adds the nodes the trial's driver and rollout workers run on to each result."""

    def on_train_result(self, *, algorithm: Any, result: dict[str, Any], **kwargs: Any) -> None:
        result["nodes"] = {
            "driver": _node_id(),
            "workers": algorithm.workers.foreach_worker(_node_id, local=False),
        }


def test_a_tune_sweep_runs_its_trials_across_the_nodes(cluster: Cluster, tmp_path: Path) -> None:
    # Each trial: driver {CPU: 1} + a worker {CPU: 1.5}, more than a node has, so every trial
    # spans two nodes; both trials at once take 5 of the 6 CPUs.
    config = (
        _config(1, "SPREAD")
        .resources(num_cpus_for_driver=1, num_cpus_per_worker=1.5)
        .training(lr=grid_search([1e-3, 1e-4]))
        .callbacks(NodeReport)
    )
    tuner = tune.Tuner(
        "PPO",
        param_space=config.to_dict(),
        run_config=tune.RunConfig(
            storage_path=str(tmp_path), stop={"training_iteration": 2}, verbose=0
        ),
    )
    grid = tuner.fit()
    assert grid.num_terminated == 2
    assert not grid.errors
    results = [grid[i] for i in range(len(grid))]
    alive = _alive_nodes()
    for result in results:
        metrics = result.metrics or {}
        assert metrics["training_iteration"] == 2
        _assert_finite(metrics)
        nodes = metrics["nodes"]
        trial_nodes = {nodes["driver"], *nodes["workers"]}
        assert len(nodes["workers"]) == 1
        assert len(trial_nodes) == 2
        assert trial_nodes <= alive
    assert sorted((r.config or {})["lr"] for r in results) == [1e-4, 1e-3]
