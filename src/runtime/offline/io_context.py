"""``IOContext``: what a reader or writer made by a function (``input=fn``, ``output=fn``) is
given, as in the reference: the worker it serves, its index, the config and the log folder."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class IOContext:
    """The context of one rollout worker's input and output.

    ``worker`` is the ``RolloutWorker`` (its policies, preprocessors, filters and spaces);
    ``worker_index`` 0 is the local worker; ``log_dir`` is the run's folder ('' when there is
    none); ``config`` the algorithm's (frozen) config; ``input_config`` the settings given for
    a custom reader; ``output_config`` the writer's (``compress_columns``, ``max_file_size``).
    """

    log_dir: str = ""
    config: Any = None
    worker_index: int = 0
    worker: Any = None
    input_config: dict[str, Any] = field(default_factory=dict)
    output_config: dict[str, Any] = field(default_factory=dict)

    @property
    def num_workers(self) -> int:
        """The number of remote rollout workers beside the local one (0 without a worker)."""
        return int(getattr(self.worker, "num_workers", 0) or 0)
