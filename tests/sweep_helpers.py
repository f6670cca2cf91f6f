"""Callbacks for the sweep tests (module level, so Tune's trial actors can import them)."""

from __future__ import annotations

from typing import Any

from runtime import DefaultCallbacks

#: The learning rate at which ``FailAtSecondIteration`` makes a trial fail.
FAILING_LR = 0.0123


class FailAtSecondIteration(DefaultCallbacks):
    """Raises in the second iteration of a trial whose lr is ``FAILING_LR``."""

    def on_train_result(self, *, algorithm: Any, result: dict[str, Any], **kwargs: Any) -> None:
        if algorithm.config["lr"] == FAILING_LR and result["training_iteration"] >= 2:
            raise RuntimeError("this trial fails on purpose")


class ReportsLr(DefaultCallbacks):
    """Adds ``lr_reported`` (the config's lr) to every result: a metric that orders the trials
    of an lr grid exactly."""

    def on_train_result(self, *, algorithm: Any, result: dict[str, Any], **kwargs: Any) -> None:
        result["lr_reported"] = float(algorithm.config["lr"])
