"""``rlconf train``: build an algorithm from the command line and train it until a stop
criterion is met, printing one progress line per iteration.

The config, the env id and the stop criteria are validated before torch or ray is imported, so
a typo fails in milliseconds; stop keys whose names depend on the run are confirmed against the
first result that can hold them (see ``rlconf.stop_criteria``).

SIGINT (Ctrl-C) and SIGTERM stop the run after the current iteration, write a checkpoint and
exit with 128 + the signal's number (130, 143), whatever dispositions the process inherited: a
process started with SIGINT ignored (nohup, a CI runner, ``trap "" INT``) gets no
KeyboardInterrupt from Python, so ``rlconf train`` installs handlers of its own while it runs.
A second signal stops the iteration at once.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

from rlconf.checkpoint_keeper import CheckpointKeeper
from rlconf.errors import ConfigError
from rlconf.experiment import Experiment
from rlconf.resume_run import Resume, rows_up_to, write_run_file
from rlconf.stop_criteria import StopCriteria
from rlconf.train_progress import RunEnd, TrainProgress, final_lines

#: The signals that stop ``rlconf train``: Ctrl-C, and what ``kill``, systemd, Docker and CI
#: runners send.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)

#: What ``signal.getsignal`` returns.
_Handler = Callable[[int, FrameType | None], Any] | int | signal.Handlers | None


class StopSignals:
    """SIGINT and SIGTERM handlers for a training loop, installed by ``with StopSignals() as
    signals:`` whatever dispositions the process inherited, and the previous ones restored when
    the block ends (``rlconf.cli.main`` may run in a process of someone else's).

    The first signal asks the loop to stop: ``signals.signum`` becomes its number, and the loop
    looks at it after each iteration. A second one raises KeyboardInterrupt wherever the process
    is, to stop at once. Outside the main thread, where Python can't install handlers, nothing
    is installed (``signum`` stays None).
    """

    def __init__(self) -> None:
        self.signum: int | None = None
        self._previous: dict[int, _Handler] = {}

    def __enter__(self) -> StopSignals:
        if threading.current_thread() is threading.main_thread():
            self._previous = {signum: signal.getsignal(signum) for signum in STOP_SIGNALS}
            self.install()
        return self

    def install(self) -> None:
        """Install the handlers (again: ``ray.init()`` puts a SIGTERM handler of its own in)."""
        if self._previous:
            for signum in STOP_SIGNALS:
                signal.signal(signum, self._handle)

    def __exit__(self, *_exc_info: object) -> None:
        for signum, handler in self._previous.items():
            # None: a handler not installed from Python, which Python can't put back.
            signal.signal(signum, signal.SIG_DFL if handler is None else handler)
        self._previous = {}

    def _handle(self, signum: int, _frame: FrameType | None) -> None:
        if self.signum is not None:
            raise KeyboardInterrupt
        self.signum = signum
        name = signal.Signals(signum).name
        message = f"{name}: stopping after this iteration ({name} again: at once)\n"
        # Not sys.stderr: the signal may have come in the middle of a write to it.
        with contextlib.suppress(OSError):
            os.write(2, message.encode())


def run_train(
    experiment: Experiment,
    quiet: bool = False,
    log_level: str | None = None,
    resume: Resume | None = None,
) -> int:
    """Train until a stop criterion is met; checkpoints go into the run's results directory.
    With ``resume``, the run goes on from its checkpoint in its own folder.

    SIGINT or SIGTERM (see ``StopSignals``) stops the run: a checkpoint is written and the code
    is 128 + the signal's number (130 for Ctrl-C, 143 for SIGTERM)."""
    config = experiment.config
    if log_level is not None:
        config = config.copy().debugging(log_level=log_level)  # type: ignore[arg-type]
    if not experiment.stop:
        print("no stop criterion given: training until interrupted (Ctrl-C)", file=sys.stderr)
    criteria = StopCriteria(experiment.stop, config, where=f"rlconf train ({experiment.name})")
    with StopSignals() as signals:
        kept = [] if resume is None else rows_up_to(Path(algo_folder(config)), resume.iteration)
        algo = config.build()
        signals.install()  # ray.init() (remote workers) replaced the SIGTERM handler
        keeper = CheckpointKeeper(
            experiment.keep_checkpoints_num, experiment.checkpoint_score_attr
        )
        if resume is not None:
            algo.restore(resume.checkpoint)
            _keep_earlier_checkpoints(keeper, Path(algo.logdir), kept)
        return _train(algo, experiment, criteria, signals, quiet, keeper)


def algo_folder(config: Any) -> str:
    """The results folder a resumed run writes into (its ``logger_config["logdir"]``)."""
    return str(dict(config["logger_config"] or {})["logdir"])


def _keep_earlier_checkpoints(
    keeper: CheckpointKeeper, folder: Path, rows: list[dict[str, Any]]
) -> None:
    """Hand the keeper the checkpoints written before the resume, each with its iteration's
    result, so that ``keep_checkpoints_num`` goes on ranking them."""
    for row in rows:
        keeper.observe(row)
        path = folder / f"checkpoint_{int(row['training_iteration']):06d}"
        if path.is_dir():
            keeper.saved(str(path), row)


def _train(
    algo: Any,
    experiment: Experiment,
    criteria: StopCriteria,
    signals: StopSignals,
    quiet: bool,
    keeper: CheckpointKeeper,
) -> int:
    progress = TrainProgress(experiment.name, experiment.stop, quiet=quiet)
    try:
        return _train_loop(algo, experiment, criteria, signals, progress, keeper)
    finally:
        progress.close()


def _train_loop(
    algo: Any,
    experiment: Experiment,
    criteria: StopCriteria,
    signals: StopSignals,
    progress: TrainProgress,
    keeper: CheckpointKeeper,
) -> int:
    progress.write(f"{experiment.name}: results in {algo.logdir}")
    result: dict[str, Any] = {}
    checkpoint: str | None = None
    reached = False
    recorded = False
    try:
        while signals.signum is None:
            result = algo.train()
            if not recorded:
                # The folder exists once results are written: what --resume reads back.
                write_run_file(algo.logdir, experiment)
                recorded = True
            keeper.observe(result)  # an iteration without the score key carries its latest
            iteration = int(result["training_iteration"])
            progress.result(result)
            if experiment.checkpoint_freq and iteration % experiment.checkpoint_freq == 0:
                saved = _save(algo, keeper, result, progress)
                if saved is not None:
                    checkpoint = saved
                    progress.write(f"checkpoint: {checkpoint}")
            if criteria.reached(result):
                reached = True
                break
    except KeyboardInterrupt:
        pass  # a second signal (or Ctrl-C where no handler of ours is installed): stop now
    except ConfigError:
        algo.stop()
        raise
    signum = signals.signum or signal.SIGINT
    if not reached:
        progress.close()
        print("interrupted: writing a checkpoint", file=sys.stderr)
        checkpoint = _save(algo, keeper, result, progress) or checkpoint
    elif experiment.checkpoint_at_end:
        checkpoint = _save(algo, keeper, result, progress) or checkpoint
    logdir = str(algo.logdir)
    algo.stop()
    end = RunEnd(
        result=result,
        criteria=progress.last,
        elapsed_s=progress.elapsed_s,
        logdir=logdir,
        checkpoint=checkpoint,
        **_best(keeper),
        signal=None if reached else signal.Signals(signum).name,
    )
    progress.close()
    for line in final_lines(end):
        progress.write(line, always=not reached)
    return 0 if reached else 128 + signum


def _save(
    algo: Any, keeper: CheckpointKeeper, result: dict[str, Any], progress: TrainProgress
) -> str | None:
    """Write a checkpoint and hand it to the keeper; where it can't be written (a full disk),
    warn and go on: the run keeps training and its earlier checkpoints stay as they were, none
    of them deleted for the one that failed."""
    from runtime.training.checkpoint_files import CheckpointError

    try:
        path = str(algo.save())
    except CheckpointError as exc:
        progress.write(f"warning: {exc}", always=True)
        return None
    keeper.saved(path, result)
    return path


def _best(keeper: CheckpointKeeper) -> dict[str, Any]:
    """``RunEnd``'s fields for the best checkpoint, when a score key ranks them."""
    if keeper.score_attr is None or keeper.best is None:
        return {}
    (best,) = (k for k in keeper.kept if k.path == keeper.best)
    return {"best_checkpoint": best.path, "best_score": best.score, "score_attr": keeper.score_attr}
