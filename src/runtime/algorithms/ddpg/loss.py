"""DDPG's and TD3's losses on one replayed batch, one per optimizer:

- critic: each critic's error against the TD target
  ``r + gamma^n * (1 - terminated) * min_i Q'_i(s', mu'(s') [+ clipped noise])``, ``mu'`` the
  target actor and ``Q'`` the target critics (the min over one critic is that critic); half the
  squared error, or the Huber loss with ``use_huber``; weighted per row by prioritized replay's
  importance weights;
- actor: ``-Q_1(s, mu(s))``, the first critic's value of the actor's own actions.

``l2_reg`` adds ``l2_reg / 2 * sum(w^2)`` over the weight matrices of the networks each loss
trains. Target-policy smoothing (TD3) adds Gaussian noise of ``target_noise``, clipped to
``[-target_noise_clip, target_noise_clip]``, to the target actor's actions, then clips them to
the action bounds."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from runtime.algorithms.ddpg.module import DDPGModule
from runtime.core.gradients import frozen
from runtime.core.postprocessing import N_STEP_GAMMA
from runtime.core.sample_batch import SampleBatch as SB


@dataclass(frozen=True)
class DDPGLossSettings:
    """The loss's switches (read once, when the learner is made)."""

    smooth_target_policy: bool = False
    target_noise: float = 0.2
    target_noise_clip: float = 0.5
    use_huber: bool = False
    huber_threshold: float = 1.0
    l2_reg: float = 0.0


def smoothing_noise(like: torch.Tensor, stddev: float, clip: float) -> torch.Tensor:
    """Gaussian noise of ``stddev`` shaped like ``like``, clipped to ``[-clip, clip]``."""
    return (torch.randn_like(like) * stddev).clamp(-clip, clip)


def l2_penalty(modules: Iterable[nn.Module]) -> torch.Tensor | float:
    """``sum(w^2) / 2`` over the weight matrices (not the biases) of ``modules``."""
    total: torch.Tensor | float = 0.0
    for module in modules:
        for name, param in module.named_parameters():
            if name.endswith("weight") and param.dim() > 1:
                total = total + 0.5 * param.pow(2).sum()
    return total


def ddpg_loss(
    module: DDPGModule,
    target: DDPGModule,
    batch: dict[str, torch.Tensor],
    settings: DDPGLossSettings,
    *,
    update_actor: bool,
) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    obs, next_obs = batch[SB.OBS], batch[SB.NEXT_OBS]

    # The TD target, from the target networks at the target actor's next actions.
    with torch.no_grad():
        next_actions = target.actions(next_obs)
        if settings.smooth_target_policy:
            noise = smoothing_noise(next_actions, settings.target_noise, settings.target_noise_clip)
            next_actions = target.clip_actions(next_actions + noise)
        next_q = target.q_values(next_obs, next_actions).min(dim=0).values
        alive = 1.0 - batch[SB.TERMINATEDS].float()
        td_target = batch[SB.REWARDS] + batch[N_STEP_GAMMA] * alive * next_q

    # Critic: every critic's value of the replayed actions against the target.
    q_taken = module.q_values(obs, batch[SB.ACTIONS].float())
    errors = q_taken - td_target.expand_as(q_taken)
    if settings.use_huber:
        per_row = F.huber_loss(
            q_taken,
            td_target.expand_as(q_taken),
            reduction="none",
            delta=settings.huber_threshold,
        ).sum(0)
    else:
        per_row = (0.5 * errors.pow(2)).sum(0)
    weights = batch.get("weights")
    critic_loss = (per_row * weights).mean() if weights is not None else per_row.mean()
    if settings.l2_reg:
        critic_loss = critic_loss + settings.l2_reg * l2_penalty(module.q_nets)
    losses = {"critic": critic_loss}
    stats: dict[str, Any] = {
        "critic_loss": critic_loss.detach(),
        "mean_q": q_taken[0].detach().mean(),
        "max_q": q_taken[0].detach().max(),
        "min_q": q_taken[0].detach().min(),
        "td_error": errors.detach().mean(0),
    }

    # Actor (every policy_delay-th step): the first critic's value of the actor's actions.
    if update_actor:
        # (Through a critic whose parameters it leaves alone: the learner takes one backward
        # pass of both losses.)
        with frozen(module.q_parameters()):
            q_policy = module.q_values(obs, module.actions(obs), first_only=True)[0]
        actor_loss = -q_policy.mean()
        if settings.l2_reg:
            actor_loss = actor_loss + settings.l2_reg * l2_penalty([module.model])
        losses["actor"] = actor_loss
        stats["actor_loss"] = actor_loss.detach()
    return losses, stats
