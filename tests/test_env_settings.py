"""The settings of the env side of the runtime (runners, rollout workers, worker sets, policy
parts, input reader, exploration) are built from every registered algorithm's config: none of
them needs a key some algorithm's config lacks."""

from __future__ import annotations

from typing import Any

import pytest

from rlconf.registry import get_config_class, list_algorithms
from runtime.core.exploration.factory import ExplorationSettings
from runtime.core.settings import settings_of
from runtime.env.episode_runner import RunnerSettings
from runtime.env.rollout_worker import WorkerSettings
from runtime.env.worker_policies import PolicyPartsSettings
from runtime.env.worker_set import WorkerSetSettings
from runtime.offline.input_setup import InputSettings

SETTINGS: list[type[Any]] = [
    RunnerSettings,
    WorkerSettings,
    WorkerSetSettings,
    PolicyPartsSettings,
    InputSettings,
    ExplorationSettings,
]


@pytest.mark.parametrize("algorithm", list_algorithms())
@pytest.mark.parametrize("settings_class", SETTINGS, ids=lambda cls: cls.__name__)
def test_env_settings_are_built_from_every_algorithms_config(
    algorithm: str, settings_class: type[Any]
) -> None:
    config = get_config_class(algorithm)().freeze()
    built = settings_of(settings_class, config, settings_class.__name__)
    assert isinstance(built, settings_class)
