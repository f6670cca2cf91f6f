"""Multi-agent learning: two PPO policies, one per agent of a two-agent CartPole, each reach a
mean return of 150 within an env-step budget (fixed seeds, never a wall-clock limit).

Env steps each seed needed (mean return >= 150 for both policies), measured with
``ATEN_CPU_CAPABILITY`` unset (avx512 on the development machine), default and avx2:

    seed      0      1      2      3      4
    native  37.4k  37.4k  25.3k  31.5k  23.3k
    avx2    37.4k  37.4k  25.3k  31.5k  23.3k
    default 55.0k  41.0k  37.1k  34.3k  39.7k

The budget, 100k env steps, is 1.8 times the worst of them. A run takes 5-15 s.
"""

from __future__ import annotations

from typing import Any

import pytest

from rlconf import PolicySpec, PPOConfig
from runtime import make_multi_agent

#: The slow tier (`python -m pytest -m slow`): learning to a target.
pytestmark = pytest.mark.slow

TARGET = 150.0
BUDGET = 100_000
POLICIES = ("p0", "p1")

TwoCartPoles = make_multi_agent("CartPole-v1")


def one_policy_per_agent(agent_id: Any, episode: Any = None, worker: Any = None, **kw: Any) -> str:
    return f"p{agent_id}"


def two_policy_config(seed: int) -> PPOConfig:
    """PPO with the tuned single-agent settings (examples/tuned/cartpole-ppo.yaml, without the
    learning-rate decay); the learning rate is each policy's own."""
    return (
        PPOConfig()
        .environment(TwoCartPoles, env_config={"num_agents": 2})
        .rollouts(num_workers=0, num_envs_per_worker=8, rollout_fragment_length=32)
        .training(
            train_batch_size=256,
            sgd_minibatch_size=64,
            num_sgd_iter=10,
            grad_clip=0.5,
            gamma=0.98,
            lambda_=0.8,
            clip_param=0.2,
            kl_coeff=0.0,
            vf_clip_param=1e5,
            model={"fcnet_hiddens": [64, 64], "vf_share_layers": False},
        )
        .multi_agent(
            policies={pid: PolicySpec(config={"lr": 1e-3}) for pid in POLICIES},
            policy_mapping_fn=one_policy_per_agent,
        )
        .debugging(seed=seed)
    )


def train_until_every_policy_reaches(
    config: PPOConfig, target: float = TARGET, budget: int = BUDGET
) -> dict[str, Any]:
    """The first result in which every policy's mean return is >= target, or the first past
    the budget."""
    algo = config.build()
    try:
        while True:
            result: dict[str, Any] = algo.train()
            means = result["policy_reward_mean"]
            if all(means.get(pid, float("-inf")) >= target for pid in POLICIES):
                return result
            if result["timesteps_total"] >= budget:
                return result
    finally:
        algo.stop()


def test_two_ppo_policies_each_pass_150_on_two_agent_cartpole() -> None:
    """Seeds 0, 1, 2 in turn until one has every policy at 150 within the budget (k of n: see
    tests/test_learning.py)."""
    runs: list[tuple[int, int, dict[str, float]]] = []
    for seed in (0, 1, 2):
        result = train_until_every_policy_reaches(two_policy_config(seed))
        means = result["policy_reward_mean"]
        steps = result["timesteps_total"]
        runs.append((seed, steps, dict(means)))
        if all(means[pid] >= TARGET for pid in POLICIES):
            assert steps <= BUDGET
            # Both policies learned, on their own agent's rows: two agents act in most steps.
            assert set(result["info"]["learner"]) == set(POLICIES)
            assert steps < result["agent_timesteps_total"] <= 2 * steps
            return
    raise AssertionError(f"no seed of 3 had every policy at {TARGET}: {runs}")
