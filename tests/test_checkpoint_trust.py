"""Checkpoints you can trust: a manifest of every file's size and SHA-256, checked before a
restore reads anything; a save that fails midway leaves the earlier checkpoints as they were,
and ``rlconf train`` goes on with a warning, its checkpoint keeper deleting none for it."""

from __future__ import annotations

import errno
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

import runtime.training.checkpoint_files as checkpoint_files
from rlconf import PPOConfig
from rlconf.cli import main
from runtime import Algorithm
from runtime.training.checkpoint_files import CheckpointError
from runtime.training.checkpoint_manifest import MANIFEST_FILE
from tests.test_cli import TRAIN_SMALL_PPO

SMALL = {"num_workers": 0, "train_batch_size": 200, "sgd_minibatch_size": 100, "num_sgd_iter": 1}


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A PPO checkpoint after one iteration (copied by each test that damages it)."""
    algo = PPOConfig().environment("CartPole-v1").update_from_dict(SMALL).build()
    try:
        algo.train()
        yield Path(algo.save(str(tmp_path_factory.mktemp("saved"))))
    finally:
        algo.stop()


def _copy(saved: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(saved, tmp_path / saved.name))


def _largest(folder: Path, suffix: str) -> Path:
    return max(folder.rglob(f"*{suffix}"), key=lambda p: p.stat().st_size)


def test_the_manifest_lists_every_file_with_its_size_and_digest(saved: Path) -> None:
    manifest = json.loads((saved / MANIFEST_FILE).read_text())
    files = {p.relative_to(saved).as_posix() for p in saved.rglob("*") if p.is_file()}
    assert set(manifest["files"]) == files - {MANIFEST_FILE}
    assert "algorithm_state.json" in manifest["files"]
    assert any(name.endswith(".pt") for name in manifest["files"])
    for name, entry in manifest["files"].items():
        assert entry["bytes"] == (saved / name).stat().st_size
        assert len(entry["sha256"]) == 64
    Algorithm.from_checkpoint(str(saved)).stop()


@pytest.mark.parametrize(
    ("damage", "says"),
    [
        ("truncate", r"has \d+ bytes, \d+ when it was written \(truncated\?\)"),
        ("alter", r"differs from the file that was written \(its SHA-256 changed\)"),
        ("delete", "is missing"),
    ],
)
def test_a_damaged_file_is_named_before_anything_is_read(
    saved: Path, tmp_path: Path, damage: str, says: str
) -> None:
    folder = _copy(saved, tmp_path)
    victim = _largest(folder, ".pt")
    data = victim.read_bytes()
    if damage == "truncate":
        victim.write_bytes(data[: len(data) // 2])
    elif damage == "alter":
        victim.write_bytes(data[:-1] + bytes([data[-1] ^ 0xFF]))
    else:
        victim.unlink()
    name = victim.relative_to(folder).as_posix()
    with pytest.raises(CheckpointError, match=rf"damaged and was not restored: {name} {says}"):
        Algorithm.from_checkpoint(str(folder))
    algo = PPOConfig().environment("CartPole-v1").update_from_dict(SMALL).build()
    try:
        with pytest.raises(CheckpointError, match=name):
            algo.restore(str(folder))
    finally:
        algo.stop()


def _full_disk(monkeypatch: pytest.MonkeyPatch, after: int) -> list[int]:
    """From the ``after``-th tensor file on, writing one fails as on a full disk."""
    real_save = torch.save
    calls = [0]

    def save(obj: Any, handle: Any) -> None:
        calls[0] += 1
        if calls[0] > after:
            raise OSError(errno.ENOSPC, "No space left on device")
        real_save(obj, handle)

    monkeypatch.setattr(torch, "save", save)
    return calls


def test_a_save_that_fails_midway_leaves_the_earlier_checkpoint_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    algo = PPOConfig().environment("CartPole-v1").update_from_dict(SMALL).build()
    try:
        algo.train()
        first = Path(algo.save(str(tmp_path)))
        algo.train()
        _full_disk(monkeypatch, after=1)  # the second file of the next checkpoint fails
        with pytest.raises(CheckpointError, match=r"iteration 2 .*No space left on device"):
            algo.save(str(tmp_path))
        monkeypatch.undo()
        # Nothing half-written is left beside it, and the first checkpoint still restores.
        assert sorted(p.name for p in tmp_path.iterdir()) == [first.name]
        algo.restore(str(first))
        assert algo.iteration == 1
    finally:
        algo.stop()


def test_rlconf_train_goes_on_when_a_checkpoint_cannot_be_written_and_keeps_the_good_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Iteration 1's checkpoint is written; every later one fails midway (the disk is full).
    real = checkpoint_files.write_files

    def write_files(folder: Path, *args: Any, **kwargs: Any) -> None:
        if not folder.name.startswith(".checkpoint_000001"):
            (folder / "policies").mkdir(exist_ok=True)
            (folder / "policies" / "half.pt").write_bytes(b"\0" * 100)
            raise OSError(errno.ENOSPC, "No space left on device")
        real(folder, *args, **kwargs)

    monkeypatch.setattr(checkpoint_files, "write_files", write_files)
    code = main(
        [
            *TRAIN_SMALL_PPO,
            "--stop",
            '{"training_iteration": 3}',
            "--checkpoint-freq",
            "1",
            "--keep-checkpoints-num",
            "1",
            "--checkpoint-at-end",
            "--local-dir",
            str(tmp_path),
        ]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    assert out.count("could not be written") == 3, out  # iterations 2 and 3, and the end
    (run,) = tmp_path.iterdir()
    kept = sorted(p.name for p in run.iterdir() if p.name.startswith("checkpoint_"))
    assert kept == ["checkpoint_000001"]
    assert not [p for p in run.iterdir() if p.name.startswith(".checkpoint_")]
    # The run's summary names the last good checkpoint.
    (final,) = [x for x in out.splitlines() if x.strip().startswith("checkpoint: ")][-1:]
    assert final.strip().endswith("checkpoint_000001"), out
    monkeypatch.undo()
    Algorithm.from_checkpoint(str(run / "checkpoint_000001")).stop()
