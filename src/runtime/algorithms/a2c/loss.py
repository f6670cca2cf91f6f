"""A2C's loss: policy gradient on the advantages, minus an entropy bonus, plus a squared-error
value loss when there is a critic."""

from __future__ import annotations

from typing import Any

import torch

from runtime.core.module import RLModule
from runtime.core.sample_batch import SampleBatch as SB


def a2c_loss(
    module: RLModule,
    batch: dict[str, torch.Tensor],
    *,
    entropy_coeff: float,
    vf_loss_coeff: float,
) -> tuple[torch.Tensor, dict[str, Any]]:
    out = module.forward_train(batch)
    dist = module.dist_class(out[SB.ACTION_DIST_INPUTS])

    # The policy gradient: raise the log-likelihood of actions in proportion to their advantage.
    logp = dist.logp(batch[SB.ACTIONS])
    policy_loss = -(logp * batch[SB.ADVANTAGES]).mean()

    # An entropy bonus keeps the policy from collapsing early.
    entropy = dist.entropy().mean()
    total = policy_loss - entropy_coeff * entropy
    stats: dict[str, Any] = {"policy_loss": policy_loss, "entropy": entropy}

    # The critic regresses on the value targets.
    if SB.VF_PREDS in out:
        vf_loss = 0.5 * (out[SB.VF_PREDS] - batch[SB.VALUE_TARGETS]).pow(2).mean()
        total = total + vf_loss_coeff * vf_loss
        stats["vf_loss"] = vf_loss
    return total, stats
