"""The Ray session the integration test modules start for themselves (and always shut down).

Starting Ray (its GCS, raylet, log monitor and prestarted workers) is a large share of a Ray
module's time on a busy 2-core machine, so consecutive modules of one pytest process that ask
for the same session share it: ``local_ray`` leaves its session up when its module ends with
every CPU and GPU free again (no actor or placement group left behind), and the next module's
``local_ray`` takes it over. A module that leaves resources held, a different ``num_gpus``, a
module that does not use ``local_ray`` (``conftest.py`` calls ``shutdown_shared`` before it) and
the end of the pytest session each shut it down, so no module sees another's leftovers and
nothing stays running.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import ray

#: The repository root: remote workers import ``tests.envs`` from it.
ROOT = str(Path(__file__).resolve().parents[1])

#: ``num_cpus`` and ``num_gpus`` of the session ``local_ray`` started and left up for the next
#: module (absent when there is none).
_shared: dict[str, int] = {}
#: How many ``local_ray`` blocks are open (a test may open one inside its module's).
_depth: list[int] = [0]


def shutdown_shared() -> None:
    """Shut down the session ``local_ray`` left up for the next module, if there is one."""
    if _shared and ray.is_initialized():
        ray.shutdown()
    _shared.clear()


def _all_free(timeout_s: float = 5.0) -> bool:
    """Whether every CPU and GPU of the session is free (an actor's resources come back a
    moment after it is killed, hence the wait)."""
    deadline = time.monotonic() + timeout_s
    while True:
        total = ray.cluster_resources()  # type: ignore[no-untyped-call]
        free = ray.available_resources()  # type: ignore[no-untyped-call]
        if all(free.get(key, 0.0) >= total[key] - 1e-6 for key in ("CPU", "GPU") if key in total):
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)


@contextmanager
def local_ray(num_gpus: int = 0, num_cpus: int = 2) -> Iterator[None]:
    """``num_cpus`` logical CPUs (and ``num_gpus`` logical GPUs), no dashboard, quiet logs: the
    session the last module left up if it has the same numbers, else a new one."""
    wanted = {"num_cpus": num_cpus, "num_gpus": num_gpus}
    if not (ray.is_initialized() and _shared == wanted):
        if ray.is_initialized():
            ray.shutdown()
        _shared.clear()
        ray.init(
            # A new Ray, never the last cluster started on this machine (a test's or a user's).
            address="local",
            num_cpus=num_cpus,
            num_gpus=num_gpus,
            include_dashboard=False,
            logging_level=logging.ERROR,
        )
        _shared.update(wanted)
    _depth[0] += 1
    try:
        yield
    finally:
        _depth[0] -= 1
        # A block opened inside another (a test that wants a new session) always ends its own;
        # the outermost one keeps a clean session for the next module.
        keep = _depth[0] == 0 and ray.is_initialized() and _shared == wanted
        if not (keep and _all_free()):
            ray.shutdown()
            _shared.clear()
