"""IMPALA's loss: the policy gradient on V-trace advantages, a squared-error value loss on the
V-trace targets and an entropy bonus, on the batch's time-major layout.

The reference's torch policy sums each term over the steps (its ``vf_loss_coeff=0.5`` and
``entropy_coeff=0.01`` are tuned for those sums); ``reduction="mean"`` takes each term's mean
over the valid steps instead, so that the loss does not grow with the train batch and a batch
split over towers adds up (each shard weighted by its share of the rows). With ``"sum"`` the
learner must not weight shards by their share.
"""

from __future__ import annotations

from typing import Any, Literal

import torch

from runtime.algorithms.impala.vtrace import TimeMajor, vtrace_on_layout
from runtime.core.module import RLModule
from runtime.core.sample_batch import SampleBatch as SB


def masked_explained_variance(
    targets: torch.Tensor, predictions: torch.Tensor, valid: torch.Tensor
) -> torch.Tensor:
    """``1 - Var(targets - predictions) / Var(targets)`` over the valid steps, at least -1 (the
    reference's ``explained_variance``)."""
    targets, predictions = targets[valid], predictions[valid]
    unexplained = torch.var(targets - predictions, correction=0)
    return torch.clamp(1.0 - unexplained / (torch.var(targets, correction=0) + 1e-8), min=-1.0)


def reduce_valid(
    values: torch.Tensor, valid: torch.Tensor, reduction: Literal["mean", "sum"] = "mean"
) -> torch.Tensor:
    """The sum or the mean of ``values`` over the valid steps (padded ones count nothing, and a
    NaN there cannot leak in)."""
    total = torch.where(valid, values, torch.zeros_like(values)).sum()
    return total if reduction == "sum" else total / valid.sum().clamp(min=1)


def impala_loss(
    module: RLModule,
    batch: dict[str, torch.Tensor],
    *,
    layout: TimeMajor,
    gamma: float,
    vf_loss_coeff: float,
    entropy_coeff: float,
    vtrace: bool = True,
    clip_rho_threshold: float | None = 1.0,
    clip_pg_rho_threshold: float | None = 1.0,
    reduction: Literal["mean", "sum"] = "mean",
) -> tuple[torch.Tensor, dict[str, Any]]:
    """``batch``: flat rows (``actions``, ``action_logp``, ``rewards``, ``terminateds``,
    ``values_bootstrapped`` and the module's inputs) laid out by ``layout``. ``vtrace=False``:
    the plain advantage actor-critic on the same layout (on-policy returns)."""
    out = module.forward_train(batch)
    dist = module.dist_class(out[SB.ACTION_DIST_INPUTS])
    tm = layout.time_major
    valid = layout.mask(out[SB.VF_PREDS].device)
    target_logp = tm(dist.logp(batch[SB.ACTIONS]))
    values = tm(out[SB.VF_PREDS])
    entropy = tm(dist.entropy())

    # The value targets and advantages, without gradient. V-trace weighs each step by how much
    # likelier the learner's policy makes the sampled action than the policy that sampled it.
    # Without V-trace every weight is 1: the same recursion then gives the bootstrapped
    # discounted return as vs, and that return minus V as pg_advantages.
    targets = vtrace_on_layout(
        layout,
        batch,
        values=out[SB.VF_PREDS],
        behaviour_logp=tm(batch[SB.ACTION_LOGP]) if vtrace else target_logp,
        target_logp=target_logp,
        gamma=gamma,
        clip_rho_threshold=clip_rho_threshold,
        clip_pg_rho_threshold=clip_pg_rho_threshold,
    )

    # The policy gradient: raise the log-likelihood of actions in proportion to their
    # V-trace advantage.
    policy_loss = -reduce_valid(target_logp * targets.pg_advantages, valid, reduction)

    # The critic regresses on the V-trace targets.
    vf_loss = 0.5 * reduce_valid((values - targets.vs).pow(2), valid, reduction)

    # An entropy bonus keeps the policy from collapsing early.
    entropy_term = reduce_valid(entropy, valid, reduction)
    total = policy_loss + vf_loss_coeff * vf_loss
    if entropy_coeff:
        total = total - entropy_coeff * entropy_term

    stats: dict[str, Any] = {
        "total_loss": total.detach(),
        "policy_loss": policy_loss.detach(),
        "vf_loss": vf_loss.detach(),
        "entropy": reduce_valid(entropy.detach(), valid),
        "vf_explained_var": masked_explained_variance(targets.vs, values.detach(), valid),
    }
    return total, stats
