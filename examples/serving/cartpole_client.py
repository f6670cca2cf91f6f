"""A client of ``cartpole_server.py``: it runs CartPole-v1 episodes in this process and asks
the policy server for actions (``--inference-mode remote``: one request per step) or acts with
a local copy of the policy that it refreshes every ``--update-interval`` seconds and reports
its rows (``--inference-mode local``).

    python examples/serving/cartpole_client.py --port 9900 --inference-mode local

``--off-policy`` takes random actions and logs them (``log_action``) instead of asking.
It stops after ``--episodes`` episodes (0: until the server goes away), or once the mean return
of its last 20 episodes reaches ``--stop-reward``.
"""

from __future__ import annotations

import argparse
import contextlib
import sys

import gymnasium as gym
import numpy as np

from runtime.env.policy_client import PolicyClient, PolicyServerError

#: What a call raises once the server has stopped.
GONE = (ConnectionError, TimeoutError, PolicyServerError)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--address", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9900)
    parser.add_argument("--inference-mode", choices=["local", "remote"], default="local")
    parser.add_argument("--update-interval", type=float, default=2.0)
    parser.add_argument("--token", default=None)
    parser.add_argument("--stop-reward", type=float, default=float("inf"))
    parser.add_argument("--episodes", type=int, default=0)
    parser.add_argument("--off-policy", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    env = gym.make("CartPole-v1")
    env.action_space.seed(args.seed)
    client = PolicyClient(
        f"{args.address}:{args.port}",
        inference_mode=args.inference_mode,
        update_interval=args.update_interval,
        token=args.token,
    )
    returns: list[float] = []
    obs, _ = env.reset(seed=args.seed)
    try:
        while args.episodes <= 0 or len(returns) < args.episodes:
            episode_id = client.start_episode()
            total = 0.0
            while True:
                if args.off_policy:
                    action = env.action_space.sample()
                    client.log_action(episode_id, obs, action)
                else:
                    action = client.get_action(episode_id, obs)
                obs, reward, terminated, truncated, _ = env.step(action)
                total += float(reward)
                client.log_returns(episode_id, float(reward))
                if terminated or truncated:
                    client.end_episode(episode_id, obs)
                    obs, _ = env.reset()
                    break
            returns.append(total)
            recent = float(np.mean(returns[-20:]))
            if len(returns) % 20 == 0:
                print(f"episodes {len(returns):5d}  mean return (last 20) {recent:6.1f}")
            if len(returns) >= 20 and recent >= args.stop_reward:
                print(f"reached mean return {recent:.1f} >= {args.stop_reward}")
                break
    except GONE as error:
        print(f"the server went away after {len(returns)} episodes: {error}")
    finally:
        with contextlib.suppress(*GONE):
            client.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
