"""Sample batches as JSON lines: written by rollout workers (``output``) and read back for
training (``input``).

One line per batch: ``{"type": "SampleBatch", "count": N, "<column>": [...], ...}``. Columns
named in ``output_compress_columns`` are stored as ``{"npy_zlib_b64": "..."}``: the column in
numpy's ``.npy`` format (no pickle: object columns are never compressed), zlib-compressed and
base64-encoded. A writer starts a new file once the current one reaches
``output_max_file_size`` bytes.
"""

from __future__ import annotations

import base64
import glob
import io
import json
import os
import zlib
from collections.abc import Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from runtime.core.sample_batch import SampleBatch

_COMPRESSED = "npy_zlib_b64"


def encode_batch(batch: SampleBatch, compress: Sequence[str] = ()) -> str:
    row: dict[str, Any] = {"type": "SampleBatch", "count": len(batch)}
    for name, column in batch.items():
        if name in compress and column.dtype != object:
            buffer = io.BytesIO()
            np.save(buffer, column, allow_pickle=False)
            packed = base64.b64encode(zlib.compress(buffer.getvalue())).decode("ascii")
            row[name] = {_COMPRESSED: packed}
        else:
            row[name] = column.tolist()
    return json.dumps(row, default=repr)


def decode_batch(line: str, where: str = "input") -> SampleBatch:
    row = json.loads(line)
    if not isinstance(row, dict) or row.get("type") != "SampleBatch":
        raise ValueError(f"{where}: not a sample batch line (its 'type' is not 'SampleBatch')")
    columns: dict[str, Any] = {}
    for name, value in row.items():
        if name in ("type", "count"):
            continue
        if isinstance(value, dict) and _COMPRESSED in value:
            raw = zlib.decompress(base64.b64decode(value[_COMPRESSED]))
            columns[name] = np.load(io.BytesIO(raw), allow_pickle=False)
        elif name == SampleBatch.INFOS:
            column = np.empty(len(value), dtype=object)
            column[:] = value
            columns[name] = column
        else:
            columns[name] = np.asarray(value)
    return SampleBatch(columns)


class BatchWriter:
    """Appends batches to ``output-<time>_worker-<index>_<n>.json`` files in ``folder``."""

    def __init__(
        self,
        folder: str | os.PathLike[str],
        worker_index: int,
        compress: Sequence[str] = (),
        max_file_size: int = 64 * 1024 * 1024,
    ) -> None:
        self.folder = Path(folder).expanduser()
        self.folder.mkdir(parents=True, exist_ok=True)
        self.worker_index = worker_index
        self.compress = list(compress)
        self.max_file_size = max_file_size
        self._stamp = datetime.now().strftime("%Y-%m-%d_%H-%M-%S")
        self._file_index = 0
        self._written = 0
        self.path = self._next_path()

    def _next_path(self) -> Path:
        name = f"output-{self._stamp}_worker-{self.worker_index}_{self._file_index}.json"
        self._file_index += 1
        self._written = 0
        return self.folder / name

    def write(self, batch: SampleBatch) -> None:
        line = encode_batch(batch, self.compress) + "\n"
        if self._written and self._written + len(line) > self.max_file_size:
            self.path = self._next_path()
        # One complete line per append, so a reader never sees half a batch from a crash
        # before the write returns.
        with open(self.path, "a", encoding="utf-8") as out:
            out.write(line)
        self._written += len(line)


def input_files(spec: str | Sequence[str]) -> list[Path]:
    """The files of an ``input`` setting: a file, a folder (its ``*.json``), a glob, or a list
    of those."""
    specs = [spec] if isinstance(spec, str) else list(spec)
    files: list[Path] = []
    for item in specs:
        path = Path(item).expanduser()
        if path.is_dir():
            files += sorted(path.glob("*.json"))
        elif path.is_file():
            files.append(path)
        else:
            files += sorted(Path(p) for p in glob.glob(os.path.expanduser(item)))
    if not files:
        raise FileNotFoundError(f"input={spec!r}: no files found (a file, folder or glob)")
    return files


class BatchReader:
    """Reads the batches of ``files`` in order, starting over after the last one."""

    def __init__(self, files: Sequence[Path]) -> None:
        self.files = list(files)
        self._lines = self._iterate()

    def _iterate(self) -> Iterator[tuple[str, str]]:
        while True:
            found = False
            for file in self.files:
                with open(file, encoding="utf-8") as handle:
                    for number, line in enumerate(handle, start=1):
                        if line.strip():
                            found = True
                            yield line, f"{file}:{number}"
            if not found:
                raise ValueError(f"input files {[str(f) for f in self.files]} hold no batches")

    def next(self) -> SampleBatch:
        line, where = next(self._lines)
        return decode_batch(line, where)
