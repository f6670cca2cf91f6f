"""``IMPALALearner``: one gradient step of ``impala_loss`` per train batch, on the batch's
time-major layout (lanes of at most ``rollout_fragment_length`` steps of one sub-env and
agent: ``vtrace.time_major_layout``); the optimizer is Adam or RMSProp (``opt_type``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from runtime.algorithms.impala.loss import impala_loss
from runtime.algorithms.impala.vtrace import TimeMajor, time_major_layout
from runtime.core.learner import DEFAULT_OPTIMIZER, Learner
from runtime.core.sample_batch import SampleBatch
from runtime.core.settings import settings_of


@dataclass(frozen=True)
class IMPALALearnerSettings:
    gamma: float
    vtrace: bool
    vtrace_clip_rho_threshold: float | None
    vtrace_clip_pg_rho_threshold: float | None
    vtrace_drop_last_ts: bool
    vf_loss_coeff: float
    entropy_coeff: float
    entropy_coeff_schedule: Any
    rollout_fragment_length: Any
    opt_type: str
    decay: float
    momentum: float
    epsilon: float


class IMPALALearner(Learner):
    def setup(self) -> None:
        self.settings = settings = settings_of(
            IMPALALearnerSettings, self.config, type(self).__name__
        )
        self.add_schedule(
            "entropy_coeff", settings.entropy_coeff_schedule, float(settings.entropy_coeff)
        )
        fragment = settings.rollout_fragment_length
        #: The longest lane: a sampled fragment ("auto": lanes end only where rows stop
        #: following each other).
        self.max_lane = int(fragment) if isinstance(fragment, int) else 0
        self._layout: TimeMajor | None = None

    def build_optimizers(self) -> dict[str, torch.optim.Optimizer]:
        """Adam, or RMSProp with ``decay`` as its smoothing constant (TensorFlow's ``decay``,
        torch's ``alpha``), ``momentum`` and ``epsilon``."""
        settings = settings_of(IMPALALearnerSettings, self.config, type(self).__name__)
        if settings.opt_type != "rmsprop":
            return super().build_optimizers()
        spec = self.optimizer_specs[DEFAULT_OPTIMIZER]
        return {
            DEFAULT_OPTIMIZER: torch.optim.RMSprop(
                self.optimizer_parameters(DEFAULT_OPTIMIZER),
                lr=self.lr_of(DEFAULT_OPTIMIZER),
                alpha=float(settings.decay),
                momentum=float(settings.momentum),
                eps=float(settings.epsilon),
                **dict(spec.options),
            )
        }

    @property
    def entropy_coeff(self) -> float:
        return self.scheduled("entropy_coeff")

    def layout_of(self, batch: SampleBatch) -> TimeMajor:
        return time_major_layout(
            dict(batch.items()),
            self.max_lane or max(1, len(batch)),
            drop_last_ts=bool(self.settings.vtrace_drop_last_ts),
        )

    def update(self, batch: SampleBatch) -> dict[str, Any]:
        self._layout = self.layout_of(batch)
        try:
            stats = self.gradient_step(self.batch_tensors(batch))
        finally:
            self._layout = None
        return self.info({k: float(v) for k, v in stats.items()})

    def compute_loss(self, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, dict[str, Any]]:
        assert self._layout is not None, "IMPALALearner.compute_loss runs inside update()"
        settings = self.settings
        loss, stats = impala_loss(
            self.module,
            batch,
            layout=self._layout,
            gamma=float(settings.gamma),
            vf_loss_coeff=float(settings.vf_loss_coeff),
            entropy_coeff=self.entropy_coeff,
            vtrace=bool(settings.vtrace),
            clip_rho_threshold=vtrace_threshold(settings.vtrace_clip_rho_threshold),
            clip_pg_rho_threshold=vtrace_threshold(settings.vtrace_clip_pg_rho_threshold),
        )
        stats["entropy_coeff"] = self.entropy_coeff
        return loss, stats


def vtrace_threshold(value: float | None) -> float | None:
    """A V-trace clipping threshold (None: no clipping)."""
    return None if value is None else float(value)
