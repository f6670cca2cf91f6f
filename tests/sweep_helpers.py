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


#: Per learning rate, the ``probe/score`` each iteration reports (an iteration not listed
#: reports none): lr 1e-3 peaks at iteration 2; lr 1e-4 scores only its first iteration.
PROBE_SCORES = {1e-3: {1: 1.0, 2: 5.0, 3: 2.0}, 1e-4: {1: 9.0}}


class ReportsProbeScore(DefaultCallbacks):
    """Adds ``probe/score`` (a nested key) from ``PROBE_SCORES``: which checkpoints a trial
    keeps by it is known in advance."""

    def on_train_result(self, *, algorithm: Any, result: dict[str, Any], **kwargs: Any) -> None:
        scores = PROBE_SCORES.get(float(algorithm.config["lr"]), {})
        score = scores.get(int(result["training_iteration"]))
        if score is not None:
            result["probe"] = {"score": score}
