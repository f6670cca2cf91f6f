"""APPO's loss (the reference's APPO torch policy): PPO's clipped surrogate on V-trace
advantages, a value loss on the V-trace targets, an optional KL penalty and an entropy bonus,
each the mean over the valid steps of the batch's time-major layout.

Three policies meet here: the behaviour policy ``mu`` that sampled the actions (its
``action_logp``), the target network's ``pi_old`` (a copy of the learner's policy that the
learner refreshes every few updates) and the current ``pi``. As the reference:

- V-trace corrects from ``mu`` to ``pi_old``, not to ``pi``: the targets stay fixed while the
  current policy moves within one target-network period, as PPO's advantages are fixed for its
  epochs (the reference passes the target model's logits as V-trace's target policy).
- The surrogate's ratio is ``pi / pi_old``, written ``clip(mu / pi_old, 0, 2) * pi / mu``: the
  factor ``mu / pi_old`` (``is_ratio``, reported as ``mean_IS``/``var_IS``) is clipped so that
  a target network far from the behaviour policy cannot blow the ratio up.
- The KL penalty (``use_kl_loss``) is ``KL(pi_old || pi)``, the distance from the target
  network; its coefficient adapts in the learner, as PPO's.

With ``vtrace=False`` it is PPO's loss on the batch's GAE ``advantages`` and ``value_targets``
(the reference's APPO without V-trace: ``add_advantages`` postprocessing), the ratio and the
KL against the behaviour policy.
"""

from __future__ import annotations

from typing import Any

import torch

from runtime.algorithms.impala.loss import masked_explained_variance, reduce_valid
from runtime.algorithms.impala.vtrace import TimeMajor, vtrace_on_layout
from runtime.core.module import RLModule
from runtime.core.sample_batch import SampleBatch as SB

#: The bounds of ``mu / pi_old`` in the surrogate's ratio (the reference's).
IS_RATIO_MAX = 2.0


def appo_loss(
    module: RLModule,
    batch: dict[str, torch.Tensor],
    *,
    target_module: RLModule,
    layout: TimeMajor,
    gamma: float,
    clip_param: float,
    vf_loss_coeff: float,
    entropy_coeff: float,
    use_kl_loss: bool,
    kl_coeff: float,
    vtrace: bool = True,
    clip_rho_threshold: float | None = 1.0,
    clip_pg_rho_threshold: float | None = 1.0,
) -> tuple[torch.Tensor, dict[str, Any]]:
    """``batch``: flat rows (``actions``, ``action_logp``, ``action_dist_inputs``, ``rewards``,
    ``terminateds``, ``values_bootstrapped``; ``advantages`` and ``value_targets`` without
    V-trace; the modules' inputs) laid out by ``layout``. ``target_module``: the target
    network (read without gradient)."""
    out = module.forward_train(batch)
    dist = module.dist_class(out[SB.ACTION_DIST_INPUTS])
    tm = layout.time_major
    valid = layout.mask(out[SB.VF_PREDS].device)
    actions = batch[SB.ACTIONS]
    logp = tm(dist.logp(actions))
    behaviour_logp = tm(batch[SB.ACTION_LOGP])
    values = tm(out[SB.VF_PREDS])
    stats: dict[str, Any] = {}

    if vtrace:
        with torch.no_grad():
            old_dist = module.dist_class(target_module.forward_train(batch)[SB.ACTION_DIST_INPUTS])
            old_logp = tm(old_dist.logp(actions))

        # V-trace from the behaviour policy to the target network's policy.
        targets = vtrace_on_layout(
            layout,
            batch,
            values=out[SB.VF_PREDS],
            behaviour_logp=behaviour_logp,
            target_logp=old_logp,
            gamma=gamma,
            clip_rho_threshold=clip_rho_threshold,
            clip_pg_rho_threshold=clip_pg_rho_threshold,
        )
        advantages, value_targets = targets.pg_advantages, targets.vs

        # pi / pi_old through the behaviour policy, its first factor clipped.
        is_ratio = torch.exp(behaviour_logp - old_logp).clamp(0.0, IS_RATIO_MAX)
        ratio = is_ratio * torch.exp(logp - behaviour_logp)
        stats["mean_IS"] = is_ratio[valid].mean()
        stats["var_IS"] = is_ratio[valid].var()
        anchor = old_dist
    else:
        # PPO on the sampler's GAE: the ratio against the policy that sampled.
        advantages = tm(batch[SB.ADVANTAGES]).to(values.dtype)
        value_targets = tm(batch[SB.VALUE_TARGETS]).to(values.dtype)
        ratio = torch.exp(logp - behaviour_logp)
        anchor = module.dist_class(batch[SB.ACTION_DIST_INPUTS])

    # Clipped surrogate: the pessimistic of the plain and the clipped objective.
    clipped = ratio.clamp(1 - clip_param, 1 + clip_param)
    surrogate = torch.min(advantages * ratio, advantages * clipped)
    policy_loss = -reduce_valid(surrogate, valid)

    # The critic regresses on the value targets (unclipped, unlike PPO's).
    vf_loss = 0.5 * reduce_valid((values - value_targets).pow(2), valid)

    # An entropy bonus keeps the policy from collapsing early.
    entropy = reduce_valid(tm(dist.entropy()), valid)
    total = policy_loss + vf_loss_coeff * vf_loss
    if entropy_coeff:
        total = total - entropy_coeff * entropy

    # KL penalty against the old policy (its coefficient adapts between updates).
    if use_kl_loss:
        kl = reduce_valid(tm(anchor.kl(dist)), valid)
        total = total + kl_coeff * kl
        stats["kl"] = kl.detach()

    stats.update(
        total_loss=total.detach(),
        policy_loss=policy_loss.detach(),
        vf_loss=vf_loss.detach(),
        entropy=entropy.detach(),
        vf_explained_var=masked_explained_variance(value_targets, values.detach(), valid),
    )
    return total, stats
