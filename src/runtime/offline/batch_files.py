"""The JSON-lines format of experience files: one batch per line, written by ``JsonWriter``
(``output``) and read by ``JsonReader`` (``input``).

A line is ``{"type": "SampleBatch", "count": N, "dtypes": {...}, "<column>": [...], ...}``, or
``{"type": "MultiAgentBatch", "count": N, "policy_batches": {"<policy id>": {<columns>}}}``.
Columns named in ``output_compress_columns`` are stored as ``{"npy_zlib_b64": "..."}``: the
column in numpy's ``.npy`` format (no pickle: object columns are never compressed),
zlib-compressed and base64-encoded. Lists keep their dtype through ``dtypes``; a file without
it (the reference's own) has its float columns read as float32, as a sampler makes them.
"""

from __future__ import annotations

import base64
import io
import json
import zlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from runtime.core.multi_agent_batch import MultiAgentBatch
from runtime.core.sample_batch import SampleBatch

_COMPRESSED = "npy_zlib_b64"
_META = ("type", "count", "dtypes", "policy_batches")


def _encode_columns(batch: SampleBatch, compress: Sequence[str]) -> dict[str, Any]:
    row: dict[str, Any] = {"count": len(batch), "dtypes": {}}
    for name, column in batch.items():
        if name in compress and column.dtype != object:
            buffer = io.BytesIO()
            np.save(buffer, column, allow_pickle=False)
            packed = base64.b64encode(zlib.compress(buffer.getvalue())).decode("ascii")
            row[name] = {_COMPRESSED: packed}
        else:
            if column.dtype != object:
                row["dtypes"][name] = column.dtype.str
            row[name] = column.tolist()
    return row


def encode_batch(batch: SampleBatch | MultiAgentBatch, compress: Sequence[str] = ()) -> str:
    """One line of the format (without the newline)."""
    if isinstance(batch, MultiAgentBatch):
        line: dict[str, Any] = {
            "type": "MultiAgentBatch",
            "count": batch.env_steps(),
            "policy_batches": {pid: _encode_columns(rows, compress) for pid, rows in batch.items()},
        }
    else:
        line = {"type": "SampleBatch", **_encode_columns(batch, compress)}
    return json.dumps(line, default=repr)


def _decode_columns(row: dict[str, Any], where: str) -> SampleBatch:
    dtypes = row.get("dtypes") or {}
    columns: dict[str, Any] = {}
    for name, value in row.items():
        if name in _META:
            continue
        if isinstance(value, dict) and _COMPRESSED in value:
            raw = zlib.decompress(base64.b64decode(value[_COMPRESSED]))
            columns[name] = np.load(io.BytesIO(raw), allow_pickle=False)
        elif name == SampleBatch.INFOS or (value and isinstance(value[0], dict | str | None)):
            column = np.empty(len(value), dtype=object)
            column[:] = value
            columns[name] = column
        elif name in dtypes:
            columns[name] = np.asarray(value, dtype=np.dtype(dtypes[name]))
        else:
            array = np.asarray(value)
            # The reference's files keep no dtypes; samplers make float32 columns.
            columns[name] = array.astype(np.float32) if array.dtype == np.float64 else array
    try:
        return SampleBatch(columns)
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from exc


def decode_batch(line: str, where: str = "input") -> SampleBatch | MultiAgentBatch:
    """The batch of one line; a ``ValueError`` naming ``where`` for anything else."""
    try:
        row = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{where}: not a JSON line ({exc})") from exc
    kind = row.get("type") if isinstance(row, dict) else None
    if kind == "SampleBatch":
        return _decode_columns(row, where)
    if kind == "MultiAgentBatch":
        policy_batches = row.get("policy_batches")
        if not isinstance(policy_batches, dict):
            raise ValueError(f"{where}: a MultiAgentBatch line without 'policy_batches'")
        return MultiAgentBatch(
            {
                str(pid): _decode_columns(cols, f"{where} ({pid})")
                for pid, cols in policy_batches.items()
            },
            int(row.get("count", 0)),
        )
    raise ValueError(
        f"{where}: not a batch line (its 'type' is {kind!r}; allowed: 'SampleBatch', "
        "'MultiAgentBatch')"
    )
