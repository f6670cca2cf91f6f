"""The driver's thread counts (``runtime.cluster.cpu_threads``): torch's and NumPy's BLAS
follow ``num_cpus_for_driver`` where it is set, else the size of the networks the learner
trains, unless the user set theirs."""

from __future__ import annotations

import os
from collections.abc import Iterator
from itertools import pairwise

import numpy as np
import pytest
import torch
from threadpoolctl import threadpool_info, threadpool_limits

from rlconf import PPOConfig, SACConfig
from runtime.cluster import cpu_threads
from runtime.cluster.resources import resource_plan


def _blas_threads() -> set[int]:
    return {int(i["num_threads"]) for i in threadpool_info() if i["user_api"] == "blas"}


@pytest.fixture(autouse=True)
def _restore(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test starts with the BLAS at 2 threads, no thread variable set, and leaves the
    process's counts as it found them."""
    torch_threads = torch.get_num_threads()
    for name in ("OMP_NUM_THREADS", *cpu_threads.BLAS_THREAD_VARIABLES):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(cpu_threads, "_blas_threads", None)
    np.ones(2) @ np.ones(2)  # NumPy's BLAS is loaded
    with threadpool_limits(limits=2, user_api="blas"):
        yield
    torch.set_num_threads(torch_threads)


def test_the_driver_gives_numpys_blas_torchs_thread_count() -> None:
    assert _blas_threads() == {2}
    cpu_threads.set_learner_threads(1, [])
    assert torch.get_num_threads() == 1
    assert _blas_threads() == {1}


def test_a_thread_count_the_user_set_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "2")
    cpu_threads.set_learner_threads(1, [])
    assert torch.get_num_threads() == 1
    assert _blas_threads() == {2}
    monkeypatch.delenv("OPENBLAS_NUM_THREADS")
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    torch.set_num_threads(2)
    cpu_threads.set_learner_threads(1, [])
    assert torch.get_num_threads() == 2
    assert _blas_threads() == {2}


def _mlp(*sizes: int) -> torch.nn.Module:
    layers = [torch.nn.Linear(a, b) for a, b in pairwise(sizes)]
    return torch.nn.Sequential(*layers)


def test_the_network_sets_the_threads_where_num_cpus_for_driver_is_not_set(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(cpu_threads, "_TORCH_DEFAULT_THREADS", 4)
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: {0, 1, 2})
    assert cpu_threads.available_cores() == 3  # torch's default within the allowed cores
    small, wide = _mlp(4, 64, 64, 2), _mlp(17, 256, 256, 6)
    conv = torch.nn.Sequential(torch.nn.Conv2d(4, 8, 3))
    assert cpu_threads.learner_threads(None, [small]) == 1
    assert cpu_threads.learner_threads(None, [small, wide]) == 3
    assert cpu_threads.learner_threads(None, [conv]) == 3
    assert cpu_threads.learner_threads(None, [_mlp(4, 255, 255, 2)]) == 1
    # Set, it wins whatever the network: the cores the config gives the learner.
    assert cpu_threads.learner_threads(1, [conv]) == 1
    assert cpu_threads.learner_threads(0.5, [wide]) == 1
    assert cpu_threads.learner_threads(2, [small]) == 2


def test_a_build_gives_small_networks_one_thread_and_large_ones_every_core(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(cpu_threads, "available_cores", lambda: 2)
    torch.set_num_threads(2)
    small = PPOConfig().environment("CartPole-v1").training(model={"fcnet_hiddens": [64, 64]})
    algo = small.build()
    try:
        assert torch.get_num_threads() == 1
    finally:
        algo.stop()
    sac = (
        SACConfig()
        .environment("Pendulum-v1")
        .training(
            q_model_config={"fcnet_hiddens": [256, 256]},
            policy_model_config={"fcnet_hiddens": [256, 256]},
        )
    )
    algo = sac.build()
    try:
        assert torch.get_num_threads() == 2
    finally:
        algo.stop()
    algo = sac.copy().resources(num_cpus_for_driver=1).build()
    try:
        assert torch.get_num_threads() == 1
    finally:
        algo.stop()


def test_a_trial_reserves_one_cpu_for_a_driver_whose_cpus_are_not_set() -> None:
    config = PPOConfig().environment("CartPole-v1")
    assert config.to_dict()["num_cpus_for_driver"] is None
    assert resource_plan(config).driver == {"CPU": 1.0}
    assert resource_plan(config.resources(num_cpus_for_driver=2)).driver == {"CPU": 2.0}
