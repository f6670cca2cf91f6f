"""Checkpoint files: weights and optimizer state as torch tensors (loaded with
``weights_only=True``, so no arbitrary object is ever unpickled), everything else as JSON.

A checkpoint is written into a temporary sibling folder and renamed into place, so a crash
while saving leaves every earlier checkpoint as it was; its manifest (every file's size and
SHA-256, ``checkpoint_manifest``) is written last and checked before a restore reads a file.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import torch

from rlconf.algorithm_config import AlgorithmConfig
from runtime.training.checkpoint_manifest import manifest_problem, write_manifest

STATE_FILE = "algorithm_state.json"
FORMAT = "rlconf-checkpoint/2"


class CheckpointError(ValueError):
    """A folder is not a readable rlconf checkpoint."""


def write_checkpoint(
    path: str | os.PathLike[str],
    state: Mapping[str, Any],
    tensors: Mapping[str, Mapping[str, Any]],
    arrays: Mapping[str, Mapping[str, Any]] | None = None,
    manifest: bool = True,
) -> str:
    """Write ``state`` (JSON), ``tensors`` (file stem -> state dict) and ``arrays`` (file stem
    -> named numpy arrays) atomically to ``path``, with their manifest unless ``manifest`` is
    False."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
    try:
        write_files(tmp, state, tensors, arrays, manifest=manifest)
        _fsync_dir(tmp)
        if target.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{target.name}.old-", dir=target.parent))
            old.rmdir()
            os.replace(target, old)
            os.replace(tmp, target)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, target)
        _fsync_dir(target.parent)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return str(target)


def write_files(
    folder: Path,
    state: Mapping[str, Any],
    tensors: Mapping[str, Mapping[str, Any]],
    arrays: Mapping[str, Mapping[str, Any]] | None = None,
    manifest: bool = True,
) -> None:
    """The files of a checkpoint; the state file after the others (it is what makes a folder
    one), then (unless ``manifest`` is False) the manifest of them all."""
    for stem, named in (arrays or {}).items():
        write_arrays(folder, stem, named)
    for stem, tensor_dict in tensors.items():
        file = folder / f"{stem}.pt"
        file.parent.mkdir(parents=True, exist_ok=True)
        with open(file, "wb") as handle:
            torch.save(dict(tensor_dict), handle)
            handle.flush()
            os.fsync(handle.fileno())
    with open(folder / STATE_FILE, "w", encoding="utf-8") as handle:
        json.dump({"format": FORMAT, **_jsonable(state)}, handle, indent=2, allow_nan=False)
        handle.flush()
        os.fsync(handle.fileno())
    if manifest:
        write_manifest(folder)


def verify_checkpoint(path: str | os.PathLike[str]) -> None:
    """Raise ``CheckpointError`` naming the file when a file of the checkpoint at ``path`` is
    missing, truncated or altered since it was written."""
    problem = manifest_problem(Path(path))
    if problem is not None:
        raise CheckpointError(
            f"{os.fspath(path)} is damaged and was not restored: {problem}. Restore an earlier "
            "checkpoint, or save again from a running algorithm"
        )


def read_state(path: str | os.PathLike[str]) -> dict[str, Any]:
    file = Path(path) / STATE_FILE
    if not file.is_file():
        raise CheckpointError(f"{path} is not an rlconf checkpoint: {STATE_FILE} is missing")
    with open(file, encoding="utf-8") as handle:
        state: dict[str, Any] = json.load(handle, parse_constant=_constant)
    if state.get("format") == "rlconf-checkpoint/1":
        raise CheckpointError(
            f"{path} was written by an older rlconf (format 'rlconf-checkpoint/1': one model "
            f"and one optimizer per policy); this version reads {FORMAT!r} (a module and a "
            "learner per policy) and cannot restore it: train again, or load it with the "
            "rlconf version that wrote it"
        )
    if state.get("format") != FORMAT:
        raise CheckpointError(
            f"{file}: unknown checkpoint format {state.get('format')!r}; expected {FORMAT!r}"
        )
    return state


def saved_config(path: str | os.PathLike[str]) -> AlgorithmConfig:
    """The config a checkpoint was written with."""
    state = read_state(path)
    verify_checkpoint(path)
    if state.get("config") is None:
        raise CheckpointError(
            f"{os.fspath(path)}: the config was not saved ({state.get('config_problem')}); "
            "pass config= to from_checkpoint()"
        )
    return AlgorithmConfig.from_json(state["config"])


def read_tensors(
    path: str | os.PathLike[str], stem: str, device: torch.device | str = "cpu"
) -> dict[str, Any]:
    file = Path(path) / f"{stem}.pt"
    if not file.is_file():
        raise CheckpointError(f"{path}: checkpoint file {stem}.pt is missing")
    loaded: dict[str, Any] = torch.load(file, map_location=device, weights_only=True)
    return loaded


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _jsonable(value: Any) -> Any:
    """Non-finite floats become strings so the file is strict JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return {"$float": repr(value)}
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value


def _constant(name: str) -> float:
    return float(name)


def decode_floats(value: Any) -> Any:
    if isinstance(value, dict):
        if set(value) == {"$float"}:
            return float(value["$float"])
        return {k: decode_floats(v) for k, v in value.items()}
    if isinstance(value, list):
        return [decode_floats(v) for v in value]
    return value


#: Named numpy arrays of one ``.npz`` file (file stem -> these in ``extra_checkpoint_state``).
Arrays = dict[str, npt.NDArray[Any]]


def write_arrays(folder: str | os.PathLike[str], stem: str, arrays: Mapping[str, Any]) -> None:
    """Write ``arrays`` to ``<folder>/<stem>.npz`` atomically (a temporary file in the same
    folder, synced, then renamed), so a crash never leaves a truncated file under that name.
    The names go in as the first array and the arrays after it, positionally: any column name
    (even ``file``, a parameter of ``np.savez``) is safe that way."""
    target = Path(folder) / f"{stem}.npz"
    target.parent.mkdir(parents=True, exist_ok=True)
    names = list(arrays)
    for name, values in arrays.items():
        # np.savez pickles object arrays by default; refused here whatever the numpy version.
        if np.asarray(values).dtype == object:
            raise ValueError(f"write_arrays: {name!r} holds Python objects; npz files hold none")
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.tmp-")
    try:
        with os.fdopen(fd, "wb") as handle:
            np.savez(
                handle,
                np.array(names, dtype=np.str_),
                *(np.asarray(arrays[name]) for name in names),
            )
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_arrays(folder: str | os.PathLike[str], stem: str) -> Arrays:
    """The arrays ``write_arrays`` wrote (loaded with ``allow_pickle=False``)."""
    file = Path(folder) / f"{stem}.npz"
    if not file.is_file():
        raise CheckpointError(f"{os.fspath(folder)}: checkpoint file {stem}.npz is missing")
    with np.load(file, allow_pickle=False) as data:
        names = [str(name) for name in data["arr_0"]]
        return {name: data[f"arr_{i + 1}"] for i, name in enumerate(names)}
