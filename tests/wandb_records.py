"""The history rows (one dict per ``run.log``) of an offline W&B run, read from its
``run-<id>.wandb`` file: a log of protobuf ``Record``s in 32 KiB blocks (LevelDB's log format,
after a 7-byte ``:W&B`` header), which W&B writes and ``wandb sync`` uploads."""

from __future__ import annotations

import json
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

_BLOCK = 32768
_HEADER = 7
_FULL, _FIRST, _MIDDLE, _LAST = 1, 2, 3, 4


def _records(path: Path) -> Iterator[bytes]:
    data = path.read_bytes()
    assert data[:4] == b":W&B", f"{path} is not a W&B run file"
    pos, pending = _HEADER, b""
    while pos + _HEADER <= len(data):
        left = _BLOCK - pos % _BLOCK
        if left < _HEADER:  # a block's tail too short for a record header is padding
            pos += left
            continue
        _checksum, length, kind = struct.unpack("<IHB", data[pos : pos + _HEADER])
        chunk = data[pos + _HEADER : pos + _HEADER + length]
        pos += _HEADER + length
        if kind == _FULL:
            yield chunk
        elif kind == _FIRST:
            pending = chunk
        elif kind == _MIDDLE:
            pending += chunk
        elif kind == _LAST:
            yield pending + chunk
            pending = b""


def history(run_file: Path) -> list[dict[str, Any]]:
    from wandb.proto import wandb_internal_pb2

    rows = []
    for raw in _records(run_file):
        record = wandb_internal_pb2.Record()
        record.ParseFromString(raw)
        if record.WhichOneof("record_type") == "history":
            rows.append(
                {
                    item.key or "/".join(item.nested_key): json.loads(item.value_json)
                    for item in record.history.item
                }
            )
    return rows


def offline_runs(folder: Path) -> list[Path]:
    """The ``run-<id>.wandb`` files of the offline runs under ``folder``."""
    return sorted(folder.rglob("offline-run-*/run-*.wandb"))
