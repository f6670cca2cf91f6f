"""Fractional GPUs on one logical GPU (``ray.init(num_gpus=1)``; torch here has no CUDA)."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import ray

from rlconf import ConfigError, PPOConfig
from runtime.algorithm import Algorithm
from runtime.cluster.placement import ResourceError
from tests.ray_session import ROOT, local_ray

sys.path.insert(0, str(Path(ROOT) / "examples"))

import fractional_gpus

#: The slow tier (`python -m pytest -m slow`): Ray sessions with remote actors, clusters and Tune.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module", autouse=True)
def ray_session() -> Iterator[None]:
    with local_ray(num_gpus=1):
        yield


def _quarter_gpu_config() -> PPOConfig:
    """One remote worker with a quarter of the GPU; a quarter of the CPUs for everything."""
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .rollouts(num_workers=1, rollout_fragment_length=50)
        .training(train_batch_size=50, sgd_minibatch_size=50, num_sgd_iter=1)
        .resources(num_gpus_per_worker=0.25, num_cpus_per_worker=0.25, num_cpus_for_driver=0.25)
    )


def _worker_view(worker: Any) -> tuple[list[Any], str]:
    return list(ray.get_gpu_ids()), str(worker.get_policy().device)


def test_the_example_shares_one_gpu_among_four_algorithms_and_a_fifth_waits(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # examples/fractional_gpus.py's own functions (its main adds ray.init and the stops); the
    # script is not run again as a process by tests/test_examples.py.
    algorithms: list[Algorithm] = []
    try:
        algorithms = fractional_gpus.train_four(iterations=1)
        assert len(algorithms) == 4
        assert _free_gpu() == pytest.approx(0.0)
        for algo in algorithms:
            assert algo.iteration == 1
            # The worker got the GPU's share; torch sees no CUDA, so it infers on CPU.
            assert algo.workers.foreach_worker(_worker_view, local=False) == [([0], "cpu")]
        with pytest.raises(ResourceError, match=r"waited 1 s.*GPU: 0\.25"):
            fractional_gpus.quarter_gpu_config().resources(placement_timeout_s=1).build()
    finally:
        for algo in algorithms:
            algo.stop()
    assert _eventually_free_gpu() == pytest.approx(1.0)
    out = capsys.readouterr().out
    assert "free GPU with four algorithms running: 0.0" in out
    assert out.count("mean returns:") == 1


def _free_gpu() -> float:
    free = ray.available_resources()  # type: ignore[no-untyped-call]
    return float(free.get("GPU", 0.0))


def _eventually_free_gpu() -> float:
    """Free GPU once Ray has processed the removal of the placement groups (asynchronous)."""
    deadline = time.monotonic() + 20
    while (free := _free_gpu()) < 1.0 and time.monotonic() < deadline:
        time.sleep(0.1)
    return float(free)


def test_a_gpu_request_larger_than_the_cluster_is_refused_with_the_numbers() -> None:
    config = _quarter_gpu_config().rollouts(num_workers=3).resources(num_gpus_per_worker=0.5)
    with pytest.raises(ResourceError, match=r"GPU 1\.5 \(cluster total 1\)"):
        config.build()


def test_a_learner_gpu_without_cuda_is_a_config_error_unless_fake() -> None:
    config = _quarter_gpu_config().resources(num_gpus=0.5)
    with pytest.raises(ConfigError, match=r"num_gpus.*torch sees none"):
        config.build()
    fake = config.copy().resources(_fake_gpus=True)
    algo = fake.build()
    try:
        assert algo.resource_plan.driver == {"CPU": 0.25}
        assert str(algo.get_policy().device) == "cpu"
        assert algo.train()["timesteps_total"] == 50
    finally:
        algo.stop()
