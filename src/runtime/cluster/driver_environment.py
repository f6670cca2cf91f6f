"""``extra_python_environs_for_driver``: environment variables set in the driver process when
an algorithm is built (before its envs, models and workers are made)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rlconf.algorithm_config import AlgorithmConfig
from runtime.core.settings import settings_of


@dataclass(frozen=True)
class DriverEnvironSettings:
    extra_python_environs_for_driver: Mapping[str, Any]


def set_driver_environs(config: AlgorithmConfig) -> None:
    settings = settings_of(DriverEnvironSettings, config, "driver environment")
    for name, value in settings.extra_python_environs_for_driver.items():
        os.environ[name] = str(value)
