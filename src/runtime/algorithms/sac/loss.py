"""SAC's losses on one replayed batch, one per optimizer:

- critic: each Q-network's Huber error (or half its squared error: ``td_error_loss_fn``) against
  the soft TD target
  ``r + gamma^n * (1 - terminated) * (min_i Q'_i(s', a') - alpha * log pi(a'|s'))``, ``a'`` drawn
  from the current policy and ``Q'`` the target networks; weighted per row by prioritized
  replay's importance weights;
- actor: ``alpha * log pi(a|s) - min_i Q_i(s, a)`` for a reparameterised ``a ~ pi(.|s)``;
- entropy: ``-log_alpha * (log pi(a|s) + target_entropy)``, which lowers alpha while the
  policy's entropy is above the target and raises it below.

Discrete actions take the expectations over the actions exactly (the policy's probabilities
times the per-action values) instead of sampling. Each loss reaches its own optimizer's
parameters only (the actor's runs through frozen Q-networks), so one backward pass of their sum
trains all three (``Learner.separate_losses``)."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from runtime.algorithms.sac.module import SACModule
from runtime.core.distributions import Categorical, SquashedGaussian
from runtime.core.gradients import frozen
from runtime.core.postprocessing import N_STEP_GAMMA
from runtime.core.sample_batch import SampleBatch as SB


def sac_loss(
    module: SACModule,
    target: SACModule,
    batch: dict[str, torch.Tensor],
    *,
    target_entropy: float,
    deterministic: bool = False,
    td_error_loss_fn: str = "huber",
) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    if module.discrete:
        return _discrete_sac_loss(
            module, target, batch, target_entropy=target_entropy, td_error_loss_fn=td_error_loss_fn
        )
    obs, next_obs = batch[SB.OBS], batch[SB.NEXT_OBS]
    alpha = module.log_alpha.exp().detach()

    # The policy's actions now (with gradients into the policy) and their log-probabilities.
    dist = module.action_distribution(obs)
    assert isinstance(dist, SquashedGaussian)
    actions, logp = dist.deterministic_logp() if deterministic else dist.sample_logp()

    # The soft TD target, from the target Q-networks at the policy's next actions.
    with torch.no_grad():
        next_dist = module.action_distribution(next_obs)
        assert isinstance(next_dist, SquashedGaussian)
        next_actions, next_logp = (
            next_dist.deterministic_logp() if deterministic else next_dist.sample_logp()
        )
        next_q = target.q_values(next_obs, next_actions).min(dim=0).values
        next_value = next_q - alpha * next_logp
        alive = 1.0 - batch[SB.TERMINATEDS].float()
        td_target = batch[SB.REWARDS] + batch[N_STEP_GAMMA] * alive * next_value

    # Critic: every Q-network's value of the replayed actions against the target.
    q_taken = module.q_values(obs, batch[SB.ACTIONS].float())
    critic_loss, td_error = _critic_loss(q_taken, td_target, batch.get("weights"), td_error_loss_fn)

    # Actor: the entropy-regularised value of the policy's own actions (through Q-networks
    # whose parameters it leaves alone: the learner takes one backward pass of all losses).
    with frozen(module.q_parameters()):
        q_policy = module.q_values(obs, actions).min(dim=0).values
    actor_loss = (alpha * logp - q_policy).mean()

    # Entropy: move log(alpha) so that the policy's entropy approaches the target.
    entropy_loss = -(module.log_alpha * (logp.detach() + target_entropy)).mean()

    return _result(critic_loss, actor_loss, entropy_loss, q_taken, td_error, logp, alpha)


def _discrete_sac_loss(
    module: SACModule,
    target: SACModule,
    batch: dict[str, torch.Tensor],
    *,
    target_entropy: float,
    td_error_loss_fn: str,
) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    obs, next_obs = batch[SB.OBS], batch[SB.NEXT_OBS]
    alpha = module.log_alpha.exp().detach()

    # The policy's probabilities of every action.
    dist = module.action_distribution(obs)
    assert isinstance(dist, Categorical)
    log_probs = dist.log_probs
    probs = log_probs.exp()

    # The soft TD target: the expected soft value of the next state under the policy.
    with torch.no_grad():
        next_dist = module.action_distribution(next_obs)
        assert isinstance(next_dist, Categorical)
        next_log_probs = next_dist.log_probs
        next_q = target.q_values(next_obs).min(dim=0).values
        next_value = (next_log_probs.exp() * (next_q - alpha * next_log_probs)).sum(-1)
        alive = 1.0 - batch[SB.TERMINATEDS].float()
        td_target = batch[SB.REWARDS] + batch[N_STEP_GAMMA] * alive * next_value

    # Critic: every Q-network's value of the replayed actions against the target.
    q_all = module.q_values(obs)
    index = batch[SB.ACTIONS].long().view(1, -1, 1).expand(len(q_all), -1, 1)
    q_taken = q_all.gather(-1, index).squeeze(-1)
    critic_loss, td_error = _critic_loss(q_taken, td_target, batch.get("weights"), td_error_loss_fn)

    # Actor: the expected entropy-regularised value over the actions (the values are
    # constants to it: it trains the policy only).
    q_min = q_all.detach().min(dim=0).values
    actor_loss = (probs * (alpha * log_probs - q_min)).sum(-1).mean()

    # Entropy: the exact expectation of log pi under pi.
    logp = (probs * log_probs).sum(-1)
    entropy_loss = -(module.log_alpha * (logp.detach() + target_entropy)).mean()

    return _result(critic_loss, actor_loss, entropy_loss, q_taken, td_error, logp, alpha)


def _critic_loss(
    q_taken: torch.Tensor,
    td_target: torch.Tensor,
    weights: torch.Tensor | None,
    td_error_loss_fn: str = "huber",
) -> tuple[torch.Tensor, torch.Tensor]:
    """The summed Huber losses (or halved squared errors, ``"mse"``) of the Q-networks
    ``(num_q, B)`` and the per-row TD error (the mean over the Q-networks: the priorities of
    prioritized replay)."""
    targets = td_target.expand_as(q_taken)
    if td_error_loss_fn == "mse":
        elementwise = 0.5 * F.mse_loss(q_taken, targets, reduction="none")
    else:
        elementwise = F.huber_loss(q_taken, targets, reduction="none", delta=1.0)
    per_row = elementwise.sum(0)
    loss = (per_row * weights).mean() if weights is not None else per_row.mean()
    td_error = (q_taken - td_target).mean(0)
    return loss, td_error


def _result(
    critic_loss: torch.Tensor,
    actor_loss: torch.Tensor,
    entropy_loss: torch.Tensor,
    q_taken: torch.Tensor,
    td_error: torch.Tensor,
    logp: torch.Tensor,
    alpha: torch.Tensor,
) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    losses = {"critic": critic_loss, "actor": actor_loss, "entropy": entropy_loss}
    stats: dict[str, Any] = {
        "critic_loss": critic_loss.detach(),
        "actor_loss": actor_loss.detach(),
        "alpha_loss": entropy_loss.detach(),
        "alpha_value": alpha,
        "log_alpha_value": alpha.log(),
        "policy_entropy": -logp.detach().mean(),
        "mean_q": q_taken[0].detach().mean(),
        "max_q": q_taken[0].detach().max(),
        "min_q": q_taken[0].detach().min(),
        "td_error": td_error.detach(),
    }
    return losses, stats
