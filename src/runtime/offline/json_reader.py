"""``JsonReader``: reads experience files (``input``): a file, a folder (its ``*.json``), a
glob, or a list of those. Each pass over the files takes them in a random order and each
file's batches in order, starting over after the last file; rollout workers that read
(``num_workers > 0``) split the files between them."""

from __future__ import annotations

import glob
import logging
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from runtime.core.multi_agent_batch import MultiAgentBatch
from runtime.core.sample_batch import SampleBatch
from runtime.offline.batch_files import decode_batch
from runtime.offline.input_reader import InputReader
from runtime.offline.io_context import IOContext

logger = logging.getLogger(__name__)


def input_files(spec: str | os.PathLike[str] | Sequence[str | os.PathLike[str]]) -> list[Path]:
    """The files of an ``input`` setting: a file, a folder (its ``*.json``), a glob, or a list
    of those."""
    specs = [spec] if isinstance(spec, str | os.PathLike) else list(spec)
    files: list[Path] = []
    for item in specs:
        path = Path(item).expanduser()
        if path.is_dir():
            files += sorted(path.glob("*.json"))
        elif path.is_file():
            files.append(path)
        else:
            files += sorted(Path(p) for p in glob.glob(os.path.expanduser(str(item))))
    if not files:
        raise FileNotFoundError(f"input={spec!r}: no files found (a file, folder or glob)")
    return files


class JsonReader(InputReader):
    """Reads the batches of ``inputs``; with an ``ioctx`` of a remote worker (index ``i`` of
    ``n``) only every ``n``-th file from the ``i``-th (all of them when there are fewer files
    than workers). ``seed`` orders the files of each pass (the worker's seed when an ``ioctx``
    with a worker is given)."""

    def __init__(
        self,
        inputs: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
        ioctx: IOContext | None = None,
        seed: int | None = None,
    ) -> None:
        files = input_files(inputs)
        index = ioctx.worker_index if ioctx is not None else 0
        workers = ioctx.num_workers if ioctx is not None else 0
        if index > 0 and workers > 0:
            share = files[index - 1 :: workers]
            if share:
                files = share
            else:
                logger.info(
                    "worker %d of %d reads all %d input files: there are fewer files than workers",
                    index,
                    workers,
                    len(files),
                )
        self.files = files
        if seed is None and ioctx is not None and ioctx.worker is not None:
            worker_seed = getattr(getattr(ioctx.worker, "settings", None), "seed", None)
            seed = None if worker_seed is None else int(worker_seed) + index
        self._rng = np.random.default_rng(seed)
        self._lines = self._iterate()

    def _iterate(self) -> Iterator[tuple[str, str]]:
        first = True
        while True:
            found = False
            # The first pass reads in the given order, so a short run reads the first file.
            order = range(len(self.files)) if first else self._rng.permutation(len(self.files))
            first = False
            for i in order:
                file = self.files[int(i)]
                with open(file, encoding="utf-8") as handle:
                    for number, line in enumerate(handle, start=1):
                        if line.strip():
                            found = True
                            yield line, f"{file}:{number}"
            if not found:
                raise ValueError(f"input files {[str(f) for f in self.files]} hold no batches")

    def next(self) -> SampleBatch | MultiAgentBatch:
        line, where = next(self._lines)
        return decode_batch(line, where)

    def read_all_files(self) -> Iterator[SampleBatch | MultiAgentBatch]:
        """Every batch of the files, once, in file order."""
        for file in self.files:
            with open(file, encoding="utf-8") as handle:
                for number, line in enumerate(handle, start=1):
                    if line.strip():
                        yield decode_batch(line, f"{file}:{number}")
