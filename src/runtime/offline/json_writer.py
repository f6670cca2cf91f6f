"""``JsonWriter``: appends batches to experience files (``output``), one JSON line each
(``runtime.offline.batch_files``)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from runtime.core.multi_agent_batch import MultiAgentBatch
from runtime.core.sample_batch import SampleBatch
from runtime.offline.batch_files import encode_batch
from runtime.offline.io_context import IOContext


class OutputWriter:
    """Where a rollout worker's sampled batches go (``output``): ``write(batch)``."""

    def write(self, batch: SampleBatch | MultiAgentBatch) -> None:
        raise NotImplementedError(f"{type(self).__name__}.write()")


class JsonWriter(OutputWriter):
    """Writes ``output-<time>_worker-<index>_<n>.json`` files in ``path``, starting a new one
    once the current one reaches ``max_file_size`` bytes; ``compress_columns`` are stored
    compressed. With an ``ioctx``, the worker index and the two settings come from it."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        ioctx: IOContext | None = None,
        max_file_size: int = 64 * 1024 * 1024,
        compress_columns: Sequence[str] = ("obs", "new_obs"),
    ) -> None:
        output = ioctx.output_config if ioctx is not None else {}
        self.folder = Path(path).expanduser()
        self.folder.mkdir(parents=True, exist_ok=True)
        self.worker_index = ioctx.worker_index if ioctx is not None else 0
        self.compress = list(output.get("compress_columns", compress_columns))
        self.max_file_size = int(output.get("max_file_size", max_file_size))
        self._stamp = datetime.now().strftime("%Y-%m-%d_%H-%M-%S")
        self._file_index = 0
        self._written = 0
        self.path = self._next_path()

    def _next_path(self) -> Path:
        name = f"output-{self._stamp}_worker-{self.worker_index}_{self._file_index}.json"
        self._file_index += 1
        self._written = 0
        return self.folder / name

    def write(self, batch: SampleBatch | MultiAgentBatch) -> None:
        line = encode_batch(batch, self.compress) + "\n"
        if self._written and self._written + len(line) > self.max_file_size:
            self.path = self._next_path()
        # One complete line per append, so a reader never sees half a batch from a crash
        # before the write returns.
        with open(self.path, "a", encoding="utf-8") as out:
            out.write(line)
        self._written += len(line)
