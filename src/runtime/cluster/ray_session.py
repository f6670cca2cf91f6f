"""Start Ray only when actors are needed (the embedded default never starts it)."""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rlconf.errors import ConfigError
from runtime.cluster.ray_private import launched_with_autoscaler, without_token_default_notice
from runtime.core.settings import settings_of

_LOCK = threading.Lock()


#: The cluster to connect to (``auto``, ``<head ip>:6379`` or ``ray://...``), as Ray reads it.
ADDRESS_ENV = "RAY_ADDRESS"
#: ``1`` when the cluster connected to adds nodes on demand (an autoscaler): sweeps then leave
#: trials larger than the cluster is now to it; ``0`` when it does not.
AUTOSCALING_ENV = "RLCONF_AUTOSCALING"
_YES = ("1", "true", "yes", "on")
_NO = ("0", "false", "no", "off")


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
        address = cluster_address(address)
        # Ray warns that a Ray it starts here has token authentication on: nothing to act on.
        with without_token_default_notice():
            ray.init(
                # Without an address Ray would join any cluster `ray start` runs on this machine,
                # and then refuse num_cpus; which cluster to join is asked for explicitly instead.
                address=address or "local",
                # A running cluster has its resources; Ray refuses num_cpus when connecting.
                num_cpus=None if address else num_cpus,
                logging_level=_log_level(settings.log_level),
                runtime_env={
                    "env_vars": {
                        k: str(v)
                        for k, v in (settings.extra_python_environs_for_worker or {}).items()
                    }
                },
            )
        return True


def cluster_address(address: str | None = None) -> str | None:
    """The cluster ``ensure_ray`` connects to: ``address``, else ``$RAY_ADDRESS``; None for a
    Ray of its own on this machine."""
    return address or os.environ.get(ADDRESS_ENV) or None


def cluster_autoscales() -> bool:
    """Whether the cluster Ray is connected to adds nodes on demand: ``$RLCONF_AUTOSCALING``
    when set (``1``/``true``/``yes``/``on`` or ``0``/``false``/``no``/``off``), else Tune's
    own sign of an autoscaling cluster (the cluster launcher's bootstrap config on this node,
    where the driver runs on the head). A Ray started on this machine never autoscales."""
    given = os.environ.get(AUTOSCALING_ENV)
    if given is None or not given.strip():
        return launched_with_autoscaler()
    if given.strip().lower() in _YES:
        return True
    if given.strip().lower() in _NO:
        return False
    raise ConfigError.single(
        f"${AUTOSCALING_ENV}",
        AUTOSCALING_ENV,
        "is not a yes or no",
        value=given,
        has_value=True,
        allowed="1 (the cluster adds nodes on demand) or 0 (it does not); unset: as Tune tells",
    )


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
