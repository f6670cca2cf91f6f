"""Multi-agent CartPole: three independent CartPoles in one env, two PPO policies.

Agents 0 and 1 share the policy "shared" (one network learns from both agents' experience);
agent 2 has the policy "solo" to itself. Each policy overrides the algorithm's learning rate
through its ``PolicySpec(config=...)``. Training stops once every policy's mean return
(``result["policy_reward_mean"][policy_id]``, over the last 100 episodes) reaches the target,
or after the step budget.

An episode lasts until every agent's CartPole is done, and an agent that is done waits for the
others: once "shared" balances well, agent 2 acts in a small part of each episode and "solo"
gets few rows. Its higher learning rate makes up for that ("shared" learns from two agents).
Seeds 0-4 need 11k-37k env steps (``ATEN_CPU_CAPABILITY`` unset, default or avx2).

``MultiAgentCartPole``, ``map_agent`` and ``WorstPolicyReward`` live at module level, so they
have import paths (``examples.multi_agent_cartpole:map_agent``): the experiment file
``examples/tuned/multi-agent-cartpole-ppo.yaml`` names them.

Run it (exit code 1 if a policy does not reach the target within the budget)::

    python examples/multi_agent_cartpole.py                  # seed 0: 23k env steps, ~8 s
    python examples/multi_agent_cartpole.py --stop-timesteps 50000 --target 200 --seed 1
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Sequence
from typing import Any

from rlconf import PolicySpec, PPOConfig
from runtime import DefaultCallbacks, make_multi_agent

#: ``config["num_agents"]`` independent copies of CartPole-v1, agent ids 0..n-1.
MultiAgentCartPole = make_multi_agent("CartPole-v1")

NUM_AGENTS = 3
#: Each policy's learning rate (overrides of the algorithm's ``lr``): "solo" learns from one
#: agent, which acts less and less of each episode as "shared" improves.
LEARNING_RATES = {"shared": 5e-4, "solo": 2e-3}


def map_agent(agent_id: Any, episode: Any = None, worker: Any = None, **kwargs: Any) -> str:
    """Agents 0 and 1 act with (and train) "shared"; every other agent with "solo"."""
    return "shared" if agent_id in (0, 1) else "solo"


class WorstPolicyReward(DefaultCallbacks):
    """Adds ``worst_policy_reward_mean`` to every result: the lowest of the policies' mean
    returns (NaN until every policy has finished an episode). A stop criterion on it, as in
    the experiment file, stops once every policy has reached the value."""

    def on_train_result(self, *, algorithm: Any, result: dict[str, Any], **kwargs: Any) -> None:
        means = result["policy_reward_mean"]
        policy_ids = algorithm.config["policies"]
        result["worst_policy_reward_mean"] = (
            min(means[pid] for pid in policy_ids)
            if all(pid in means for pid in policy_ids)
            else math.nan
        )


def make_config(seed: int = 0, num_agents: int = NUM_AGENTS) -> PPOConfig:
    return (
        PPOConfig()
        .environment(MultiAgentCartPole, env_config={"num_agents": num_agents})
        # 8 sub-envs x 32 steps = 256 env steps per iteration (up to 3 x 256 agent steps).
        .rollouts(num_workers=0, num_envs_per_worker=8, rollout_fragment_length=32)
        .training(
            train_batch_size=256,
            sgd_minibatch_size=64,
            num_sgd_iter=10,
            grad_clip=0.5,
            gamma=0.98,
            lambda_=0.8,
            kl_coeff=0.0,
            vf_clip_param=1e5,
            model={"fcnet_hiddens": [64, 64], "vf_share_layers": False},
        )
        .multi_agent(
            policies={
                policy_id: PolicySpec(config={"lr": lr}) for policy_id, lr in LEARNING_RATES.items()
            },
            policy_mapping_fn=map_agent,
        )
        .callbacks(WorstPolicyReward)
        .debugging(seed=seed)
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    # RLCONF_EXAMPLE_STEPS: the short budget the test suite runs the examples with.
    budget = int(os.environ.get("RLCONF_EXAMPLE_STEPS", 100_000))
    parser.add_argument("--stop-timesteps", type=int, default=budget, help="env step budget")
    parser.add_argument("--target", type=float, default=150.0, help="mean return per policy")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    algo = make_config(args.seed).build()
    try:
        while True:
            result = algo.train()
            means: dict[str, float] = result["policy_reward_mean"]
            shown = "  ".join(f"{pid} {means[pid]:6.1f}" for pid in sorted(means))
            print(
                f"iter {result['training_iteration']:3d}  env steps {result['timesteps_total']:6d}"
                f"  agent steps {result['agent_timesteps_total']:6d}  {shown}",
                flush=True,
            )
            reached = result["worst_policy_reward_mean"] >= args.target  # False while NaN
            if reached or result["timesteps_total"] >= args.stop_timesteps:
                break
    finally:
        algo.stop()

    for policy_id, lr in LEARNING_RATES.items():
        print(
            f"policy {policy_id:6s} lr {lr:g}: mean return "
            f"{result['policy_reward_mean'].get(policy_id, float('nan')):.1f} "
            f"(min {result['policy_reward_min'].get(policy_id, float('nan')):.0f}, "
            f"max {result['policy_reward_max'].get(policy_id, float('nan')):.0f})"
        )
    steps = result["timesteps_total"]
    if reached:
        print(f"every policy reached {args.target} after {steps} env steps")
        return 0
    print(f"not every policy reached {args.target} within {steps} env steps", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
