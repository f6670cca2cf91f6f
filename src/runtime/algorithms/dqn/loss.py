"""DQN's loss: the TD error of Q(s, a) against an n-step target from the target network
(double Q: the online network picks the next action, the target network values it), as Huber
or squared error, weighted per row by the replay buffer's importance weights.

Distributional (``num_atoms > 1``, C51): the target distribution (the next state's atoms,
shifted by the n-step rewards and scaled by the discount, clipped to ``[v_min, v_max]``) is
projected back onto the atoms, and the loss is its cross-entropy with the predicted one; that
cross-entropy is also what prioritized replay gets as the row's TD error."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from runtime.algorithms.dqn.module import QModule
from runtime.core.postprocessing import N_STEP_GAMMA
from runtime.core.sample_batch import SampleBatch as SB


def dqn_loss(
    module: QModule,
    target: QModule,
    batch: dict[str, torch.Tensor],
    *,
    double_q: bool,
    loss_fn: str,
) -> tuple[torch.Tensor, dict[str, Any]]:
    if module.num_atoms > 1:
        return distributional_loss(module, target, batch, double_q=double_q)
    # Q of the actions taken.
    q = module.q_values(batch[SB.OBS])
    q_taken = q.gather(1, batch[SB.ACTIONS].long().unsqueeze(1)).squeeze(1)

    # The target: n-step rewards plus the discounted value of the state n steps later.
    with torch.no_grad():
        next_obs = batch[SB.NEXT_OBS]
        next_q = target.q_values(next_obs)
        if double_q:
            best = module.q_values(next_obs).argmax(dim=1, keepdim=True)
        else:
            best = next_q.argmax(dim=1, keepdim=True)
        next_value = next_q.gather(1, best).squeeze(1)
        alive = 1.0 - batch[SB.TERMINATEDS].float()
        td_target = batch[SB.REWARDS] + batch[N_STEP_GAMMA] * alive * next_value

    # Huber (or squared) TD error, weighted by the importance weights of prioritized replay.
    td_error = q_taken - td_target
    if loss_fn == "huber":
        per_row = F.huber_loss(q_taken, td_target, reduction="none", delta=1.0)
    else:
        per_row = 0.5 * td_error.pow(2)
    weights = batch.get("weights")
    loss = (per_row * weights).mean() if weights is not None else per_row.mean()

    stats: dict[str, Any] = {
        "mean_q": q_taken.mean(),
        "min_q": q_taken.min(),
        "max_q": q_taken.max(),
        "mean_td_error": td_error.mean(),
        "td_error": td_error.detach(),
    }
    return loss, stats


def projected_target(
    support: torch.Tensor, next_probs: torch.Tensor, rewards: torch.Tensor, discounts: torch.Tensor
) -> torch.Tensor:
    """The distribution of ``rewards + discounts * Z`` (``Z`` on ``support`` with
    ``next_probs``, one row each), projected onto ``support``: each shifted atom's mass split
    between its two neighbours on the support, in proportion to closeness."""
    num_atoms = support.numel()
    v_min, v_max = support[0], support[-1]
    shifted = torch.minimum(
        torch.maximum(rewards.unsqueeze(1) + discounts.unsqueeze(1) * support, v_min), v_max
    )
    position = (shifted - v_min) / ((v_max - v_min) / (num_atoms - 1))
    lower = position.floor()
    upper = position.ceil()
    # An atom landing exactly on a support point (lower == upper) keeps all its mass there.
    to_lower = next_probs * (upper - position + (upper == lower).float())
    to_upper = next_probs * (position - lower)
    # One scatter for both neighbours.
    index = torch.cat((lower, upper), dim=1).long()
    return torch.zeros_like(next_probs).scatter_add_(1, index, torch.cat((to_lower, to_upper), 1))


def _taken(values: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
    """Row i's ``values[i, actions[i]]`` of ``[B, A, N]`` values: ``[B, N]``."""
    index = actions.long().view(-1, 1, 1).expand(-1, 1, values.shape[-1])
    return values.gather(1, index).squeeze(1)


def distributional_loss(
    module: QModule,
    target: QModule,
    batch: dict[str, torch.Tensor],
    *,
    double_q: bool,
) -> tuple[torch.Tensor, dict[str, Any]]:
    log_probs = torch.log_softmax(_taken(module.atom_logits(batch[SB.OBS]), batch[SB.ACTIONS]), -1)

    with torch.no_grad():
        next_obs = batch[SB.NEXT_OBS]
        next_probs = torch.softmax(target.atom_logits(next_obs), dim=-1)
        if double_q:
            best = module.q_values(next_obs).argmax(dim=1)
        else:
            best = (next_probs * target.support).sum(dim=-1).argmax(dim=1)
        alive = 1.0 - batch[SB.TERMINATEDS].float()
        projected = projected_target(
            module.support,
            _taken(next_probs, best),
            batch[SB.REWARDS].float(),
            batch[N_STEP_GAMMA] * alive,
        )

    cross_entropy = -(projected * log_probs).sum(dim=-1)
    weights = batch.get("weights")
    loss = (cross_entropy * weights).mean() if weights is not None else cross_entropy.mean()
    with torch.no_grad():
        q_taken = (log_probs.exp() * module.support).sum(dim=-1)
        td_error = cross_entropy.detach()
    stats: dict[str, Any] = {
        "mean_q": q_taken.mean(),
        "min_q": q_taken.min(),
        "max_q": q_taken.max(),
        "mean_td_error": td_error.mean(),
        "td_error": td_error,
    }
    return loss, stats
