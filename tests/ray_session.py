"""The Ray session an integration test module starts for itself (and always shuts down)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import ray

#: The repository root: remote workers import ``tests.envs`` from it.
ROOT = str(Path(__file__).resolve().parents[1])


@contextmanager
def local_ray(num_gpus: int = 0) -> Iterator[None]:
    """2 logical CPUs (and ``num_gpus`` logical GPUs), no dashboard, quiet logs."""
    ray.init(
        # A new Ray, never the last cluster started on this machine (a test's or a user's).
        address="local",
        num_cpus=2,
        num_gpus=num_gpus,
        include_dashboard=False,
        runtime_env={"env_vars": {"PYTHONPATH": ROOT}},
        logging_level=logging.ERROR,
    )
    try:
        yield
    finally:
        ray.shutdown()
