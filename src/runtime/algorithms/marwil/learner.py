"""``MARWILLearner``: one gradient step of ``marwil_loss`` per train batch (the reference's
MARWIL takes one SGD step on each batch), and the moving average of the squared advantages
(``moving_average_sqd_adv_norm``), which is learner state: saved with its checkpoints."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch

from runtime.algorithms.marwil.loss import marwil_loss, updated_sqd_adv_norm
from runtime.core.learner import Learner
from runtime.core.sample_batch import SampleBatch
from runtime.core.settings import settings_of

#: The state key of the moving average (and its stat).
SQD_ADV_NORM = "moving_average_sqd_adv_norm"


@dataclass(frozen=True)
class MARWILLearnerSettings:
    beta: float
    vf_coeff: float
    bc_logstd_coeff: float
    moving_average_sqd_adv_norm_update_rate: float
    moving_average_sqd_adv_norm_start: float


class MARWILLearner(Learner):
    def setup(self) -> None:
        settings = settings_of(MARWILLearnerSettings, self.config, type(self).__name__)
        self.beta = float(settings.beta)
        self.vf_coeff = float(settings.vf_coeff)
        self.bc_logstd_coeff = float(settings.bc_logstd_coeff)
        self.update_rate = float(settings.moving_average_sqd_adv_norm_update_rate)
        #: c^2, kept as a Python float (float64): the reference's float32 tensor can't take a
        #: step of rate 1e-8 from 100, so its average never moves.
        self.sqd_adv_norm = float(settings.moving_average_sqd_adv_norm_start)

    def compute_loss(self, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, dict[str, Any]]:
        return marwil_loss(
            self.module,
            batch,
            beta=self.beta,
            vf_coeff=self.vf_coeff,
            bc_logstd_coeff=self.bc_logstd_coeff,
            moving_average_sqd_adv_norm=self.sqd_adv_norm,
            update_rate=self.update_rate,
        )

    def update(self, batch: SampleBatch) -> dict[str, Any]:
        """One gradient step on the whole batch, then the moving average's step. It is taken
        here from the batch's mean squared advantage (twice ``vf_loss``, which the towers and
        learner processes combine into the whole batch's) rather than kept from the loss, whose
        value is a shard's when the step is split."""
        info = super().update(batch)
        stats = info["learner_stats"]
        if self.beta != 0.0:
            self.sqd_adv_norm = updated_sqd_adv_norm(
                self.sqd_adv_norm, 2.0 * float(stats["vf_loss"]), self.update_rate
            )
            stats[SQD_ADV_NORM] = self.sqd_adv_norm
        return info

    def extra_state(self) -> dict[str, Any]:
        return {SQD_ADV_NORM: self.sqd_adv_norm}

    def set_extra_state(self, state: Mapping[str, Any]) -> None:
        self.sqd_adv_norm = float(state.get(SQD_ADV_NORM, self.sqd_adv_norm))
