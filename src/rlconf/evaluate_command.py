"""``rlconf evaluate CHECKPOINT``: rebuild the algorithm from a checkpoint and run its policy
for a number of episodes or steps in the driver, reporting each episode's return.

CHECKPOINT is a ``checkpoint_<iteration>`` folder, or a results folder holding such folders:
then the one of the highest iteration is used, and the command says which.
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

from rlconf.env_ids import env_issue
from rlconf.errors import ConfigError

_CHECKPOINT_NAME = re.compile(r"checkpoint_(\d+)")


def run_evaluate(
    checkpoint: str,
    *,
    env: str | None = None,
    episodes: int | None = None,
    steps: int | None = None,
    explore: bool | None = None,
    out: str | None = None,
    quiet: bool = False,
) -> int:
    check_evaluate_args(checkpoint, env=env, episodes=episodes, steps=steps)
    from runtime.algorithm import Algorithm
    from runtime.results.result_logger import write_text_atomic
    from runtime.training.checkpoint_files import STATE_FILE, CheckpointError, saved_config

    folder = Path(checkpoint)
    if not (folder / STATE_FILE).is_file() and not _CHECKPOINT_NAME.fullmatch(folder.name):
        checkpoint = str(latest_checkpoint(folder))
        if not quiet:
            print(f"using the latest checkpoint: {checkpoint}", flush=True)
    try:
        config = saved_config(checkpoint).copy()
    except CheckpointError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    by_steps = steps is not None
    overrides = dict(config["evaluation_config"])
    if explore is not None:
        overrides["explore"] = explore
    with tempfile.TemporaryDirectory(prefix="rlconf_evaluate_") as logdir:
        config.update_from_dict(
            {
                # Everything runs in this process: no rollout or evaluation actors.
                "num_workers": 0,
                "evaluation_num_workers": 0,
                "evaluation_interval": None,
                "evaluation_parallel_to_training": False,
                "custom_eval_function": None,
                "evaluation_duration": steps if by_steps else (episodes or 10),
                "evaluation_duration_unit": "timesteps" if by_steps else "episodes",
                "evaluation_config": overrides,
                "logger_config": {"logdir": logdir},
            }
        )
        if env is not None:
            config.environment(env)
        algo = Algorithm.from_checkpoint(checkpoint, config=config)
        try:
            metrics = algo.evaluate()["evaluation"]
        finally:
            algo.stop()
    report = _report(checkpoint, config["env"], metrics)
    if not quiet:
        for line in report_lines(report):
            print(line)
    if out is not None:
        write_text_atomic(Path(out), json.dumps(report, indent=2, allow_nan=False) + "\n")
    return 0


def report_lines(report: dict[str, Any]) -> list[str]:
    """What ``rlconf evaluate`` prints of its report: each episode's return and length, then
    their count, the steps and the mean return, returns to 2 decimals as ``rlconf train``
    prints rewards (the report written by ``--out`` keeps them whole)."""
    returns, lengths = report["episode_returns"], report["episode_lengths"]
    lines = [
        f"episode {i:4d}  return {ret:10.2f}  length {length:6d}"
        for i, (ret, length) in enumerate(zip(returns, lengths, strict=True), start=1)
    ]
    mean = report["episode_reward_mean"]
    summary = "no episode ended" if mean is None else f"mean return {mean:.2f}"
    lines.append(f"{len(returns)} episodes, {report['timesteps']} steps: {summary}")
    return lines


def check_evaluate_args(
    checkpoint: str, *, env: str | None, episodes: int | None, steps: int | None
) -> None:
    """What ``run_evaluate`` can check before it imports the runtime: the counts, the env id,
    and that CHECKPOINT is a folder; a ConfigError naming each flag."""
    for flag, count in (("--episodes", episodes), ("--steps", steps)):
        if count is not None and count < 1:
            raise ConfigError.single(
                "rlconf evaluate", flag, "must be >= 1", value=count, has_value=True
            )
    if env is not None and (problem := env_issue(env, "--env")) is not None:
        raise ConfigError("rlconf evaluate", [problem])
    if not Path(checkpoint).is_dir():
        raise ConfigError.single(
            "rlconf evaluate",
            "CHECKPOINT",
            "is not a folder",
            value=checkpoint,
            has_value=True,
            allowed="a checkpoint_<iteration> folder, or a results folder holding them",
        )


def latest_checkpoint(folder: Path) -> Path:
    """The ``checkpoint_<iteration>`` folder of the highest iteration in ``folder``."""
    where = "rlconf evaluate"
    if not folder.is_dir():
        raise ConfigError.single(
            where,
            "CHECKPOINT",
            "is not a folder",
            value=str(folder),
            has_value=True,
            allowed="a checkpoint_<iteration> folder, or a results folder holding them",
        )
    found = [
        (int(match.group(1)), child)
        for child in folder.iterdir()
        if child.is_dir() and (match := _CHECKPOINT_NAME.fullmatch(child.name))
    ]
    if not found:
        raise ConfigError.single(
            where,
            "CHECKPOINT",
            "is neither a checkpoint nor a results folder holding checkpoint_<iteration> folders",
            value=str(folder),
            has_value=True,
            allowed="a results folder of a run trained with --checkpoint-freq N or "
            "--checkpoint-at-end, or one of its checkpoint_<iteration> folders",
        )
    return max(found)[1]


def _report(checkpoint: str, env: Any, metrics: dict[str, Any]) -> dict[str, Any]:
    returns = [float(r) for r in metrics["hist_stats"]["episode_reward"]]
    return {
        "checkpoint": os.path.abspath(checkpoint),
        "env": env if isinstance(env, str) else repr(env),
        "episode_returns": returns,
        "episode_lengths": [int(n) for n in metrics["hist_stats"]["episode_lengths"]],
        "episode_reward_mean": sum(returns) / len(returns) if returns else None,
        "timesteps": int(metrics["timesteps_this_iter"]),
    }
