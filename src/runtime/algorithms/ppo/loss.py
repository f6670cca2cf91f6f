"""PPO's loss: the clipped surrogate objective, an entropy bonus, an adaptive KL penalty and a
clipped value loss.

It returns per-row terms, not means, besides the loss: the learner turns the rows of every
minibatch of an update into the reported stats once (a mean and two variances per gradient
step cost a tenth of the step).
"""

from __future__ import annotations

from typing import Any

import torch

from runtime.core.module import RLModule
from runtime.core.sample_batch import SampleBatch as SB


def ppo_loss(
    module: RLModule,
    batch: dict[str, torch.Tensor],
    *,
    clip_param: float,
    vf_clip_param: float,
    vf_loss_coeff: float,
    entropy_coeff: float,
    kl_coeff: float,
) -> tuple[torch.Tensor, dict[str, Any]]:
    out = module.forward_train(batch)
    dist_inputs = out[SB.ACTION_DIST_INPUTS]
    dist = module.dist_class(dist_inputs)

    # Probability ratio of the actions taken, new policy over the one that sampled them.
    ratio = torch.exp(dist.logp(batch[SB.ACTIONS]) - batch[SB.ACTION_LOGP])

    # Clipped surrogate: the pessimistic of the plain and the clipped objective.
    advantages = batch[SB.ADVANTAGES]
    clipped = ratio.clamp(1 - clip_param, 1 + clip_param)
    surrogate = torch.min(advantages * ratio, advantages * clipped)
    total = -surrogate
    stats: dict[str, Any] = {"policy_loss": -surrogate, "action_dist_inputs": dist_inputs}

    # Terms with a zero coefficient stay out of the graph: every node costs backward time.
    if entropy_coeff:
        total = total - entropy_coeff * dist.entropy()

    # KL penalty against the sampling policy (its coefficient adapts between updates).
    if kl_coeff > 0:
        kl = module.dist_class(batch[SB.ACTION_DIST_INPUTS]).kl(dist)
        total = total + kl_coeff * kl
        stats["kl"] = kl

    # Value loss: squared error to the value targets, clipped at vf_clip_param.
    if SB.VF_PREDS in out:
        values = out[SB.VF_PREDS]
        vf_loss = (values - batch[SB.VALUE_TARGETS]).pow(2).clamp(0, vf_clip_param)
        total = total + vf_loss_coeff * vf_loss
        stats.update(vf_loss=vf_loss, vf_preds=values, value_targets=batch[SB.VALUE_TARGETS])

    loss = total.mean()
    stats["total_loss"] = loss
    return loss, stats
