"""``APPOLearner``: IMPALA's learner with APPO's loss: a target network of the module that
V-trace and the surrogate's ratio are taken against, moved towards the module (``tau``) every
``target_update_frequency`` rounds of its batches' passes (or, with RLlib's new API stack's
``target_network_update_freq``, once that many rows were trained on), when the KL coefficient
also adapts
(``use_kl_loss``, PPO's rule on the mean KL since the last adaptation: x1.5 above twice
``kl_target``, x0.5 below half of it)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from runtime.algorithms.appo.loss import appo_loss
from runtime.algorithms.impala.learner import IMPALALearner, vtrace_threshold
from runtime.core.sample_batch import SampleBatch
from runtime.core.settings import settings_of


@dataclass(frozen=True)
class APPOLearnerSettings:
    clip_param: float
    use_kl_loss: bool
    kl_coeff: float
    kl_target: float
    tau: float
    target_update_frequency: int
    target_network_update_freq: int | None
    num_sgd_iter: int
    minibatch_buffer_size: int


class APPOLearner(IMPALALearner):
    def setup(self) -> None:
        super().setup()
        self.appo = settings = settings_of(APPOLearnerSettings, self.config, type(self).__name__)
        self.target_module = self.add_target_network("module", self.module)
        self.kl_coeff = float(settings.kl_coeff)
        self._updates = 0
        #: Rows trained on since the target last moved (with target_network_update_freq).
        self._rows_since_move = 0
        self._kls: list[float] = []
        #: Updates between two moves of the target network: ``target_update_frequency``
        #: rounds of the learner thread's buffer, each batch in it used ``num_sgd_iter`` times
        #: (the reference's period): the old policy stays fixed while a batch is learned on,
        #: which is what makes the surrogate's clipping bound the step.
        self.target_period = max(
            1,
            int(settings.target_update_frequency)
            * int(settings.num_sgd_iter)
            * int(settings.minibatch_buffer_size),
        )

    def update(self, batch: SampleBatch) -> dict[str, Any]:
        info = super().update(batch)
        stats = info["learner_stats"]
        if "kl" in stats:
            self._kls.append(float(stats["kl"]))
        stats["kl_coeff"] = self.kl_coeff
        self._updates += 1
        self._rows_since_move += len(batch)
        if self._target_due():
            self._rows_since_move = 0
            self.update_target_networks(float(self.appo.tau))
            if self.appo.use_kl_loss and self._kls:
                kl = sum(self._kls) / len(self._kls)
                target = float(self.appo.kl_target)
                if kl > 2.0 * target:
                    self.kl_coeff *= 1.5
                elif kl < 0.5 * target:
                    self.kl_coeff *= 0.5
            self._kls = []
        return info

    def _target_due(self) -> bool:
        """Whether the target moves after this update: every ``target_network_update_freq``
        rows trained on where set (RLlib's new API stack), else every ``target_period``
        updates."""
        freq = self.appo.target_network_update_freq
        if freq is not None:
            return self._rows_since_move >= int(freq)
        return self._updates % self.target_period == 0

    def compute_loss(self, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, dict[str, Any]]:
        assert self._layout is not None, "APPOLearner.compute_loss runs inside update()"
        settings, appo = self.settings, self.appo
        loss, stats = appo_loss(
            self.module,
            batch,
            target_module=self.target_module,
            layout=self._layout,
            gamma=float(settings.gamma),
            clip_param=float(appo.clip_param),
            vf_loss_coeff=float(settings.vf_loss_coeff),
            entropy_coeff=self.entropy_coeff,
            use_kl_loss=bool(appo.use_kl_loss),
            kl_coeff=self.kl_coeff,
            vtrace=bool(settings.vtrace),
            clip_rho_threshold=vtrace_threshold(settings.vtrace_clip_rho_threshold),
            clip_pg_rho_threshold=vtrace_threshold(settings.vtrace_clip_pg_rho_threshold),
        )
        stats["entropy_coeff"] = self.entropy_coeff
        return loss, stats

    def extra_state(self) -> dict[str, Any]:
        return {
            **super().extra_state(),
            "kl_coeff": self.kl_coeff,
            "updates": self._updates,
            "rows_since_move": self._rows_since_move,
        }

    def set_extra_state(self, state: Any) -> None:
        super().set_extra_state(state)
        self.kl_coeff = float(state.get("kl_coeff", self.kl_coeff))
        self._updates = int(state.get("updates", self._updates))
        self._rows_since_move = int(state.get("rows_since_move", self._rows_since_move))
