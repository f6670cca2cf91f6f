"""MARWIL's loss (the reference's torch loss): the log-likelihood of the recorded actions,
each weighted by its exponentiated, normalised advantage, plus a value loss.

With ``beta != 0``: the advantage is the discounted return (``returns``, from ``add_returns``)
minus V(s); its mean square updates the moving average ``c^2`` of its scale (by
``update_rate``) before the weights ``exp(beta * adv / c)`` are taken (no gradient through
them), and half of it is the value loss. With ``beta == 0`` (behaviour cloning) every action
weighs 1 and there is no value loss. ``bc_logstd_coeff`` adds the Gaussian's mean log-std to
each action's log-likelihood, against the collapse of its spread that imitation drives.
"""

from __future__ import annotations

from typing import Any, TypeVar

import torch

from runtime.core.module import RLModule
from runtime.core.postprocessing import RETURNS
from runtime.core.sample_batch import SampleBatch as SB

#: Keeps the advantages' normaliser away from 0 (the reference's).
NORM_EPSILON = 1e-8

N = TypeVar("N", float, torch.Tensor)


def updated_sqd_adv_norm(current: N, adv_squared_mean: N, rate: float) -> N:
    """The moving average of the squared advantages after one batch:
    ``current + rate * (adv_squared_mean - current)``."""
    return current + rate * (adv_squared_mean - current)


def explained_variance(targets: torch.Tensor, predictions: torch.Tensor) -> torch.Tensor:
    """``1 - Var(targets - predictions) / Var(targets)``, at least -1 (as the reference)."""
    unexplained = torch.var(targets - predictions, correction=0)
    return torch.clamp(1.0 - unexplained / (torch.var(targets, correction=0) + 1e-8), min=-1.0)


def marwil_loss(
    module: RLModule,
    batch: dict[str, torch.Tensor],
    *,
    beta: float,
    vf_coeff: float,
    bc_logstd_coeff: float,
    moving_average_sqd_adv_norm: float,
    update_rate: float,
) -> tuple[torch.Tensor, dict[str, Any]]:
    """The loss and its stats; ``moving_average_sqd_adv_norm`` is ``c^2`` before this batch
    (the stats hold it after, as a float64 tensor: float32 can't hold a 1e-8 step of 100).
    Split over towers, each shard steps ``c^2`` with its own rows' mean square: a difference
    of ``update_rate`` times theirs from the whole batch's (nothing at the reference's 1e-8);
    the learner keeps the whole batch's."""
    out = module.forward_train(batch)
    dist = module.dist_class(out[SB.ACTION_DIST_INPUTS])
    logp = dist.logp(batch[SB.ACTIONS])
    stats: dict[str, Any] = {}

    # The advantage of each recorded action over the value of its state.
    weights: torch.Tensor | float = 1.0
    vf_loss: torch.Tensor | float = 0.0
    if beta != 0.0:
        returns = batch[RETURNS]
        values = out[SB.VF_PREDS]
        advantages = returns - values
        adv_squared_mean = advantages.pow(2).mean()
        norm = updated_sqd_adv_norm(
            torch.tensor(moving_average_sqd_adv_norm, dtype=torch.float64, device=logp.device),
            adv_squared_mean.detach().to(torch.float64),
            update_rate,
        )
        scale = (NORM_EPSILON + norm.sqrt()).to(advantages.dtype)
        weights = torch.exp(beta * advantages.detach() / scale)
        vf_loss = 0.5 * adv_squared_mean
        stats.update(
            vf_loss=vf_loss,
            moving_average_sqd_adv_norm=norm,
            vf_explained_var=explained_variance(returns, values.detach()),
        )

    # Imitation: raise the likelihood of the recorded actions, the better ones the more.
    if bc_logstd_coeff > 0.0:
        logp = logp + bc_logstd_coeff * dist.log_std.mean(-1)
    policy_loss = -(weights * logp).mean()

    total = policy_loss + vf_coeff * vf_loss
    stats.update(policy_loss=policy_loss, total_loss=total)
    return total, stats
