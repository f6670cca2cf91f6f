"""Off-policy estimation (``input_evaluation``): importance sampling and weighted importance
sampling against a hand-computed example, and a gain of 1 when the policy evaluated is the
one that acted."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rlconf import PGConfig
from runtime.core.sample_batch import SampleBatch
from runtime.offline import ImportanceSampling, WeightedImportanceSampling


class _FixedPolicy:
    """A target policy whose likelihood of each row's action is written in its obs."""

    def compute_log_likelihoods(self, actions: Any, obs: Any, *args: Any) -> Any:
        return np.log(np.asarray(obs)[:, 0])


def _two_episodes() -> SampleBatch:
    """Episode A: rewards 1, 2; behaviour probabilities 0.5, 0.5; target 1.0, 0.25.
    Episode B: reward 4; behaviour 0.8; target 0.4."""
    return SampleBatch(
        {
            "obs": np.array([[1.0], [0.25], [0.4]], np.float32),
            "actions": np.zeros(3, np.int64),
            "rewards": np.array([1.0, 2.0, 4.0], np.float32),
            "action_logp": np.log(np.array([0.5, 0.5, 0.8])).astype(np.float32),
            "eps_id": np.array([0, 0, 1]),
        }
    )


def test_importance_sampling_matches_the_hand_computed_example() -> None:
    # A: ratios p = 2, 1 -> behaviour 1 + 0.5*2 = 2, target 2*1 + 0.5*1*2 = 3
    # B: ratio 0.5 -> behaviour 4, target 2
    out = ImportanceSampling(_FixedPolicy(), gamma=0.5).estimate(_two_episodes())
    assert out["v_behavior"] == pytest.approx(3.0)
    assert out["v_target"] == pytest.approx(2.5)
    assert out["v_target_std"] == pytest.approx(0.5)
    assert out["v_gain"] == pytest.approx(2.5 / 3.0)


def test_weighted_importance_sampling_matches_the_hand_computed_example() -> None:
    # A first: the mean ratios are A's own (2, 1), so its weights are 1 -> target 2.
    # B: the mean ratio at step 0 is (2 + 0.5) / 2 = 1.25 -> weight 0.4 -> target 1.6.
    estimator = WeightedImportanceSampling(_FixedPolicy(), gamma=0.5)
    out = estimator.estimate(_two_episodes())
    assert out["v_behavior"] == pytest.approx(3.0)
    assert out["v_target"] == pytest.approx(1.8)
    assert out["v_target_std"] == pytest.approx(0.2)
    assert out["v_gain"] == pytest.approx(0.6)
    # the normalisation keeps every episode seen: a second pass weighs A with (2.5+2)/3
    again = estimator.estimate(_two_episodes())
    assert again["v_target"] != pytest.approx(out["v_target"])


def test_the_gain_is_one_when_the_target_is_the_behaviour_policy(tmp_path: Path) -> None:
    def config(**offline: Any) -> PGConfig:
        return (
            PGConfig()
            .environment("CartPole-v1")
            .rollouts(num_workers=0, rollout_fragment_length=100)
            .training(train_batch_size=100)
            .offline_data(**offline)
            .debugging(seed=0)
        )

    writer = config(output=str(tmp_path)).build()
    try:
        writer.train()  # the first batch is sampled with the initial weights
    finally:
        writer.stop()
    reader = config(input_=str(tmp_path), input_evaluation=["is", "wis"]).build()
    try:
        worker = reader.workers.local_worker()
        worker.sample()  # the same seed: the same initial weights evaluate it
        estimates = worker.pop_off_policy_estimates()[0]
        result = reader.train()
    finally:
        reader.stop()
    for name in ("is", "wis"):
        assert estimates[name]["v_gain"] == pytest.approx(1.0, abs=1e-4)
        assert estimates[name]["v_target"] == pytest.approx(estimates[name]["v_behavior"], rel=1e-4)
    assert set(result["off_policy_estimation"]) == {"is", "wis"}
    assert set(result["off_policy_estimation"]["is"]) == {
        "v_behavior",
        "v_target",
        "v_target_std",
        "v_gain",
    }
