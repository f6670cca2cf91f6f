"""Postprocessing of sampled fragments: advantages and value targets for many trajectories at
once, and ``add_advantages``, the step algorithms of the policy-gradient family choose.

Works on ``(T, N)`` arrays: one column per sub-env, rows in time order. ``ends[t, n]`` marks
the last row of an episode segment (terminated, truncated, or the end of the fragment) and
``next_values[t, n]`` is what that row bootstraps from there: 0 after termination, V(final
observation) after truncation or at the end of a fragment.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from rlconf.algorithms.off_policy_fields import n_step_range
from runtime.core.sample_batch import SampleBatch as SB
from runtime.core.settings import setting, settings_of

Array = npt.NDArray[np.float32]
#: Per-row discount of the bootstrap, gamma ** (steps summed), added by ``add_n_step_returns``.
N_STEP_GAMMA = "n_step_gamma"


S = TypeVar("S")


def _settings(policy: Any, settings_class: type[S], step: str) -> S:
    """The policy's settings for ``step`` (kept by a ``TorchPolicy``; built from ``config``
    for anything else that has one)."""
    cached = getattr(policy, "settings", None)
    if callable(cached):
        built: S = cached(settings_class, step)
        return built
    return settings_of(settings_class, policy.config, step)


@dataclass(frozen=True)
class AdvantageSettings:
    """``add_advantages``: a config without GAE keys (PG) computes discounted returns."""

    gamma: float
    lambda_: float = setting("lambda", default=1.0)
    use_gae: bool = False


@dataclass(frozen=True)
class NStepSettings:
    """``add_n_step_returns``: a config without ``n_step`` sums one step; ``seed`` seeds the
    draws of a range of n-steps."""

    gamma: float
    n_step: int | tuple[int, int] = 1
    seed: int | None = None


#: Per policy, the generator of its rows' n-steps where ``n_step`` is a range.
_N_STEP_RNGS: weakref.WeakKeyDictionary[Any, np.random.Generator] = weakref.WeakKeyDictionary()


def _n_step_rng(policy: Any, seed: int | None) -> np.random.Generator:
    """The policy's generator of n-steps, seeded from ``seed`` and its worker's index (each
    worker draws its own)."""
    rng = _N_STEP_RNGS.get(policy)
    if rng is None:
        worker = int(getattr(policy, "worker_index", 0))
        entropy = None if seed is None else [int(seed), worker]
        rng = _N_STEP_RNGS[policy] = np.random.default_rng(entropy)
    return rng


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


def add_advantages(columns: dict[str, npt.NDArray[Any]], policy: Any) -> None:
    """Postprocessing step of the policy-gradient family: ``advantages`` and ``value_targets``
    from ``rewards``, ``vf_preds`` (zeros without a critic), ``bootstrap_values`` and
    ``segment_ends`` on a fragment's ``(T, N)`` columns; GAE with ``use_gae`` and a critic,
    discounted returns otherwise (see ``compute_advantages``)."""
    settings = _settings(policy, AdvantageSettings, "add_advantages")
    has_critic = bool(policy.has_critic)
    ends = columns[SB.TERMINATEDS] | columns[SB.SEGMENT_ENDS]
    values = columns.get(SB.VF_PREDS)
    if values is None:
        values = np.zeros_like(columns[SB.REWARDS])
    advantages, targets = compute_advantages(
        columns[SB.REWARDS],
        values,
        columns[SB.BOOTSTRAP_VALUES],
        ends,
        gamma=float(settings.gamma),
        lambda_=float(settings.lambda_),
        use_gae=bool(settings.use_gae) and has_critic,
        use_critic=has_critic,
    )
    columns[SB.ADVANTAGES] = advantages
    columns[SB.VALUE_TARGETS] = targets


def add_n_step_returns(columns: dict[str, npt.NDArray[Any]], policy: Any) -> None:
    """Postprocessing step of Q-learning: each row's ``rewards`` become the discounted sum of up
    to ``n_step`` rewards within its episode segment, ``new_obs``/``terminateds`` those of the
    last step summed, and ``n_step_gamma`` the discount of the bootstrap, ``gamma ** steps``
    (fewer steps where the segment ends first: a termination, truncation or the fragment's
    end), on a fragment's ``(T, N)`` columns. With a range ``(low, high)`` each row sums its own
    number of steps, drawn from ``low`` to ``high - 1`` (``n_step_range``)."""
    settings = _settings(policy, NStepSettings, "add_n_step_returns")
    low, high = n_step_range(settings.n_step or 1)
    gamma = float(settings.gamma)
    rewards = columns[SB.REWARDS]
    ends = columns[SB.TERMINATEDS] | columns[SB.SEGMENT_ENDS]
    length = len(rewards)
    # Each row's steps, drawn where n_step is a range (None: every row sums `low`).
    steps = (
        _n_step_rng(policy, settings.seed).integers(low, high, size=rewards.shape)
        if high - low > 1
        else None
    )
    summed = np.zeros_like(rewards, dtype=np.float32)
    discount = np.ones_like(rewards, dtype=np.float32)
    last = np.zeros(rewards.shape, dtype=np.int64)
    for t in range(length):
        alive = np.ones(rewards.shape[1:], dtype=bool)
        last[t] = t
        for k in range(high - 1 if steps is not None else low):
            row = t + k
            if row >= length:
                break
            if steps is not None:
                alive &= k < steps[t]
            summed[t] += np.where(alive, discount[t] * rewards[row], 0.0)
            last[t] = np.where(alive, row, last[t])
            discount[t] = np.where(alive, discount[t] * gamma, discount[t])
            alive &= ~ends[row]
    envs = np.arange(rewards.shape[1])
    columns[SB.NEXT_OBS] = columns[SB.NEXT_OBS][last, envs]
    columns[SB.TERMINATEDS] = columns[SB.TERMINATEDS][last, envs]
    columns[SB.REWARDS] = summed
    columns[N_STEP_GAMMA] = discount


#: The discounted return of each row (bootstrapped where its episode segment is cut), added
#: by ``add_returns``: what MARWIL weighs the actions with. A column of its own, so that rows
#: another algorithm postprocessed (``advantages`` of PPO's GAE) are never taken for it.
RETURNS = "returns"


@dataclass(frozen=True)
class ReturnSettings:
    """``add_returns``: the discount only."""

    gamma: float


def add_returns(columns: dict[str, npt.NDArray[Any]], policy: Any) -> None:
    """Postprocessing step of MARWIL: ``returns``, the discounted sum of the rewards to the end
    of each episode segment, plus the discounted ``bootstrap_values`` where the segment is cut
    (V(new_obs) of the last row; 0 after a termination), on a fragment's ``(T, N)`` columns.

    The reference's ``compute_advantages(use_gae=False, use_critic=False)`` keeps the bootstrap
    (its ``use_critic`` only decides whether ``vf_preds`` are subtracted); the pure function
    here drops it without a critic, so it is called with a critic of zero values instead."""
    settings = _settings(policy, ReturnSettings, "add_returns")
    rewards = columns[SB.REWARDS]
    ends = columns[SB.TERMINATEDS] | columns[SB.SEGMENT_ENDS]
    _, returns = compute_advantages(
        rewards,
        np.zeros_like(rewards, dtype=np.float32),
        columns[SB.BOOTSTRAP_VALUES],
        ends,
        gamma=float(settings.gamma),
        use_gae=False,
        use_critic=True,
    )
    columns[RETURNS] = returns


#: The value each row bootstraps from where its episode segment ends (0 elsewhere), kept for
#: learners that compute their targets themselves (IMPALA's V-trace).
VALUES_BOOTSTRAPPED = "values_bootstrapped"


def keep_bootstrap_values(columns: dict[str, npt.NDArray[Any]], policy: Any) -> None:
    """Postprocessing step of IMPALA and APPO: ``values_bootstrapped``, the sampler's
    ``bootstrap_values`` (V of the observation after a cut segment's last row, under the
    policy that acted; 0 after a termination and inside segments), which is otherwise dropped
    with the fragment's private columns."""
    columns[VALUES_BOOTSTRAPPED] = np.asarray(columns[SB.BOOTSTRAP_VALUES], dtype=np.float32)


#: The columns each built-in step adds: input rows (files, a policy server) that already have
#: them are trained on as they are, unless ``postprocess_inputs`` (``runtime.offline``).
PRODUCES: dict[Any, tuple[str, ...]] = {
    add_advantages: (SB.ADVANTAGES, SB.VALUE_TARGETS),
    add_n_step_returns: (N_STEP_GAMMA,),
    keep_bootstrap_values: (VALUES_BOOTSTRAPPED,),
    add_returns: (RETURNS,),
}
