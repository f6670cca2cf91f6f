"""``rlconf train``: build an algorithm from the command line and train it until a stop
criterion is met, printing one progress line per iteration.

The config, the env id and the stop criteria are validated before torch or ray is imported, so
a typo fails in milliseconds; stop keys whose names depend on the run are confirmed against the
first result that can hold them (see ``rlconf.stop_criteria``).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping
from typing import Any

from rlconf.errors import ConfigError
from rlconf.experiment import Experiment
from rlconf.stop_criteria import StopCriteria


def progress_line(result: Mapping[str, Any], started: float) -> str:
    elapsed = time.perf_counter() - started
    iteration = int(result["training_iteration"])
    return (
        f"iter {iteration:4d}  steps {int(result['timesteps_total']):8d}  "
        f"reward {result['episode_reward_mean']:8.2f}  "
        f"len {result['episode_len_mean']:7.1f}  time {elapsed:7.1f}s  "
        f"({iteration / max(elapsed, 1e-9):.2f} it/s)"
    )


def run_train(experiment: Experiment, quiet: bool = False, log_level: str | None = None) -> int:
    """Train until a stop criterion is met; checkpoints go into the run's results directory."""
    config = experiment.config
    if log_level is not None:
        config = config.copy().debugging(log_level=log_level)  # type: ignore[arg-type]
    if not experiment.stop:
        print("no stop criterion given: training until interrupted (Ctrl-C)", file=sys.stderr)
    criteria = StopCriteria(experiment.stop, config, where=f"rlconf train ({experiment.name})")
    algo = config.build()
    if not quiet:
        print(f"{experiment.name}: results in {algo.logdir}", flush=True)
    started = time.perf_counter()
    result: dict[str, Any] = {}
    try:
        while True:
            result = algo.train()
            iteration = int(result["training_iteration"])
            if not quiet:
                print(progress_line(result, started), flush=True)
            if experiment.checkpoint_freq and iteration % experiment.checkpoint_freq == 0:
                _report_checkpoint(algo.save(), quiet)
            if criteria.reached(result):
                break
    except KeyboardInterrupt:
        print("interrupted: writing a checkpoint", file=sys.stderr)
        _report_checkpoint(algo.save(), quiet=False)
        algo.stop()
        return 130
    except ConfigError:
        algo.stop()
        raise
    if experiment.checkpoint_at_end:
        _report_checkpoint(algo.save(), quiet)
    algo.stop()
    if not quiet and result:
        print(
            f"done: reward {result['episode_reward_mean']:.2f} after "
            f"{int(result['timesteps_total'])} steps"
        )
    return 0


def _report_checkpoint(path: str, quiet: bool) -> None:
    if not quiet:
        print(f"checkpoint: {path}", flush=True)
