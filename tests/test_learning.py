"""Learning tests: a fixed seed and an env-step budget, never a wall-clock limit."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from rlconf import A2CConfig, AlgorithmConfig, PGConfig, PPOConfig

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))

from tuned_ppo_cartpole import tuned_config


def _train_until(config: AlgorithmConfig, target: float, budget: int) -> dict[str, Any]:
    """Train until the smoothed mean return reaches ``target`` or ``budget`` steps pass."""
    algo = config.build()
    try:
        while True:
            result: dict[str, Any] = algo.train()
            if result["episode_reward_mean"] >= target or result["timesteps_total"] >= budget:
                return result
    finally:
        algo.stop()


def test_ppo_solves_cartpole_within_100k_steps_on_the_embedded_default() -> None:
    result = _train_until(tuned_config(seed=0), 450, 100_000)
    assert result["episode_reward_mean"] >= 450, result["episode_reward_mean"]
    assert result["timesteps_total"] <= 100_000
    assert result["num_healthy_workers"] == 0


def test_pg_passes_150_on_cartpole() -> None:
    config = (
        PGConfig()
        .environment("CartPole-v1")
        .rollouts(num_envs_per_worker=10, rollout_fragment_length=100)
        .training(lr=0.004, gamma=0.99, train_batch_size=1000, model={"fcnet_hiddens": [32]})
        .debugging(seed=0)
    )
    result = _train_until(config, 150, 100_000)
    assert result["episode_reward_mean"] >= 150, result["episode_reward_mean"]


def test_a2c_passes_150_on_cartpole() -> None:
    config = (
        A2CConfig()
        .environment("CartPole-v1")
        .rollouts(num_workers=0, num_envs_per_worker=8, rollout_fragment_length=25)
        .training(
            lr=0.007,
            gamma=0.99,
            lambda_=1.0,
            train_batch_size=200,
            vf_loss_coeff=0.5,
            entropy_coeff=0.0,
            grad_clip=0.5,
            model={"fcnet_hiddens": [64, 64]},
        )
        .reporting(min_time_s_per_reporting=0)
        .debugging(seed=0)
    )
    result = _train_until(config, 150, 150_000)
    assert result["episode_reward_mean"] >= 150, result["episode_reward_mean"]


def test_ppo_learns_pendulum_with_continuous_actions() -> None:
    config = (
        PPOConfig()
        .environment("Pendulum-v1")
        .rollouts(num_workers=0, num_envs_per_worker=4, rollout_fragment_length=1024)
        .training(
            lr=1e-3,
            gamma=0.9,
            lambda_=0.95,
            train_batch_size=4096,
            sgd_minibatch_size=256,
            num_sgd_iter=10,
            kl_coeff=0.0,
            clip_param=0.2,
            vf_clip_param=1e5,
            model={"fcnet_hiddens": [64, 64]},
        )
        .debugging(seed=0)
    )
    result = _train_until(config, -400, 160_000)
    assert result["episode_reward_mean"] > -400, result["episode_reward_mean"]
