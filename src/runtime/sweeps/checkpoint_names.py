"""The checkpoint folders of a sweep's trials named by training iteration,
``checkpoint_<iteration>`` as outside Tune: Tune 2.60 names them by how many checkpoints the
trial had saved before (``checkpoint_000000``, ``checkpoint_000001``, ...), so the best
checkpoint of a 68-iteration trial could be ``checkpoint_000000``.

The folders are renamed once Tune has finished, never while it runs: Tune's checkpoint manager,
PBT's exploits and the recovery of a failed trial find checkpoints by the names Tune gave them,
and names by iteration could collide there (a trial paused right after a periodic checkpoint
saves twice at one iteration; PBT puts a trial back to the earlier iteration of the checkpoint
it copies). Here such a collision is settled: the newest checkpoint of an iteration gets
``checkpoint_<iteration>``, older ones ``checkpoint_<iteration>_1``, ``_2``, ... Each folder's
iteration is read from its own state file. Tune's experiment state (``experiment_state-*.json``,
which ``Tuner.restore`` reads) still names the folders as Tune did.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
from pathlib import Path

from runtime.training.checkpoint_files import CheckpointError, read_state

logger = logging.getLogger(__name__)

#: Tune's names and ours (``checkpoint_<6 digits or more>``), and our older duplicates.
_NAME = re.compile(r"checkpoint_(\d+)(?:_(\d+))?")


def checkpoint_iteration(folder: str | os.PathLike[str]) -> int | None:
    """The training iteration a checkpoint folder holds; None for a folder that is not a
    readable rlconf checkpoint."""
    try:
        return int(read_state(folder)["iteration"])
    except (CheckpointError, OSError, ValueError, KeyError, TypeError):
        return None


def name_by_iteration(trial_dir: str | os.PathLike[str]) -> dict[str, str]:
    """Rename the checkpoint folders in ``trial_dir`` to ``checkpoint_<iteration>``; returns
    each renamed folder's old path -> new path. Folders already so named stay; a folder whose
    new name is held by something else stays as it is."""
    folder = Path(trial_dir)
    if not folder.is_dir():
        return {}
    found: list[tuple[tuple[int, bool, int], Path, int]] = []
    for child in folder.iterdir():
        match = _NAME.fullmatch(child.name)
        if match is None or not child.is_dir():
            continue
        iteration = checkpoint_iteration(child)
        if iteration is not None:
            found.append((_save_order(match), child, iteration))
    found.sort()
    by_iteration: dict[int, list[Path]] = {}
    for _, child, iteration in found:
        by_iteration.setdefault(iteration, []).append(child)
    targets: dict[Path, Path] = {}
    for iteration, children in by_iteration.items():
        *older, newest = children
        targets[newest] = folder / f"checkpoint_{iteration:06d}"
        for number, child in enumerate(older, start=1):
            targets[child] = folder / f"checkpoint_{iteration:06d}_{number}"
    moves = {child: target for child, target in targets.items() if child != target}
    # A name held by a folder that is not moving away (not a checkpoint of ours) is not taken.
    staying = {p.name for p in folder.iterdir()} - {child.name for child in moves}
    for child, target in list(moves.items()):
        if target.name in staying:
            logger.warning("%s: not renamed to %s, which is taken", child, target.name)
            del moves[child]
    # Through temporary names first: a new name may be another folder's old one.
    staged: dict[Path, Path] = {}
    for child in moves:
        temporary = folder / f".{child.name}.renaming"
        try:
            child.rename(temporary)
        except OSError as exc:
            logger.warning("could not rename the checkpoint %s: %s", child, exc)
            continue
        staged[child] = temporary
    renamed: dict[str, str] = {}
    for child, temporary in staged.items():
        try:
            temporary.rename(moves[child])
        except OSError as exc:
            logger.warning("could not rename the checkpoint %s: %s", child, exc)
            with contextlib.suppress(OSError):
                temporary.rename(child)
            continue
        renamed[str(child)] = str(moves[child])
    return renamed


def _save_order(match: re.Match[str]) -> tuple[int, bool, int]:
    """Orders a trial's checkpoint folders as it saved them: by Tune's number (or, named
    already, by iteration), and at one iteration the older ``_1``, ``_2`` before the newest."""
    number, older = match.group(1), match.group(2)
    return (int(number), older is None, int(older or 0))


def checkpoint_folders(trial_dir: str | os.PathLike[str]) -> list[str]:
    """The checkpoint folders in ``trial_dir``, by iteration (then name)."""
    folder = Path(trial_dir)
    if not folder.is_dir():
        return []
    found = [
        (iteration, child.name, str(child))
        for child in folder.iterdir()
        if child.is_dir()
        and _NAME.fullmatch(child.name)
        and (iteration := checkpoint_iteration(child)) is not None
    ]
    return [path for _, _, path in sorted(found)]
