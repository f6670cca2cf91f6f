"""Off-policy estimation (``input_evaluation``): what the policy being trained would earn on
the episodes of the input, from the behaviour policy's recorded ``action_logp`` and the
current policy's likelihood of the same actions.

- ``ImportanceSampling`` ("is"): per episode, the return weighted step-wise by the cumulative
  likelihood ratio ``p_t = prod_{i<=t} pi(a_i|s_i) / mu(a_i|s_i)``.
- ``WeightedImportanceSampling`` ("wis"): the same with each ``p_t`` divided by the mean of
  ``p_t`` over every episode the estimator has seen, which trades a bias for far less variance.

``estimate(batch)`` returns, over the batch's episodes, ``v_behavior`` (the mean discounted
return of the recorded actions), ``v_target`` (the estimate for the current policy), its
standard deviation ``v_target_std``, and ``v_gain = v_target / v_behavior``.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import numpy.typing as npt

from runtime.core.sample_batch import SampleBatch as SB

Array = npt.NDArray[Any]


class OffPolicyEstimator:
    """An estimator over ``policy``'s likelihoods with discount ``gamma``."""

    name = ""

    def __init__(self, policy: Any, gamma: float) -> None:
        self.policy = policy
        self.gamma = float(gamma)

    def estimate(self, batch: SB) -> dict[str, float]:
        """``v_behavior``, ``v_target``, ``v_target_std``, ``v_gain`` over the episodes of
        ``batch`` (rows of one episode contiguous, as every writer here writes them)."""
        if SB.ACTION_LOGP not in batch:
            raise ValueError(
                f"input_evaluation={self.name!r} needs the behaviour policy's 'action_logp' (or "
                f"'action_prob') of each input row; these rows have only "
                f"{sorted(batch.columns)} (set input_evaluation=[] to read them without "
                "estimates)"
            )
        if getattr(self.policy, "dist_class", object) is None:
            raise ValueError(
                f"input_evaluation={self.name!r}: the policy is a deterministic actor, whose "
                "actions have no likelihood to weigh the input with; set input_evaluation=[] "
                "(or ['simulation'])"
            )
        target_logp = self._target_logp(batch)
        behavior, target = [], []
        for rows in _episodes(batch):
            ratios = np.exp(
                np.cumsum(target_logp[rows] - np.asarray(batch[SB.ACTION_LOGP], np.float64)[rows])
            )
            discounts = self.gamma ** np.arange(len(ratios))
            rewards = np.asarray(batch[SB.REWARDS], dtype=np.float64)[rows]
            behavior.append(float(np.sum(discounts * rewards)))
            target.append(float(np.sum(discounts * self.weights(ratios) * rewards)))
        return summary(behavior, target)

    def weights(self, ratios: Array) -> Array:
        """What each step's reward is weighted by, from its cumulative likelihood ratio."""
        raise NotImplementedError

    def _target_logp(self, batch: SB) -> Array:
        state = []
        k = 0
        while SB.state_in(k) in batch:
            state.append(batch[SB.state_in(k)])
            k += 1
        logp = self.policy.compute_log_likelihoods(
            batch[SB.ACTIONS],
            batch[SB.OBS],
            state or None,
            batch.get(SB.PREV_ACTIONS) if state else None,
            batch.get(SB.PREV_REWARDS) if state else None,
        )
        return np.asarray(logp, dtype=np.float64)


class ImportanceSampling(OffPolicyEstimator):
    name = "is"

    def weights(self, ratios: Array) -> Array:
        return ratios


class WeightedImportanceSampling(OffPolicyEstimator):
    name = "wis"

    def __init__(self, policy: Any, gamma: float) -> None:
        super().__init__(policy, gamma)
        #: Per step t: the sum and count of ``p_t`` over every episode seen (its running mean
        #: normalises the ratios).
        self._sums = np.zeros(0)
        self._counts = np.zeros(0)

    def weights(self, ratios: Array) -> Array:
        length = len(ratios)
        if length > len(self._sums):
            grow = length - len(self._sums)
            self._sums = np.concatenate([self._sums, np.zeros(grow)])
            self._counts = np.concatenate([self._counts, np.zeros(grow)])
        self._sums[:length] += ratios
        self._counts[:length] += 1.0
        mean = self._sums[:length] / self._counts[:length]
        out: Array = np.divide(ratios, mean, out=np.zeros_like(ratios), where=mean > 0)
        return out


ESTIMATORS: dict[str, type[OffPolicyEstimator]] = {
    "is": ImportanceSampling,
    "wis": WeightedImportanceSampling,
}


def summary(behavior: list[float], target: list[float]) -> dict[str, float]:
    """The estimate over episodes: means, the target's standard deviation, and their ratio."""
    v_behavior = float(np.mean(behavior)) if behavior else float("nan")
    v_target = float(np.mean(target)) if target else float("nan")
    return {
        "v_behavior": v_behavior,
        "v_target": v_target,
        "v_target_std": float(np.std(target)) if target else float("nan"),
        "v_gain": v_target / v_behavior if v_behavior else float("nan"),
    }


def _episodes(batch: SB) -> list[slice]:
    """The row ranges of the batch's episodes (a run of one ``eps_id``)."""
    ids = np.asarray(batch[SB.EPS_ID]) if SB.EPS_ID in batch else np.zeros(len(batch))
    starts = [0, *(np.flatnonzero(ids[1:] != ids[:-1]) + 1).tolist(), len(batch)]
    return [slice(a, b) for a, b in itertools.pairwise(starts) if b > a]
