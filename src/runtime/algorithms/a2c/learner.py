"""``A2CLearner``: one optimizer step per train batch; with ``microbatch_size`` its gradient is
accumulated over microbatches. The entropy coefficient follows ``entropy_coeff_schedule``."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from runtime.algorithms.a2c.loss import a2c_loss
from runtime.core.learner import Learner
from runtime.core.sample_batch import SampleBatch
from runtime.core.sample_batch import SampleBatch as SB
from runtime.core.sequences import minibatches_of_sequences, sequence_tensors
from runtime.core.settings import settings_of


@dataclass(frozen=True)
class A2CLearnerSettings:
    entropy_coeff: float
    vf_loss_coeff: float
    entropy_coeff_schedule: Any = None
    microbatch_size: int | None = None


class A2CLearner(Learner):
    def setup(self) -> None:
        self.settings = settings = settings_of(A2CLearnerSettings, self.config, type(self).__name__)
        self.add_schedule(
            "entropy_coeff", settings.entropy_coeff_schedule, float(settings.entropy_coeff)
        )
        self.vf_loss_coeff = float(settings.vf_loss_coeff)
        self._count = 0

    @property
    def entropy_coeff(self) -> float:
        return self.scheduled("entropy_coeff")

    def compute_loss(self, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, dict[str, Any]]:
        loss, stats = a2c_loss(
            self.module, batch, entropy_coeff=self.entropy_coeff, vf_loss_coeff=self.vf_loss_coeff
        )
        stats["entropy_coeff"] = self.entropy_coeff
        return loss, stats

    def update(self, batch: SampleBatch) -> dict[str, Any]:
        """The loss is a mean, so each microbatch's gradient is weighted by its share of the
        rows and their sum is the whole batch's gradient."""
        micro = self.settings.microbatch_size
        size = len(batch)
        if micro is None or micro >= size:
            return super().update(batch)
        tensors = self.batch_tensors(batch)
        self.optimizers["default"].zero_grad(set_to_none=True)
        sums: dict[str, Any] = defaultdict(float)
        params = self.param_lists["default"]
        accumulated: list[torch.Tensor | None] = [None] * len(params)
        for part in self._microbatches(batch, tensors, int(micro)):
            share = len(part[SB.ACTIONS]) / size
            if self.parallel is None:
                loss, stats = self.compute_loss(part)
                (loss * share).backward()  # type: ignore[no-untyped-call]
            else:
                # Each microbatch split over the towers / learner processes; their gradient
                # (that microbatch's) is added up here, weighted like the single-device one.
                _, stats = self.parallel.compute_gradients(part, None)
                for i, param in enumerate(params):
                    if param.grad is not None:
                        grad = param.grad * share
                        previous = accumulated[i]
                        accumulated[i] = grad if previous is None else previous + grad
            for key, value in stats.items():
                detached = value.detach() if isinstance(value, torch.Tensor) else value
                sums[key] = sums[key] + share * detached
        if self.parallel is not None:
            self.set_gradients({"default": accumulated})
        sums.update(self.apply_gradients())
        stats = {k: float(v) for k, v in sums.items()}
        stats["num_microbatches"] = self._count
        return self.info(stats)

    def _microbatches(
        self, batch: SampleBatch, tensors: dict[str, torch.Tensor], micro: int
    ) -> list[dict[str, torch.Tensor]]:
        """Row ranges of ``micro`` rows; for a module with memory, whole sequences of at least
        ``micro`` valid rows each (the last: the rest)."""
        if not self.module.is_recurrent:
            parts = [
                {k: v[start : start + micro] for k, v in tensors.items()}
                for start in range(0, len(batch), micro)
            ]
        else:
            starts, lens = self.sequences_of(batch)
            order = np.arange(len(starts))
            groups = minibatches_of_sequences(lens, order, micro, keep_rest=True)
            parts = [sequence_tensors(tensors, starts, lens, group) for group in groups]
        self._count = len(parts)
        return parts
