"""Runs that share a results folder (``--local-dir``) never write into each other's folders,
even when they start in the same second and so plan the same ``<ALGO>_<ENV>_<time>`` name."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

from runtime.results.result_logger import claim_logdir, planned_logdir
from tests import child_process
from tests.test_cli import TRAIN_SMALL_PPO


def test_racing_claims_of_one_planned_name_each_get_a_folder_of_their_own(tmp_path: Path) -> None:
    planned = planned_logdir("PPO", "CartPole-v1", tmp_path)
    start = threading.Barrier(16)
    claimed: list[Path] = []
    lock = threading.Lock()

    def claim() -> None:
        start.wait()
        path = claim_logdir(planned)
        with lock:
            claimed.append(path)

    threads = [threading.Thread(target=claim) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len({str(p) for p in claimed}) == 16
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in claimed)
    assert planned in claimed  # one of them got the planned name, the others _2 ... _16


def test_two_cli_runs_started_together_keep_their_own_files(tmp_path: Path) -> None:
    command = [
        sys.executable,
        "-m",
        "rlconf.cli",
        *TRAIN_SMALL_PPO,
        "--stop",
        '{"training_iteration": 2}',
        "--checkpoint-at-end",
        "--local-dir",
        str(tmp_path),
    ]
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    procs = [child_process.start(command, env=os.environ.copy(), **quiet) for _ in range(2)]
    try:
        codes = [proc.wait(timeout=120) for proc in procs]
    finally:
        for proc in procs:
            child_process.kill(proc)
    assert codes == [0, 0]
    folders = sorted(tmp_path.iterdir())
    assert len(folders) == 2
    pids = set()
    for folder in folders:
        rows = [json.loads(x) for x in (folder / "result.json").read_text().splitlines()]
        assert [row["training_iteration"] for row in rows] == [1, 2]
        assert len({row["pid"] for row in rows}) == 1  # every row from one process
        pids.add(rows[0]["pid"])
        assert (folder / "params.json").is_file() and (folder / "progress.csv").is_file()
        assert [p.name for p in folder.glob("checkpoint_*")] == ["checkpoint_000002"]
    assert pids == {proc.pid for proc in procs}
