"""TensorBoard event files (tensorboardX): one event per iteration holding a result's scalars
(``runtime.results.result_logger.scalars``: tagged with their flattened keys,
``episode_reward_mean``, ``evaluation/episode_reward_mean``), stepped by ``timesteps_total``.

``ResultLogger`` writes them outside Tune and ``runtime.sweeps.tensorboard_logger`` for each
trial of a sweep, so a sweep's trials and a single run have the same tags. Without tensorboardX
installed nothing is written (a note is logged once).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Any

logger = logging.getLogger(__name__)

#: Whether the note that TensorBoard files are skipped (no tensorboardX) was logged already.
_noted_no_tensorboard = False


class EventFile:
    """The event file of one run in ``logdir``, made at the first result."""

    def __init__(self, logdir: str | os.PathLike[str]) -> None:
        self.logdir = os.fspath(logdir)
        self._writer: Any = None
        #: False once tensorboardX was found missing: no event files for this run.
        self._enabled = True

    def write(self, values: Mapping[str, float], step: int) -> None:
        """Write ``values`` (tag -> number) as one event at ``step``."""
        writer = self._open()
        if writer is None:
            return
        from tensorboardX.proto.summary_pb2 import Summary

        summary = Summary(
            value=[Summary.Value(tag=tag, simple_value=v) for tag, v in values.items()]
        )
        # One event per iteration holding every scalar (not one event per key).
        writer.add_summary(summary, global_step=step)

    def add_summary(self, summary: Any) -> None:
        """Write a tensorboardX ``Summary`` of another kind (a sweep's hparams)."""
        writer = self._open()
        if writer is not None:
            writer.add_summary(summary)

    def _open(self) -> Any:
        if self._writer is None and self._enabled:
            try:
                from tensorboardX import FileWriter
            except ImportError:
                self._enabled = False
                _note_no_tensorboard()
                return None
            self._writer = FileWriter(self.logdir, flush_secs=30)
        return self._writer

    def flush(self) -> None:
        if self._writer is not None:
            self._writer.flush()

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None


def _note_no_tensorboard() -> None:
    global _noted_no_tensorboard
    if not _noted_no_tensorboard:
        _noted_no_tensorboard = True
        logger.warning(
            "tensorboardX is not installed: no TensorBoard event files are written "
            "(result.json and progress.csv are); `pip install tensorboardX` to get them"
        )
