"""``rlconf train --resume RUN_FOLDER``: go on with a run from its last good checkpoint after
Ctrl-C, a crash or a killed machine.

``rlconf train`` writes ``run.json`` into each run's folder when it starts: the experiment (its
config, stop criteria and checkpoint settings). A resume reads it back, takes the newest
``checkpoint_<iteration>`` whose files pass their manifest (a damaged newer one is named and
passed over), drops the rows of ``result.json`` and ``progress.csv`` written after that
iteration (the resumed run writes them again), removes the half-written folders a killed save
left, and trains on in the same folder until the stop criteria, with the counters, schedules,
optimizer state and (with ``store_buffer_in_checkpoints``) replay buffer of the checkpoint.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlconf.algorithm_config import AlgorithmConfig
from rlconf.errors import ConfigError
from rlconf.experiment import Experiment

RUN_FILE = "run.json"
_WHERE = "rlconf train --resume"


@dataclass(frozen=True)
class Resume:
    """A run to go on with: its experiment (results into its own folder) and the checkpoint."""

    experiment: Experiment
    checkpoint: str
    iteration: int


def write_run_file(logdir: str | os.PathLike[str], experiment: Experiment) -> None:
    """``run.json``: what ``--resume`` needs to go on with this run."""
    record = {
        "name": experiment.name,
        "run": experiment.run,
        "config": experiment.config.to_json(),
        "stop": experiment.stop,
        "checkpoint_freq": experiment.checkpoint_freq,
        "checkpoint_at_end": experiment.checkpoint_at_end,
        "keep_checkpoints_num": experiment.keep_checkpoints_num,
        "checkpoint_score_attr": experiment.checkpoint_score_attr,
    }
    path = Path(logdir) / RUN_FILE
    tmp = path.with_name(f".{RUN_FILE}.tmp-{os.getpid()}")
    tmp.write_text(json.dumps(record, indent=1), encoding="utf-8")
    os.replace(tmp, path)


def _iteration(folder: Path) -> int | None:
    prefix, _, number = folder.name.partition("_")
    return int(number) if prefix == "checkpoint" and number.isdigit() else None


def latest_good_checkpoint(folder: Path) -> tuple[str, int] | None:
    """The newest checkpoint of the run whose files are whole, and its iteration."""
    from runtime.training.checkpoint_files import CheckpointError, read_state, verify_checkpoint

    found = [(it, p) for p in folder.iterdir() if p.is_dir() and (it := _iteration(p))]
    for iteration, path in sorted(found, reverse=True):
        try:
            read_state(path)
            verify_checkpoint(path)
        except (CheckpointError, OSError, ValueError) as exc:
            print(f"{_WHERE}: passing over {path.name}: {exc}", file=sys.stderr)
            continue
        return str(path), iteration
    return None


def load_resume(run_folder: str) -> Resume:
    """The run in ``run_folder``, set to go on from its last good checkpoint; a ConfigError
    where there is no such run or no checkpoint to go on from."""
    folder = Path(run_folder).expanduser()
    record_path = folder / RUN_FILE
    if not record_path.is_file():
        raise ConfigError.single(
            _WHERE,
            "RUN_FOLDER",
            f"has no {RUN_FILE}: it is not the results folder of an `rlconf train` run "
            "(sweeps resume through Tune)",
            value=run_folder,
            has_value=True,
        )
    record: dict[str, Any] = json.loads(record_path.read_text(encoding="utf-8"))
    latest = latest_good_checkpoint(folder)
    if latest is None:
        raise ConfigError.single(
            _WHERE,
            "RUN_FOLDER",
            "holds no whole checkpoint to go on from (train with --checkpoint-freq N to write "
            "them as the run goes; Ctrl-C and SIGTERM write one too)",
            value=run_folder,
            has_value=True,
        )
    config = AlgorithmConfig.from_json(record["config"])
    logger_config = dict(config["logger_config"] or {})
    config = config.debugging(logger_config={**logger_config, "logdir": str(folder)})
    experiment = Experiment(
        name=record["name"],
        run=record["run"],
        config=config,
        stop=record["stop"],
        checkpoint_freq=record["checkpoint_freq"],
        checkpoint_at_end=record["checkpoint_at_end"],
        keep_checkpoints_num=record["keep_checkpoints_num"],
        checkpoint_score_attr=record["checkpoint_score_attr"],
    )
    return Resume(experiment, latest[0], latest[1])


def rows_up_to(folder: Path, iteration: int) -> list[dict[str, Any]]:
    """Keep the results of iterations up to ``iteration`` (``result.json``, ``progress.csv``)
    and remove what a killed save left half-written; the rows kept, in order."""
    for stale in folder.glob(".checkpoint_*"):
        shutil.rmtree(stale, ignore_errors=True)
    kept: list[dict[str, Any]] = []
    result_file = folder / "result.json"
    if result_file.is_file():
        lines = []
        for line in result_file.read_text(encoding="utf-8").splitlines():
            try:
                row = json.loads(line)
            except ValueError:
                continue  # the line a kill cut short
            if int(row.get("training_iteration", 0)) <= iteration:
                kept.append(row)
                lines.append(line + "\n")
        _replace(result_file, "".join(lines))
    progress = folder / "progress.csv"
    if progress.is_file():
        with open(progress, newline="", encoding="utf-8") as handle:
            reader = csv.DictReader(handle)
            columns = list(reader.fieldnames or [])
            rows = [r for r in reader if _row_iteration(r) <= iteration]
        tmp = progress.with_name(f".{progress.name}.tmp-{os.getpid()}")
        with open(tmp, "w", newline="", encoding="utf-8") as out:
            writer = csv.DictWriter(out, columns)
            writer.writeheader()
            writer.writerows(rows)
        os.replace(tmp, progress)
    return kept


def _row_iteration(row: dict[str, str]) -> int:
    try:
        return int(float(row.get("training_iteration") or 0))
    except ValueError:
        return sys.maxsize  # a row a kill cut short goes


def _replace(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
