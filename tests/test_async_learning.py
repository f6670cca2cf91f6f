"""Learning tests of the asynchronous algorithms on their tuned files (fixed seeds, env-step
budgets with margin, 1 of 3 seeds; see tests/test_learning.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlconf import AlgorithmConfig
from rlconf.experiment import load_experiments
from tests.test_learning import _k_of_n

#: The slow tier (`python -m pytest -m slow`): learning to a target.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]


def _tuned(file: str, seed: int) -> AlgorithmConfig:
    (experiment,) = load_experiments(ROOT / file)
    return experiment.config.copy().debugging(seed=seed)


def test_tuned_impala_reaches_450_on_cartpole() -> None:
    """examples/tuned/cartpole-impala.yaml: 450 at 92k-111k env steps on seeds 0-4; the
    budget is 200k."""
    _k_of_n(lambda seed: _tuned("examples/tuned/cartpole-impala.yaml", seed), 450.0, 200_000)


def test_tuned_appo_reaches_450_on_cartpole() -> None:
    """examples/tuned/cartpole-appo.yaml: 450 at 65k-74k env steps on seeds 0-4 under the
    default and avx2 kernels (one run of ten 98k); the budget is 150k."""
    _k_of_n(lambda seed: _tuned("examples/tuned/cartpole-appo.yaml", seed), 450.0, 150_000)
