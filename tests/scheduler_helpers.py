"""A PPO that reports which weights it trained from, and a Tune callback that keeps every result,
for ``tests/test_schedulers.py`` (module level, so that Tune's trial actors import them)."""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np
from ray import tune

from runtime import PPO
from runtime.algorithm import Algorithm
from runtime.core.learner import DEFAULT_OPTIMIZER
from runtime.training.config_resolution import ConfigInput

#: The result key of ``ProbedPPO``'s probe.
PROBE = "probe"
#: The learning rate the learner reported for the iteration: a metric whose ranking of trials
#: is known from their configs, so that a scheduler's decisions can be predicted exactly.
LEARNER_LR = "learner_lr"


def weights_digest(algorithm: Algorithm) -> str:
    """sha256 over the default policy's weight arrays (by name)."""
    digest = hashlib.sha256()
    weights = algorithm.get_policy().get_weights()
    for name in sorted(weights):
        digest.update(name.encode())
        digest.update(np.ascontiguousarray(weights[name]).tobytes())
    return digest.hexdigest()


class ProbedPPO(PPO):
    """PPO whose every result has ``probe``: digests of the weights as built (by ``__init__``
    or the last ``reset_config``), after the iteration, and as the last checkpoint loaded them
    (since the last reset); how often this actor has been reset; and the learning rate of the
    config, of the learner and of its optimizer. ``learner_lr`` is at the top level, for
    schedulers."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.resets = 0
        self.loaded_digest: str | None = None
        self.loaded_from: str | None = None
        super().__init__(*args, **kwargs)

    def setup(self, config: dict[str, Any]) -> None:
        super().setup(config)
        self.built_digest = weights_digest(self)

    def reset_config(self, new_config: ConfigInput) -> bool:
        reset = super().reset_config(new_config)
        self.resets += 1
        self.loaded_digest = self.loaded_from = None
        return reset

    def load_checkpoint(self, checkpoint: Any) -> None:
        super().load_checkpoint(checkpoint)
        self.loaded_digest = weights_digest(self)
        self.loaded_from = str(checkpoint)

    def step(self) -> dict[str, Any]:
        result = super().step()
        stats = result["info"]["learner"]["default_policy"]["learner_stats"]
        optimizer = self.get_policy().learner.optimizers[DEFAULT_OPTIMIZER]
        result[LEARNER_LR] = float(stats["cur_lr"])
        result[PROBE] = {
            "built_digest": self.built_digest,
            "weights_digest": weights_digest(self),
            "loaded_digest": self.loaded_digest,
            "loaded_from": self.loaded_from,
            "resets": self.resets,
            "config_lr": float(self.config["lr"]),
            "optimizer_lr": float(optimizer.param_groups[0]["lr"]),
        }
        return result


class ResultLog(tune.Callback):
    """Every result of every trial, in the order Tune received them (in the driver)."""

    def __init__(self) -> None:
        self.results: list[dict[str, Any]] = []

    def on_trial_result(
        self, iteration: int, trials: list[Any], trial: Any, result: dict[str, Any], **info: Any
    ) -> None:
        self.results.append({**result, "trial_id": trial.trial_id})

    def of_trial(self, trial_id: str) -> list[dict[str, Any]]:
        return [r for r in self.results if r["trial_id"] == trial_id]
