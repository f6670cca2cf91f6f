"""``extra_python_environs_for_driver``: environment variables set in the driver process when
an algorithm is built (before its envs, models and workers are made)."""

from __future__ import annotations

import os

from rlconf.algorithm_config import AlgorithmConfig


def set_driver_environs(config: AlgorithmConfig) -> None:
    for name, value in config["extra_python_environs_for_driver"].items():
        os.environ[name] = str(value)
