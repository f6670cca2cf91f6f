"""``Trainable``: Ray Tune's train / save / restore protocol, without importing Tune.

Importing ``ray.tune`` costs about a second and 100 MB, which the embedded default (one process,
no Ray) should not pay. So ``Algorithm`` derives from this class, which does outside a Tune trial
what Tune's ``Trainable`` does: count iterations and time, fill the same result keys, call
``step()``, ``log_result()`` and ``cleanup()``.

Tune needs ``issubclass(PPO, ray.tune.Trainable)``: once ``ray.tune`` is imported in the process,
``runtime.cluster.tune_support`` makes Tune's class the base of this one. Inside a Tune trial
(Tune passes ``storage``) every method here hands over to Tune's own. Every method Tune calls
on a trial actor is defined here, so that a Ray worker that loads the class before ``ray.tune``
is imported still knows all of them.
"""

from __future__ import annotations

import copy
import os
import platform
import socket
import time
from datetime import datetime
from typing import Any


class TuneBaseSlot:
    """Stands where ``ray.tune.Trainable`` goes once Tune is imported (same instance layout, so
    the base can be swapped)."""


class Trainable(TuneBaseSlot):
    """``train()`` -> ``step()`` with Tune's bookkeeping; see the module docstring."""

    _iteration: int
    _time_total: float
    _timesteps_total: int | None
    _episodes_total: int | None
    _time_since_restore: float
    _timesteps_since_restore: int
    _iterations_since_restore: int
    _last_result: dict[str, Any] | None
    _restored: bool

    def __init__(
        self, config: dict[str, Any] | None = None, storage: Any = None, **kwargs: Any
    ) -> None:
        if storage is not None:
            # A Tune trial: Tune's Trainable does the bookkeeping (and calls setup()).
            from runtime.cluster.tune_support import enable_tune

            enable_tune()
            super().__init__(config, storage=storage, **kwargs)  # type: ignore[call-arg]
            return
        if kwargs:
            raise TypeError(f"unexpected arguments: {', '.join(sorted(kwargs))}")
        self.config: Any = dict(config or {})
        self._storage: Any = None
        self._logdir: str | None = None
        self._restart_progress()
        self._setup_logdir()
        self.setup(copy.deepcopy(self.config))

    # ------------------------------------------------------------------ for subclasses

    def _setup_logdir(self) -> None:
        """Choose ``self._logdir`` (Tune's trial folder inside a trial)."""
        if self._in_tune_trial:
            super()._setup_logdir()  # type: ignore[misc]

    def setup(self, config: dict[str, Any]) -> None:
        """Build everything; called by ``__init__`` (and by a ``reset_config`` that builds
        again)."""

    def step(self) -> dict[str, Any]:
        """One iteration of training; returns its results."""
        raise TypeError(f"{type(self).__name__} does not implement step()")

    def log_result(self, result: dict[str, Any]) -> None:
        """Called by ``train()`` with every result."""

    def cleanup(self) -> None:
        """Release everything; called by ``stop()`` (and by a ``reset_config`` that builds
        again)."""

    def reset_config(self, new_config: dict[str, Any]) -> bool:
        """Take ``new_config`` in place (Tune's ``reset()`` calls it to reuse a trial actor);
        False: this trainable can't."""
        return False

    def _restart_progress(self) -> None:
        """Iterations, time and timesteps from zero, as in a new trainable (the attributes
        Tune's ``reset()`` zeroes, which a checkpoint restored afterwards sets again)."""
        self._iteration = 0
        self._time_total = 0.0
        self._timesteps_total = None
        self._episodes_total = None
        self._time_since_restore = 0.0
        self._timesteps_since_restore = 0
        self._iterations_since_restore = 0
        self._last_result = None
        self._restored = False

    # ------------------------------------------------------------------ the protocol

    @property
    def _in_tune_trial(self) -> bool:
        return self._storage is not None

    def train(self) -> dict[str, Any]:
        """One iteration: ``step()``, then the keys Tune fills in every result (training_iteration,
        time_this_iter_s, time_total_s, timesteps_total, date, pid, ...)."""
        if self._in_tune_trial:
            result: dict[str, Any] = super().train()  # type: ignore[misc]
            return result
        start = time.time()
        result = self.step()
        if not isinstance(result, dict):
            raise TypeError(f"{type(self).__name__}.step() returned {type(result).__name__}")
        result = dict(result)
        self._iteration += 1
        self._iterations_since_restore += 1
        time_this_iter = result.get("time_this_iter_s")
        if time_this_iter is None:
            time_this_iter = time.time() - start
        self._time_total += time_this_iter
        self._time_since_restore += time_this_iter
        result.setdefault("done", False)
        if result.get("timesteps_this_iter") is not None:
            self._timesteps_total = (self._timesteps_total or 0) + result["timesteps_this_iter"]
            self._timesteps_since_restore += result["timesteps_this_iter"]
        if result.get("episodes_this_iter") is not None:
            self._episodes_total = (self._episodes_total or 0) + result["episodes_this_iter"]
        if self._timesteps_total is not None:
            result.setdefault("timesteps_total", self._timesteps_total)
        if self._episodes_total is not None:
            result.setdefault("episodes_total", self._episodes_total)
        result.setdefault("training_iteration", self._iteration)
        now = datetime.today()
        result.update(
            trial_id=self.trial_id,
            date=now.strftime("%Y-%m-%d_%H-%M-%S"),
            timestamp=result.get("timestamp") or int(time.mktime(now.timetuple())),
            time_this_iter_s=time_this_iter,
            time_total_s=self._time_total,
            pid=os.getpid(),
            hostname=platform.node(),
            node_ip=_node_ip(),
            config=self.config,
            time_since_restore=self._time_since_restore,
            iterations_since_restore=self._iterations_since_restore,
        )
        if self._timesteps_since_restore:
            result["timesteps_since_restore"] = self._timesteps_since_restore
        self.log_result(result)
        self._last_result = result
        return result

    def stop(self) -> None:
        """Release the workers and everything else the algorithm holds."""
        if self._in_tune_trial:
            super().stop()  # type: ignore[misc]
            return
        self.cleanup()

    @property
    def logdir(self) -> str:
        """The folder results and checkpoints are written to."""
        return str(self._logdir)

    @property
    def iteration(self) -> int:
        """Training iterations so far (restored with a checkpoint)."""
        return self._iteration

    @property
    def trial_id(self) -> str:
        if self._in_tune_trial:
            return str(super().trial_id)  # type: ignore[misc]
        return "default"

    def get_config(self) -> Any:
        return self.config

    # ------------------------------------------------------------------ Tune-only hooks

    def train_buffered(self, buffer_time_s: float, max_buffer_length: int = 1000) -> Any:
        self._require_tune("train_buffered")
        return super().train_buffered(buffer_time_s, max_buffer_length)  # type: ignore[misc]

    def reset(self, new_config: dict[str, Any], storage: Any = None) -> bool:
        self._require_tune("reset")
        return bool(super().reset(new_config, storage))  # type: ignore[misc]

    def export_model(self, export_formats: Any, export_dir: str | None = None) -> Any:
        self._require_tune("export_model")
        return super().export_model(export_formats, export_dir)  # type: ignore[misc]

    def _require_tune(self, method: str) -> None:
        if not self._in_tune_trial:
            raise RuntimeError(
                f"{type(self).__name__}.{method}() is Ray Tune's hook for a trial actor; "
                "outside Tune use train(), save() and restore()"
            )


def _node_ip() -> str:
    """This machine's address as Tune reports it, without importing Ray."""
    try:
        return socket.gethostbyname(socket.gethostname())
    except OSError:
        return "127.0.0.1"
