"""``rlconf train --resume RUN_FOLDER`` goes on with a killed run from its last good checkpoint,
in its own folder, to the same end as a run that was never stopped."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from rlconf.cli import main
from tests import child_process
from tests.test_cli import TRAIN_SMALL_PPO

TRAIN = [
    sys.executable,
    "-m",
    "rlconf.cli",
    *TRAIN_SMALL_PPO,
    "--stop",
    '{"training_iteration": 6}',
    "--checkpoint-freq",
    "2",
]


def _rows(folder: Path) -> list[dict[str, object]]:
    return [json.loads(x) for x in (folder / "result.json").read_text().splitlines()]


@pytest.mark.slow
def test_a_run_killed_with_sigkill_resumes_to_the_steps_of_an_uninterrupted_one(
    tmp_path: Path,
) -> None:
    whole = child_process.run(
        [*TRAIN, "-q", "--local-dir", str(tmp_path / "whole")], capture_output=True, text=True
    )
    assert whole.returncode == 0, whole.stderr[-2000:]
    (whole_run,) = (tmp_path / "whole").iterdir()

    # Killed at once after iteration 5's row: its checkpoint of iteration 4 is the newest.
    with child_process.popen(
        [*TRAIN, "--local-dir", str(tmp_path / "killed")],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=os.environ.copy(),
    ) as process:
        assert process.stdout is not None
        for line in process.stdout:
            if line.startswith("iter    5/6"):
                os.killpg(process.pid, signal.SIGKILL)
                break
        process.wait(timeout=60)
    (killed,) = (tmp_path / "killed").iterdir()
    assert {p.name for p in killed.glob("checkpoint_*")} == {
        "checkpoint_000002",
        "checkpoint_000004",
    }

    resumed = child_process.run(
        [sys.executable, "-m", "rlconf.cli", "train", "--resume", str(killed)],
        capture_output=True,
        text=True,
    )
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert "resuming from" in resumed.stderr and "checkpoint_000004 (iteration 4)" in resumed.stderr
    rows, whole_rows = _rows(killed), _rows(whole_run)
    # Each iteration once, in order; the same steps and counters at the end.
    assert [r["training_iteration"] for r in rows] == [1, 2, 3, 4, 5, 6]
    for key in ("timesteps_total", "training_iteration"):
        assert rows[-1][key] == whole_rows[-1][key]
    progress = (killed / "progress.csv").read_text().splitlines()
    assert len(progress) == 1 + 6
    assert (killed / "checkpoint_000006").is_dir()


def test_resume_refuses_the_flags_that_would_change_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["train", "--resume", str(tmp_path), "--stop", '{"training_iteration": 9}'])
    assert code == 2
    assert "--stop would change it" in capsys.readouterr().err


def test_resume_names_a_folder_that_is_no_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["train", "--resume", str(tmp_path)]) == 2
    assert "has no run.json" in capsys.readouterr().err
