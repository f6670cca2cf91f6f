"""Search spaces in fields, Tune param spaces, and rlconf.sweep grids."""

from __future__ import annotations

import sys

import pytest
from ray import tune
from ray.tune.search.variant_generator import generate_variants

from rlconf import ConfigError, PPOConfig, sweep
from tests import child_process


def test_search_spaces_are_stored_and_each_candidate_validated() -> None:
    config = PPOConfig().training(
        lr=tune.grid_search([1e-3, 1e-4]),  # type: ignore[arg-type]
        gamma=tune.uniform(0.9, 0.999),
        num_sgd_iter=tune.choice([5, 10]),
        sgd_minibatch_size=tune.randint(32, 129),
    )
    assert config.to_dict()["lr"] == {"grid_search": [1e-3, 1e-4]}
    config.validate()  # cross-field checks skip fields that hold a search space
    with pytest.raises(ConfigError, match="candidate 'x'"):
        PPOConfig().training(lr=tune.grid_search([1e-3, "x"]))  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="candidate 0"):
        PPOConfig().training(num_sgd_iter=tune.choice([0, 10]))
    with pytest.raises(ConfigError, match="gamma"):
        PPOConfig().training(gamma=tune.uniform(0.5, 2.0))
    with pytest.raises(ConfigError, match="candidate"):
        PPOConfig().rollouts(num_workers=tune.uniform(0.5, 2.5))
    with pytest.raises(ConfigError, match="non-empty"):
        PPOConfig().training(lr={"grid_search": []})  # type: ignore[arg-type]


def test_to_dict_with_search_spaces_is_a_tune_param_space() -> None:
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .training(lr=tune.grid_search([1e-3, 1e-4]), gamma=tune.grid_search([0.9, 0.99]))  # type: ignore[arg-type]
    )
    variants = [spec for _, spec in generate_variants(config.to_dict())]
    assert len(variants) == 4
    resolved = [PPOConfig.from_dict(spec) for spec in variants]
    assert {(c.lr, c.gamma) for c in resolved} == {
        (1e-3, 0.9),
        (1e-3, 0.99),
        (1e-4, 0.9),
        (1e-4, 0.99),
    }


def test_grid_expands_into_validated_independent_configs() -> None:
    base = PPOConfig().environment("CartPole-v1")
    configs = sweep.grid(base, lr=[1e-3, 1e-4], gamma=[0.9, 0.99], lambda_=[0.95])
    assert [(c.lr, c.gamma) for c in configs] == [
        (1e-3, 0.9),
        (1e-3, 0.99),
        (1e-4, 0.9),
        (1e-4, 0.99),
    ]
    assert all(type(c) is PPOConfig and c["lambda"] == 0.95 for c in configs)
    configs[0].training(lr=0.5)
    assert configs[1].lr == 1e-3 and base.lr == 5e-5


def test_grid_reports_every_bad_axis_value_before_expanding() -> None:
    with pytest.raises(ConfigError) as info:
        sweep.grid(PPOConfig(), lr=[1e-3, -1.0, "x"], num_wrkers=[1])
    fields = [issue.field for issue in info.value.issues]
    assert fields.count("lr") == 2 and "num_wrkers" in fields


def test_grid_validates_each_combination() -> None:
    with pytest.raises(ConfigError, match="train_batch_size=100"):
        sweep.grid(PPOConfig(), train_batch_size=[4000, 100])


def test_search_spaces_are_detected_without_importing_ray() -> None:
    code = (
        "import sys, rlconf\n"
        "c = rlconf.PPOConfig().training(lr={'grid_search': [0.1, 0.01]})\n"
        "print(sorted(m for m in ('ray', 'torch', 'gymnasium', 'runtime') if m in sys.modules))"
    )
    out = child_process.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"
