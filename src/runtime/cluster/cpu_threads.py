"""How many threads torch's CPU kernels use in the learner (driver) process.

``num_cpus_for_driver`` is the CPU share the config gives the learner: Tune reserves it for a
trial, and Ray sets ``OMP_NUM_THREADS`` to each actor's CPUs. Outside Tune the driver follows
the same rule where the setting is given. Where it is not (``None``, the default), the threads
fit the network: on the small networks of classic-control policies more threads only spread
tiny kernels (a second thread made each gradient step slower), while a conv net or layers of
256x256 and up are big enough to use every core, as torch (and so Stable-Baselines3) does by
default. An ``OMP_NUM_THREADS`` set by the user wins.

NumPy's BLAS gets the same count (through ``threadpoolctl``): acting runs the built-in fully
connected networks on NumPy (``runtime.core.numpy_acting``), and OpenBLAS would otherwise run
a matrix product of a [256, 256] layer's size on every core. A BLAS thread count the user set
(``OPENBLAS_NUM_THREADS``, ``MKL_NUM_THREADS``, ...) wins too.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable

import torch
from threadpoolctl import threadpool_limits
from torch import nn

#: Environment variables by which a user sets the BLAS libraries' threads.
BLAS_THREAD_VARIABLES = (
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "BLIS_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
)

#: A network with a weight of at least this many elements (a 256x256 layer) is large.
LARGE_WEIGHT = 256 * 256

#: torch's own thread count when this module was imported, before the runtime set any: what a
#: process that leaves torch alone (Stable-Baselines3, a CleanRL script) runs on.
_TORCH_DEFAULT_THREADS = torch.get_num_threads()

#: The BLAS thread count last set (None: never), so a process scans its libraries once.
_blas_threads: int | None = None


def is_large_network(module: nn.Module) -> bool:
    """Whether ``module`` has a convolution or a weight of a 256x256 layer's size or more."""
    if any(isinstance(m, nn.Conv1d | nn.Conv2d | nn.Conv3d) for m in module.modules()):
        return True
    return any(p.numel() >= LARGE_WEIGHT for p in module.parameters())


def available_cores() -> int:
    """The cores torch would use by default, within those this process may run on."""
    try:
        allowed = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        allowed = os.cpu_count() or 1
    return max(1, min(_TORCH_DEFAULT_THREADS, allowed))


def learner_threads(num_cpus_for_driver: float | None, modules: Iterable[nn.Module]) -> int:
    """The learner's torch threads: ``ceil(num_cpus_for_driver)`` (at least 1) where it is set;
    otherwise every core for a large network among ``modules``, else 1."""
    if num_cpus_for_driver is not None:
        return max(1, math.ceil(num_cpus_for_driver))
    return available_cores() if any(is_large_network(m) for m in modules) else 1


def set_learner_threads(num_cpus_for_driver: float | None, modules: Iterable[nn.Module]) -> int:
    """Set torch's and the BLAS libraries' threads for the learner of ``modules`` (unless
    ``OMP_NUM_THREADS`` is set); returns torch's thread count."""
    if "OMP_NUM_THREADS" in os.environ:
        return torch.get_num_threads()
    threads = learner_threads(num_cpus_for_driver, modules)
    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)
    set_blas_threads(threads)
    return threads


def set_blas_threads(threads: int) -> None:
    """Limit the BLAS libraries NumPy loaded to ``threads`` (unless the user set theirs)."""
    global _blas_threads
    if _blas_threads == threads or any(v in os.environ for v in BLAS_THREAD_VARIABLES):
        return
    threadpool_limits(limits=threads, user_api="blas")
    _blas_threads = threads
