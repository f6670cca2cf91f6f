"""Start Ray only when actors are needed (the embedded default never starts it)."""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from runtime.core.settings import settings_of

_LOCK = threading.Lock()


#: The cluster to connect to (``auto``, ``<head ip>:6379`` or ``ray://...``), as Ray reads it.
ADDRESS_ENV = "RAY_ADDRESS"


@dataclass(frozen=True)
class RaySettings:
    """What starting Ray reads: its log level and the workers' environment variables."""

    log_level: str
    extra_python_environs_for_worker: Mapping[str, Any]


def ensure_ray(config: Any, num_cpus: int | None = None, address: str | None = None) -> bool:
    """Connect to the cluster at ``address`` or ``$RAY_ADDRESS`` (``rlconf train --address``
    sets it), or else start a local Ray (with ``num_cpus`` logical CPUs when given) - unless
    Ray is running in this process already. Returns whether this call started or connected
    it."""
    import ray

    settings = settings_of(RaySettings, config, "Ray")
    _send_file_modules_by_value()
    with _LOCK:
        if ray.is_initialized():
            return False
        address = address or os.environ.get(ADDRESS_ENV) or None
        ray.init(
            # Without an address Ray would join any cluster `ray start` runs on this machine,
            # and then refuse num_cpus; which cluster to join is asked for explicitly instead.
            address=address or "local",
            # A running cluster has its resources; Ray refuses num_cpus when connecting.
            num_cpus=None if address else num_cpus,
            logging_level=_log_level(settings.log_level),
            runtime_env={
                "env_vars": {
                    k: str(v) for k, v in (settings.extra_python_environs_for_worker or {}).items()
                }
            },
        )
        return True


def _log_level(name: str) -> int:
    return {"DEBUG": logging.DEBUG, "INFO": logging.INFO, "ERROR": logging.ERROR}.get(
        name, logging.WARNING
    )


def _send_file_modules_by_value() -> None:
    """Classes from files imported with ``rlconf --import`` reach Ray workers by value: the
    workers cannot import those files by module name."""
    import ray.cloudpickle

    from rlconf.user_code import modules_from_files

    for name in modules_from_files():
        module = sys.modules.get(name)
        if module is not None:
            ray.cloudpickle.register_pickle_by_value(module)  # type: ignore[no-untyped-call]
