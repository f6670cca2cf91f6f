"""``A2CLearner``: one optimizer step per train batch; with ``microbatch_size`` its gradient is
accumulated over microbatches. The entropy coefficient follows ``entropy_coeff_schedule``."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import torch

from runtime.algorithms.a2c.loss import a2c_loss
from runtime.core.learner import Learner
from runtime.core.sample_batch import SampleBatch
from runtime.core.sample_batch import SampleBatch as SB


class A2CLearner(Learner):
    def setup(self) -> None:
        config = self.config
        self.add_schedule(
            "entropy_coeff", config.get("entropy_coeff_schedule"), float(config["entropy_coeff"])
        )
        self.vf_loss_coeff = float(config["vf_loss_coeff"])

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
        micro = self.config.get("microbatch_size")
        size = len(batch)
        if micro is None or micro >= size:
            return super().update(batch)
        tensors = self.batch_tensors(batch)
        self.optimizers["default"].zero_grad(set_to_none=True)
        sums: dict[str, Any] = defaultdict(float)
        for start in range(0, size, int(micro)):
            part = {k: v[start : start + int(micro)] for k, v in tensors.items()}
            share = len(part[SB.OBS]) / size
            loss, stats = self.compute_loss(part)
            (loss * share).backward()  # type: ignore[no-untyped-call]
            for key, value in stats.items():
                detached = value.detach() if isinstance(value, torch.Tensor) else value
                sums[key] = sums[key] + share * detached
        sums.update(self.apply_gradients())
        stats = {k: float(v) for k, v in sums.items()}
        stats["num_microbatches"] = -(-size // int(micro))
        return self.info(stats)
