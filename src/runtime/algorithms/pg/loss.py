"""PG's loss: REINFORCE, the log-likelihood of the actions taken weighted by their advantages
(the discounted returns, from ``add_advantages``)."""

from __future__ import annotations

from typing import Any

import torch

from runtime.core.module import RLModule
from runtime.core.sample_batch import SampleBatch as SB


def pg_loss(
    module: RLModule, batch: dict[str, torch.Tensor]
) -> tuple[torch.Tensor, dict[str, Any]]:
    out = module.forward_train(batch)
    dist = module.dist_class(out[SB.ACTION_DIST_INPUTS])
    logp = dist.logp(batch[SB.ACTIONS])
    loss = -(logp * batch[SB.ADVANTAGES]).mean()
    return loss, {"policy_loss": loss}
