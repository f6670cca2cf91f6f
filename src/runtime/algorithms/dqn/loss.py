"""DQN's loss: the TD error of Q(s, a) against an n-step target from the target network
(double Q: the online network picks the next action, the target network values it), as Huber
or squared error, weighted per row by the replay buffer's importance weights."""

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
