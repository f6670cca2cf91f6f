"""Learning tests: fixed seeds and an env-step budget, never a wall-clock limit.

Floating-point results differ between CPUs, torch's kernel sets (`ATEN_CPU_CAPABILITY`) and
library versions, and so do trajectories. Each test therefore asks k of n seeds to reach the
target within a budget well above what the settings need (the margins are in each docstring,
measured with `ATEN_CPU_CAPABILITY` default, avx2 and avx512): one unlucky trajectory does not
fail the suite, and a broken algorithm still does. k is 1 of 3 unless a test says otherwise:
every seed measured solves within the budget, so a second seed would add minutes to the slow
tier and no power to catch a broken algorithm (which misses on all three).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from rlconf import A2CConfig, AlgorithmConfig, PGConfig, PPOConfig

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))

from tuned_ppo_cartpole import tuned_config

from tests.test_learning_continuous import _greedy_curve

#: The slow tier (`python -m pytest -m slow`): learning to a target.
pytestmark = pytest.mark.slow

DQN_FILE = "examples/tuned/cartpole-dqn.yaml"


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


def _k_of_n(
    make_config: Callable[[int], AlgorithmConfig],
    target: float,
    budget: int,
    *,
    seeds: tuple[int, ...] = (0, 1, 2),
    need: int = 1,
) -> list[tuple[int, int, float]]:
    """Train seed after seed until ``need`` of them reach ``target`` within ``budget`` steps
    (stopping early once that is settled either way); returns (seed, steps, return) per run."""
    runs: list[tuple[int, int, float]] = []
    for index, seed in enumerate(seeds):
        result = _train_until(make_config(seed), target, budget)
        runs.append((seed, int(result["timesteps_total"]), float(result["episode_reward_mean"])))
        solved = sum(reward >= target for _, _, reward in runs)
        if solved >= need or solved + len(seeds) - index - 1 < need:
            break
    solved = sum(reward >= target for _, _, reward in runs)
    assert solved >= need, f"{solved} of {len(runs)} seeds reached {target}: {runs}"
    return runs


def test_tuned_ppo_solves_cartpole_within_130k_steps_on_the_embedded_default() -> None:
    """The main job's settings need 64.5k-97.3k steps on seeds 0-4 under every kernel set
    (and 58.4k-97.3k on seeds 0-14 under two)."""

    def config(seed: int) -> AlgorithmConfig:
        return tuned_config(seed)

    runs = _k_of_n(config, 450, 130_000)
    # Solved within the budget (a run that missed stopped just past it).
    assert all(steps <= 130_000 for _, steps, reward in runs if reward >= 450), runs
    algo = tuned_config(0).build()
    try:
        assert algo.train()["num_healthy_workers"] == 0  # the embedded default: no actors
    finally:
        algo.stop()


def test_pg_passes_150_on_cartpole() -> None:
    """REINFORCE with a [32] network: 63k-68k steps on seeds 0-2 under every kernel set."""

    def config(seed: int) -> AlgorithmConfig:
        return (
            PGConfig()
            .environment("CartPole-v1")
            .rollouts(num_envs_per_worker=10, rollout_fragment_length=100)
            .training(lr=0.004, gamma=0.99, train_batch_size=1000, model={"fcnet_hiddens": [32]})
            .debugging(seed=seed)
        )

    _k_of_n(config, 150, 130_000)


def test_a2c_passes_150_on_cartpole() -> None:
    """Synchronous A2C with gradient clipping: 57k-103k steps on seeds 0-2 under every kernel
    set."""

    def config(seed: int) -> AlgorithmConfig:
        return (
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
            .debugging(seed=seed)
        )

    _k_of_n(config, 150, 200_000)


def test_ppo_learns_pendulum_with_continuous_actions() -> None:
    """PPO with a Gaussian policy and gradient clipping: 74k-102k steps on seeds 0-4 under every
    kernel set (without the clipping, 74k-193k)."""

    def config(seed: int) -> AlgorithmConfig:
        return (
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
                grad_clip=0.5,
                model={"fcnet_hiddens": [64, 64]},
            )
            .debugging(seed=seed)
        )

    _k_of_n(config, -400, 200_000)


def test_tuned_dqn_greedy_evaluation_reaches_450_on_cartpole_and_stays() -> None:
    """examples/tuned/cartpole-dqn.yaml: a seed counts once its greedy evaluation reaches the
    file's target of 450 within 60k env steps and every evaluation of the next 4k env steps
    (two more) stays at 450 or better; one of seeds 0, 1 and 4 must (k of n: every seed
    measured does; a second one cost a minute and added no power). Seeds 0, 1 and 4 first
    reached 450 at 6k / 8k / 6k (avx2 kernels) and 8k / 6k / 4k (default) and held to 100k
    (seeds 0-4 under each kernel set; with the learning rate at 1e-4 by 100k rather than 5e-5
    from 40k, seed 4 under avx2 fell to 404 once at 57k). Before advantage learning, seed 4
    under avx2 fell to 362 one evaluation after its pass; with the discount of 0.99 and one
    Q-value per action, seed 2 reached 500 at 10k and fell to 160 by 43k."""
    runs: list[tuple[int, list[Any]]] = []
    for seed in (0, 1, 4):
        runs.append((seed, _greedy_curve(DQN_FILE, seed, 450, 60_000, past=4_000)))
        if _stays(runs[-1][1], 450):
            return
    pytest.fail(f"no seed reached 450 and stayed: {runs}")


def _stays(curve: list[Any], target: float) -> bool:
    """Whether ``curve`` reached ``target`` and never fell below it after."""
    first = next((i for i, (_, score) in enumerate(curve) if score >= target), None)
    return first is not None and all(score >= target for _, score in curve[first:])
