"""The ``log_level`` of a config applied to this process's ``runtime`` and ``rlconf`` loggers
(``rlconf.log_setup``): by every build of an algorithm, and by every remote rollout worker in
its own process."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rlconf.log_setup import configure_logging
from runtime.core.settings import settings_of


@dataclass(frozen=True)
class LogSettings:
    log_level: str


def configure_logs(config: Any, component: str) -> None:
    """Set this process's ``runtime`` and ``rlconf`` loggers to ``config``'s ``log_level``."""
    configure_logging(settings_of(LogSettings, config, component).log_level)
