"""How many threads torch's CPU kernels use in the learner (driver) process.

``num_cpus_for_driver`` is the CPU share the config gives the learner: Tune reserves it for a
trial, and Ray sets ``OMP_NUM_THREADS`` to each actor's CPUs. The driver gets the same rule
outside Tune, so that it does not spread tiny kernels over every core: on the small networks of
RL policies, two threads made each gradient step a quarter slower than one on a 2-core machine.
An ``OMP_NUM_THREADS`` set by the user wins.

NumPy's BLAS gets the same count (through ``threadpoolctl``): acting runs the built-in fully
connected networks on NumPy (``runtime.core.numpy_acting``), and OpenBLAS would otherwise run
a matrix product of a [256, 256] layer's size on every core. A BLAS thread count the user set
(``OPENBLAS_NUM_THREADS``, ``MKL_NUM_THREADS``, ...) wins too.
"""

from __future__ import annotations

import math
import os

import torch
from threadpoolctl import threadpool_limits

#: Environment variables by which a user sets the BLAS libraries' threads.
BLAS_THREAD_VARIABLES = (
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "BLIS_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
)

#: The BLAS thread count last set (None: never), so a process scans its libraries once.
_blas_threads: int | None = None


def set_learner_threads(num_cpus_for_driver: float) -> None:
    if "OMP_NUM_THREADS" in os.environ:
        return
    threads = max(1, math.ceil(num_cpus_for_driver))
    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)
    set_blas_threads(threads)


def set_blas_threads(threads: int) -> None:
    """Limit the BLAS libraries NumPy loaded to ``threads`` (unless the user set theirs)."""
    global _blas_threads
    if _blas_threads == threads or any(v in os.environ for v in BLAS_THREAD_VARIABLES):
        return
    threadpool_limits(limits=threads, user_api="blas")
    _blas_threads = threads
