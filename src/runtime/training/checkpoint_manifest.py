"""The manifest of a checkpoint folder: every file's size and SHA-256, written last, so that a
restore can tell a whole checkpoint from a truncated, altered or partly deleted one before it
hands any file to torch or numpy (whose errors would name neither the file nor the cause).

Files the manifest does not list are left alone: Tune adds its own metadata to the checkpoint
folders it manages. A folder without a manifest (written before manifests existed) is read
without the check, with a warning.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from pathlib import Path

logger = logging.getLogger(__name__)

MANIFEST_FILE = "manifest.json"
MANIFEST_FORMAT = "rlconf-checkpoint-manifest/1"
_CHUNK = 1 << 20


def file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def write_manifest(folder: Path) -> None:
    """List every file under ``folder`` (but the manifest) with its size and digest, in a file
    written atomically (a temporary file, synced, then renamed)."""
    files = {
        path.relative_to(folder).as_posix(): {
            "bytes": path.stat().st_size,
            "sha256": file_digest(path),
        }
        for path in sorted(folder.rglob("*"))
        if path.is_file() and path.name != MANIFEST_FILE and not path.name.startswith(".")
    }
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{MANIFEST_FILE}.tmp-")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump({"format": MANIFEST_FORMAT, "files": files}, handle, indent=1)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, folder / MANIFEST_FILE)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def manifest_problem(folder: Path) -> str | None:
    """What is wrong with the files of ``folder`` against its manifest (the first problem
    found, naming the file), or None when every listed file is there, whole and unchanged."""
    manifest = folder / MANIFEST_FILE
    if not manifest.is_file():
        logger.warning(
            "%s has no %s (written before checkpoints had one): its files are not checked",
            folder,
            MANIFEST_FILE,
        )
        return None
    try:
        listed = json.loads(manifest.read_text(encoding="utf-8"))
        files = listed["files"]
        if listed.get("format") != MANIFEST_FORMAT or not isinstance(files, dict):
            raise ValueError(f"format {listed.get('format')!r}")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return f"{MANIFEST_FILE} is unreadable ({exc})"
    for name, expected in files.items():
        path = folder / name
        if not path.is_file():
            return f"{name} is missing"
        size = path.stat().st_size
        if size != expected["bytes"]:
            return f"{name} has {size} bytes, {expected['bytes']} when it was written (truncated?)"
        if file_digest(path) != expected["sha256"]:
            return f"{name} differs from the file that was written (its SHA-256 changed)"
    return None
