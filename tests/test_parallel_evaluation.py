"""Remote evaluation workers, evaluation beside the training step, and the placement group the
actors run in. One Ray session (2 CPUs) for the module."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest
import ray

from rlconf import PPOConfig
from runtime import WorkerSet
from runtime.algorithm import Algorithm
from runtime.cluster.placement import ResourceError
from tests.envs import SleepyEnv, WorkerIndexCallbacks
from tests.ray_session import local_ray

#: The slow tier (`python -m pytest -m slow`): Ray sessions with remote actors, clusters and Tune.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module", autouse=True)
def ray_session() -> Iterator[None]:
    with local_ray():
        yield


def _config(delay: float = 0.0, steps: int = 100) -> PPOConfig:
    """Training samples ``steps`` steps per iteration in the driver; evaluation runs on one
    remote worker. Episodes are 20 steps long."""
    return (
        PPOConfig()
        .environment(SleepyEnv, env_config={"delay": delay, "max_steps": 20})
        .rollouts(num_workers=0, rollout_fragment_length=steps)
        .training(train_batch_size=steps, sgd_minibatch_size=steps, num_sgd_iter=1)
        .evaluation(evaluation_interval=1, evaluation_num_workers=1)
    )


def test_episodes_are_spread_over_remote_workers_first_ones_get_the_remainder() -> None:
    config = (
        _config()
        .callbacks(WorkerIndexCallbacks)
        .evaluation(
            evaluation_num_workers=2,
            evaluation_duration=5,
            evaluation_config=PPOConfig.overrides(num_envs_per_worker=2),
        )
        .resources(num_cpus_per_worker=0.5)
    )
    algo = config.build()
    try:
        evaluation = algo.train()["evaluation"]
        assert evaluation["episodes_this_iter"] == 5
        assert Counter(evaluation["hist_stats"]["worker_index"]) == {1: 3, 2: 2}
        assert evaluation["num_healthy_workers"] == 2
    finally:
        algo.stop()


def test_timesteps_are_rounded_up_to_a_multiple_of_the_workers() -> None:
    config = (
        _config()
        .evaluation(
            evaluation_num_workers=2, evaluation_duration=301, evaluation_duration_unit="timesteps"
        )
        .resources(num_cpus_per_worker=0.5)
    )
    algo = config.build()
    try:
        assert algo.train()["evaluation"]["timesteps_this_iter"] == 302
    finally:
        algo.stop()


def _iteration_time(config: PPOConfig) -> tuple[float, list[dict[str, Any]]]:
    algo = config.build()
    try:
        results = [algo.train() for _ in range(3)]
    finally:
        algo.stop()
    return min(r["time_this_iter_s"] for r in results), results


def test_parallel_evaluation_overlaps_the_training_step() -> None:
    # Training: 100 steps of a 5 ms env (~0.5 s); evaluation: 100 steps of it (~0.5 s).
    duration = {"evaluation_duration": 100, "evaluation_duration_unit": "timesteps"}
    config = _config(delay=0.005).evaluation(**duration)  # type: ignore[arg-type]
    sequential, _ = _iteration_time(config)
    parallel, results = _iteration_time(
        config.copy().evaluation(evaluation_parallel_to_training=True)
    )
    assert sequential > 0.9  # both halves really ran
    assert parallel < 0.75 * sequential, (parallel, sequential)
    # Evaluation used the weights from before each training step.
    assert [r["evaluation"]["weights_version"] for r in results] == [0, 1, 2]
    assert all(r["evaluation"]["timesteps_this_iter"] == 100 for r in results)


def test_auto_duration_evaluates_for_as_long_as_training_runs() -> None:
    config = _config(delay=0.005).evaluation(
        evaluation_parallel_to_training=True,
        evaluation_duration="auto",
        evaluation_duration_unit="timesteps",
        evaluation_config=PPOConfig.overrides(rollout_fragment_length=10),
    )
    algo = config.build()
    try:
        evaluation = algo.train()["evaluation"]
    finally:
        algo.stop()
    # ~0.5 s of training and 10-step rounds of a 5 ms env: more than one round (about ten on an
    # idle machine; on a busy one, where the suite's other worker takes a core, as few as 3).
    assert evaluation["timesteps_this_iter"] >= 20
    assert evaluation["timesteps_this_iter"] % 10 == 0


rounds_seen: list[int] = []


def eval_until_training_is_done(
    algorithm: Any, eval_workers: WorkerSet, train_future: Future[Any]
) -> dict[str, Any]:
    rounds = 0
    while rounds == 0 or not train_future.done():
        eval_workers.foreach_worker(lambda w: w.evaluate(timesteps=5), local=False)
        rounds += 1
    rounds_seen.append(rounds)
    return {"rounds": rounds}


def test_custom_eval_function_sees_the_running_training_step() -> None:
    rounds_seen.clear()
    config = _config(delay=0.005).evaluation(
        evaluation_parallel_to_training=True, custom_eval_function=eval_until_training_is_done
    )
    algo = config.build()
    try:
        result = algo.train()
    finally:
        algo.stop()
    assert result["evaluation"]["rounds"] == rounds_seen[0] > 1
    assert result["evaluation"]["weights_version"] == 0


@pytest.mark.parametrize("setting", ["ignore_worker_failures", "recreate_failed_workers"])
def test_a_failed_evaluation_worker_does_not_lose_episodes(setting: str) -> None:
    config = (
        _config()
        .evaluation(evaluation_num_workers=2, evaluation_duration=4)
        .resources(num_cpus_per_worker=0.5)
        .fault_tolerance(**{setting: True})
    )
    algo = config.build()
    try:
        workers = algo.evaluation_workers
        assert workers is not None
        ray.kill(workers.remote_workers()[0], no_restart=True)
        evaluation = algo.evaluate()["evaluation"]
        assert evaluation["episodes_this_iter"] == 4
        if setting == "ignore_worker_failures":
            assert evaluation["num_healthy_workers"] == 1
        else:
            assert evaluation["num_recreated_workers"] == 1
            assert evaluation["num_healthy_workers"] == 2
    finally:
        algo.stop()


def test_actors_run_in_the_placement_group_tune_would_reserve() -> None:
    config = (
        _config()
        .rollouts(num_workers=1)
        .resources(num_cpus_per_worker=0.5, num_cpus_for_driver=0.5)
        .evaluation(evaluation_config=PPOConfig.overrides(num_cpus_per_worker=0.25))
    )
    algo = config.build()
    try:
        assert algo.placement is not None
        group = algo.placement.group
        table = ray.util.placement_group_table(group)
        factory = type(algo).default_resource_request(config)
        assert factory.bundles == [{"CPU": 0.5}, {"CPU": 0.5}, {"CPU": 0.25}]
        # Outside Tune the driver is this process: the group holds the workers' bundles only.
        assert list(table["bundles"].values()) == factory.bundles[1:]

        def group_id(worker: Any) -> str:
            current = ray.util.get_current_placement_group()
            return current.id.hex() if current is not None else "none"

        workers = algo.workers.foreach_worker(group_id, local=False)
        assert algo.evaluation_workers is not None
        workers += algo.evaluation_workers.foreach_worker(group_id, local=False)
        assert workers == [group.id.hex()] * 2
    finally:
        algo.stop()
    assert ray.util.placement_group_table(group)["state"] == "REMOVED"


def _live_groups() -> int:
    return sum(1 for g in ray.util.placement_group_table().values() if g["state"] != "REMOVED")


def test_a_request_larger_than_the_cluster_is_refused_before_any_actor_starts() -> None:
    groups = _live_groups()
    config = _config().rollouts(num_workers=3)
    with pytest.raises(ResourceError, match=r"CPU 4 \(cluster total 2\)") as error:
        config.build()
    assert "3 rollout worker(s) x {CPU: 1}" in str(error.value)
    assert _live_groups() == groups


def test_a_request_waiting_on_held_resources_times_out_saying_what_it_waits_for() -> None:
    two_cpus = _config().resources(num_cpus_per_worker=2)
    holder: Algorithm = two_cpus.build()  # its evaluation worker holds both CPUs
    try:
        with pytest.raises(ResourceError, match=r"waited 1 s .*\{CPU: 2\}.*held by other"):
            two_cpus.copy().resources(placement_timeout_s=1).build()
    finally:
        holder.stop()
    later = two_cpus.copy().resources(placement_timeout_s=5).build()  # fits once they are free
    later.stop()


def test_two_workers_fit_a_two_cpu_cluster_the_driver_reserves_nothing() -> None:
    config = (
        PPOConfig()
        .environment(SleepyEnv, env_config={"delay": 0.0, "max_steps": 20})
        .rollouts(num_workers=2, rollout_fragment_length=25)
        .training(train_batch_size=50, sgd_minibatch_size=50, num_sgd_iter=1)
    )
    algo = config.build()
    try:
        assert algo.train()["num_healthy_workers"] == 2
    finally:
        algo.stop()


def _input_that_fails(ioctx: Any) -> Any:
    raise FileNotFoundError("input: no files found")


def test_a_failed_build_releases_its_placement_group(tmp_path: Path) -> None:
    groups = _live_groups()
    # A missing input path is refused as the algorithm is built, before any reservation: an
    # input that fails as the workers make it fails the build after the group was reserved.
    config = _config().offline_data(input_=_input_that_fails)
    with pytest.raises(FileNotFoundError, match="no files found"):
        config.build()  # fails after the placement group was reserved
    assert _live_groups() == groups
