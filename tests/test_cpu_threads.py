"""The driver's thread counts (``runtime.cluster.cpu_threads``): torch's and NumPy's BLAS
follow ``num_cpus_for_driver`` unless the user set theirs."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
import torch
from threadpoolctl import threadpool_info, threadpool_limits

from runtime.cluster import cpu_threads


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
    cpu_threads.set_learner_threads(1)
    assert torch.get_num_threads() == 1
    assert _blas_threads() == {1}


def test_a_thread_count_the_user_set_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "2")
    cpu_threads.set_learner_threads(1)
    assert torch.get_num_threads() == 1
    assert _blas_threads() == {2}
    monkeypatch.delenv("OPENBLAS_NUM_THREADS")
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    torch.set_num_threads(2)
    cpu_threads.set_learner_threads(1)
    assert torch.get_num_threads() == 2
    assert _blas_threads() == {2}
