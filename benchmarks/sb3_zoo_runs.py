"""The reference runs of ``vs_sb3.py``: Stable-Baselines3's PPO or DQN with the RL Zoo's
CartPole-v1 settings (rl-baselines3-zoo ``hyperparams/ppo.yml``, ``dqn.yml``), stopping as our
main jobs stop.

- ppo: 8 envs (``make_vec_env``: DummyVecEnv, Monitor), MlpPolicy, n_steps 32, batch_size 256,
  gae_lambda 0.8, gamma 0.98, n_epochs 20, ent_coef 0.0, learning rate and clip range decaying
  linearly from 1e-3 (``lin_0.001``) and 0.2 over the zoo's 100k steps; stops at the first mean
  training return of at least 450 over the last 100 episodes (SB3's ``ep_info_buffer``), as
  ``examples/tuned/cartpole-ppo.yaml`` stops on ``episode_reward_mean`` (or at 100k steps).
- dqn: MlpPolicy with net_arch [256, 256], learning_rate 2.3e-3, batch_size 64, buffer_size
  100k, learning_starts 1000, gamma 0.99, target_update_interval 10, train_freq 256,
  gradient_steps 128, exploration_fraction 0.16 and exploration_final_eps 0.04 of the zoo's 50k
  steps; a greedy evaluation (10 episodes, deterministic) every 2,000 env steps, stopping at the
  first mean of at least 450, as ``examples/tuned/cartpole-dqn.yaml`` does (or at 50k steps).
  With ``--trace STEPS`` it does not stop: it trains for STEPS env steps (exploring over the
  same 8,000 steps) and prints every evaluation (``stay_solved.py``).

Torch runs one thread, as our main jobs' driver does, unless ``OMP_NUM_THREADS`` is set (then
torch's own choice, as on our side). Run by ``vs_sb3.py`` under an interpreter that has
``stable-baselines3`` (the ``sb3`` extra, benchmark-only). Prints the machine (``machine.py``),
then one JSON line: env steps, the return reached, whether it is solved, torch's threads.

    python benchmarks/sb3_zoo_runs.py --algo ppo --seed 0
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Callable
from typing import Any

ENV = "CartPole-v1"
TARGET = 450.0
PPO_STEPS = 100_000
DQN_STEPS = 50_000
EVAL_EVERY = 2000


def linear(start: float) -> Callable[[float], float]:
    """The zoo's ``lin_<start>``: from ``start`` down to 0 over the run."""
    return lambda progress_remaining: progress_remaining * start


def ppo(seed: int) -> dict[str, Any]:
    import numpy as np
    from stable_baselines3 import PPO  # type: ignore[import-not-found]
    from stable_baselines3.common.callbacks import BaseCallback  # type: ignore[import-not-found]
    from stable_baselines3.common.env_util import make_vec_env  # type: ignore[import-not-found]

    class StopAtTarget(BaseCallback):  # type: ignore[misc]
        """Stops once the mean return over the last 100 episodes reaches the target."""

        def __init__(self) -> None:
            super().__init__()
            self.reward = float("nan")
            self.last: object = None

        def _on_step(self) -> bool:
            # The buffer holds each episode's info dict: a new last one, a new mean.
            episodes = self.model.ep_info_buffer
            if len(episodes) == 0 or episodes[-1] is self.last:
                return True
            self.last = episodes[-1]
            self.reward = float(np.mean([e["r"] for e in episodes]))
            return self.reward < TARGET

    env = make_vec_env(ENV, n_envs=8, seed=seed)
    model = PPO(
        "MlpPolicy",
        env,
        n_steps=32,
        batch_size=256,
        gae_lambda=0.8,
        gamma=0.98,
        n_epochs=20,
        ent_coef=0.0,
        learning_rate=linear(1e-3),
        clip_range=linear(0.2),
        seed=seed,
        verbose=0,
    )
    stop = StopAtTarget()
    model.learn(total_timesteps=PPO_STEPS, callback=stop)
    return {"env_steps": int(model.num_timesteps), "reward": stop.reward}


def dqn(seed: int, trace: int = 0) -> dict[str, Any]:
    """The zoo's DQN until the first greedy mean of 450; with ``trace``, for ``trace`` env
    steps without stopping, with every evaluation's ``[env steps, mean]`` in ``trace``."""
    import gymnasium as gym
    from stable_baselines3 import DQN
    from stable_baselines3.common.callbacks import (
        BaseCallback,
        EvalCallback,
        StopTrainingOnRewardThreshold,
    )
    from stable_baselines3.common.monitor import Monitor  # type: ignore[import-not-found]

    curve: list[list[float]] = []

    class Record(BaseCallback):  # type: ignore[misc]
        """Called after each evaluation: keeps its mean."""

        def _on_step(self) -> bool:
            curve.append([int(self.parent.num_timesteps), float(self.parent.last_mean_reward)])
            return True

    env = gym.make(ENV)
    eval_env = Monitor(gym.make(ENV))
    stop = StopTrainingOnRewardThreshold(reward_threshold=TARGET, verbose=0)
    evaluation = EvalCallback(
        eval_env,
        callback_on_new_best=None if trace else stop,
        callback_after_eval=Record() if trace else None,
        n_eval_episodes=10,
        eval_freq=EVAL_EVERY,
        deterministic=True,
        verbose=0,
    )
    steps = trace or DQN_STEPS
    model = DQN(
        "MlpPolicy",
        env,
        learning_rate=2.3e-3,
        batch_size=64,
        buffer_size=100_000,
        learning_starts=1000,
        gamma=0.99,
        target_update_interval=10,
        train_freq=256,
        gradient_steps=128,
        # The zoo's 16% of 50k steps: 8,000 steps, whatever the budget.
        exploration_fraction=0.16 * DQN_STEPS / steps,
        exploration_final_eps=0.04,
        policy_kwargs={"net_arch": [256, 256]},
        seed=seed,
        verbose=0,
    )
    model.learn(total_timesteps=steps, callback=evaluation)
    result: dict[str, Any] = {
        "env_steps": int(model.num_timesteps),
        "reward": float(evaluation.last_mean_reward),
        "grad_updates": int(model._n_updates),
    }
    if trace:
        result |= {"trace": curve, "target": TARGET}
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--algo", choices=["ppo", "dqn"], required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--trace", type=int, default=0, help="dqn: env steps, without stopping")
    args = parser.parse_args()

    import torch
    from machine import print_machine

    if "OMP_NUM_THREADS" not in os.environ:
        torch.set_num_threads(1)
    print_machine()
    result = ppo(args.seed) if args.algo == "ppo" else dqn(args.seed, args.trace)
    result = {"algo": args.algo, "seed": args.seed, **result}
    result["solved"] = result["reward"] >= TARGET
    result["threads"] = torch.get_num_threads()
    print(json.dumps(result))


if __name__ == "__main__":
    main()
