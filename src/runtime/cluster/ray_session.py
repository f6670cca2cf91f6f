"""Start Ray only when actors are needed (the embedded default never starts it)."""

from __future__ import annotations

import logging
import sys
import threading
from typing import Any

_LOCK = threading.Lock()


def ensure_ray(config: Any, num_cpus: int | None = None) -> None:
    """Connect to the cluster Ray was started with, or start a local one (with ``num_cpus``
    logical CPUs when given)."""
    import ray

    _send_file_modules_by_value()
    with _LOCK:
        if ray.is_initialized():
            return
        ray.init(
            num_cpus=num_cpus,
            logging_level=_log_level(config.get("log_level", "WARN")),
            runtime_env={"env_vars": {k: str(v) for k, v in _worker_env(config).items()}},
        )


def _worker_env(config: Any) -> dict[str, Any]:
    return dict(config.get("extra_python_environs_for_worker") or {})


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
