"""``PGLearner``: one gradient step of ``pg_loss`` per train batch."""

from __future__ import annotations

from typing import Any

import torch

from runtime.algorithms.pg.loss import pg_loss
from runtime.core.learner import Learner


class PGLearner(Learner):
    def compute_loss(self, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, dict[str, Any]]:
        return pg_loss(self.module, batch)
