"""Advantages and value targets for many trajectories at once.

Works on ``(T, N)`` arrays: one column per sub-env, rows in time order. ``ends[t, n]`` marks
the last row of an episode segment (terminated, truncated, or the end of the fragment) and
``next_values[t, n]`` is what that row bootstraps from there: 0 after termination, V(final
observation) after truncation or at the end of a fragment.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

Array = npt.NDArray[np.float32]


def compute_advantages(
    rewards: Array,
    values: Array,
    next_values: Array,
    ends: npt.NDArray[np.bool_],
    gamma: float,
    lambda_: float = 1.0,
    use_gae: bool = True,
    use_critic: bool = True,
) -> tuple[Array, Array]:
    """``(advantages, value_targets)`` as in the reference's ``compute_advantages``.

    With GAE: generalised advantage estimation, targets = advantages + values. Without: the
    discounted (bootstrapped) return, minus the value prediction when a critic is used.
    """
    if not use_critic:
        values = np.zeros_like(values)
        next_values = np.zeros_like(next_values)
    following_values = np.empty_like(values)
    following_values[:-1] = values[1:]
    following_values[-1] = 0.0
    # Within a segment the next row's prediction is the bootstrap; at a segment end it is
    # ``next_values`` (0 when terminated).
    boot = np.where(ends, next_values, following_values)
    out = np.zeros_like(values, dtype=np.float32)
    if use_gae:
        deltas = rewards + gamma * boot - values
        decay = gamma * lambda_
        running = np.zeros(values.shape[1:], dtype=np.float32)
        for t in range(len(values) - 1, -1, -1):
            running = deltas[t] + decay * np.where(ends[t], 0.0, running)
            out[t] = running
        return out, (out + values).astype(np.float32)
    running = np.zeros(values.shape[1:], dtype=np.float32)
    for t in range(len(values) - 1, -1, -1):
        running = rewards[t] + gamma * np.where(ends[t], next_values[t], running)
        out[t] = running
    returns = out.astype(np.float32)
    advantages = returns - values if use_critic else returns
    return advantages.astype(np.float32), returns


def standardized(values: npt.NDArray[Any]) -> npt.NDArray[np.float32]:
    out: npt.NDArray[np.float32] = (values - values.mean()) / max(1e-4, float(values.std()))
    return out.astype(np.float32)
