"""The policy server of the external application API: PPO learns CartPole-v1 from episodes
that clients run in their own processes (``cartpole_client.py``) and report over HTTP.

The algorithm has no env of its own: its input is a ``PolicyServerInput`` (made by the worker
with its ``IOContext``), and the spaces come from the config. Remote-inference clients ask it
for every action; local-inference clients act with a copy of the policy and send their rows.

    python examples/serving/cartpole_server.py --port 9900 --stop-reward 150
    python examples/serving/cartpole_client.py --port 9900 --inference-mode remote

The server listens on 127.0.0.1 unless given ``--address 0.0.0.0``; beyond the machine, set a
``--token`` (and give the clients the same one). It stops when the mean return of the clients'
episodes reaches ``--stop-reward`` (exit status 0) or after ``--stop-timesteps`` (status 1).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import gymnasium as gym
import numpy as np

from rlconf import PPOConfig
from runtime.env.policy_server_input import PolicyServerInput


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--address", default="127.0.0.1", help="interface to listen on")
    parser.add_argument("--port", type=int, default=9900)
    parser.add_argument("--token", default=None, help="a shared secret the clients must send")
    parser.add_argument("--stop-reward", type=float, default=150.0)
    parser.add_argument("--stop-timesteps", type=int, default=100_000)
    parser.add_argument("--idle-timeout", type=float, default=3.0)
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args(argv)


def server_config(args: argparse.Namespace) -> PPOConfig:
    def make_input(ioctx: Any) -> PolicyServerInput:
        return PolicyServerInput(
            ioctx, args.address, args.port, idle_timeout=args.idle_timeout, token=args.token
        )

    return (
        PPOConfig()
        # No env here: the clients run CartPole-v1; its spaces are all the server needs.
        .environment(
            None,
            observation_space=gym.spaces.Box(-np.inf, np.inf, (4,), np.float32),
            action_space=gym.spaces.Discrete(2),
        )
        .offline_data(input_=make_input)
        # One server, in the driver's worker.
        .rollouts(num_workers=0, rollout_fragment_length=256)
        # The tuned CartPole settings (examples/tuned_ppo_cartpole.py).
        .training(
            train_batch_size=256,
            sgd_minibatch_size=64,
            num_sgd_iter=10,
            lr=1e-3,
            grad_clip=0.5,
            gamma=0.98,
            lambda_=0.8,
            clip_param=0.2,
            kl_coeff=0.0,
            vf_clip_param=1e5,
            model={"fcnet_hiddens": [64, 64], "vf_share_layers": False},
        )
        .debugging(seed=args.seed)
    )


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    algo = server_config(args).build()
    print(f"policy server listening on {args.address}:{args.port}", flush=True)
    try:
        while True:
            result = algo.train()
            reward = result["episode_reward_mean"]
            steps = result["timesteps_total"]
            print(
                f"iter {result['training_iteration']:4d}  steps {steps:7d}  "
                f"episodes {result['episodes_total']:5d}  reward {reward:6.1f}",
                flush=True,
            )
            if reward == reward and reward >= args.stop_reward:  # (NaN before any episode)
                print(f"reached mean return {reward:.1f} >= {args.stop_reward} in {steps} steps")
                return 0
            if steps >= args.stop_timesteps:
                print(f"stopped at {steps} steps with mean return {reward:.1f}")
                return 1
    finally:
        algo.stop()


if __name__ == "__main__":
    sys.exit(main())
