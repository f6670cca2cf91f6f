"""DQN's loss: the TD error of Q(s, a) against an n-step target from the target network
(double Q: the online network picks the next action, the target network values it), as Huber
or squared error, weighted per row by the replay buffer's importance weights.

Distributional (``num_atoms > 1``, C51): the target distribution (the next state's atoms,
shifted by the n-step rewards and scaled by the discount, clipped to ``[v_min, v_max]``) is
projected back onto the atoms, and the loss is its cross-entropy with the predicted one; that
cross-entropy is also what prioritized replay gets as the row's TD error.

Advantage learning (``advantage_alpha > 0``): each target is lowered by ``advantage_alpha``
times the taken action's gap below the state's best action, both valued by the target network
(for the distributional loss, the target distribution shifts by it), so the greedy action's
value stays and the others' fall behind it."""

from __future__ import annotations

from collections.abc import Callable
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
    advantage_alpha: float = 0.0,
) -> tuple[torch.Tensor, dict[str, Any]]:
    if module.num_atoms > 1:
        return distributional_loss(
            module, target, batch, double_q=double_q, advantage_alpha=advantage_alpha
        )
    # Q of the actions taken.
    q = module.q_values(batch[SB.OBS])
    q_taken = q.gather(1, batch[SB.ACTIONS].long().unsqueeze(1)).squeeze(1)

    # The target: n-step rewards plus the discounted value of the state n steps later.
    with torch.no_grad():
        next_obs = batch[SB.NEXT_OBS]
        next_q, q_now = _target_outputs(target.q_values, batch, advantage_alpha)
        if double_q:
            best = module.q_values(next_obs).argmax(dim=1, keepdim=True)
        else:
            best = next_q.argmax(dim=1, keepdim=True)
        next_value = next_q.gather(1, best).squeeze(1)
        alive = 1.0 - batch[SB.TERMINATEDS].float()
        rewards = batch[SB.REWARDS]
        if q_now is not None:
            rewards = rewards - advantage_alpha * _action_gap(q_now, batch[SB.ACTIONS])
        td_target = rewards + batch[N_STEP_GAMMA] * alive * next_value

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


def _target_outputs(
    forward: Callable[[torch.Tensor], torch.Tensor],
    batch: dict[str, torch.Tensor],
    advantage_alpha: float,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The target network's outputs for the next observations and, with advantage learning,
    for the observations too (one forward pass over both batches: half the layer calls)."""
    next_obs = batch[SB.NEXT_OBS]
    if not advantage_alpha:
        return forward(next_obs), None
    both = forward(torch.cat((batch[SB.OBS], next_obs)))
    return both[len(next_obs) :], both[: len(next_obs)]


def _action_gap(q: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
    """How far the taken action's value lies below the state's best one (>= 0)."""
    return q.max(dim=1).values - q.gather(1, actions.long().unsqueeze(1)).squeeze(1)


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
    advantage_alpha: float = 0.0,
) -> tuple[torch.Tensor, dict[str, Any]]:
    log_probs = torch.log_softmax(_taken(module.atom_logits(batch[SB.OBS]), batch[SB.ACTIONS]), -1)

    with torch.no_grad():
        next_obs = batch[SB.NEXT_OBS]
        next_logits, logits_now = _target_outputs(target.atom_logits, batch, advantage_alpha)
        next_probs = torch.softmax(next_logits, dim=-1)
        if double_q:
            best = module.q_values(next_obs).argmax(dim=1)
        else:
            best = (next_probs * target.support).sum(dim=-1).argmax(dim=1)
        alive = 1.0 - batch[SB.TERMINATEDS].float()
        rewards = batch[SB.REWARDS].float()
        if logits_now is not None:
            gap = _action_gap(target.expected_q(logits_now), batch[SB.ACTIONS])
            rewards = rewards - advantage_alpha * gap
        projected = projected_target(
            module.support, _taken(next_probs, best), rewards, batch[N_STEP_GAMMA] * alive
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
