"""The reference run of ``solve_pendulum_sac.py``: Stable-Baselines3's SAC with its zoo settings
for Pendulum-v1 (rl-baselines3-zoo: MlpPolicy, learning_rate 1e-3, the other settings SAC's
defaults: [256, 256] networks, batch 256, one gradient step per env step, learning from step
100), evaluated as ``examples/tuned/pendulum-sac.yaml`` is: 10 greedy episodes every 1,000 env
steps, stopping at the first mean of at least -250 (or at 20,000 steps).

Run by ``solve_pendulum_sac.py`` under an interpreter that has ``stable-baselines3`` (not a
dependency of this project). Prints the machine (``machine.py``), then one JSON line: env steps,
the last evaluation's mean, gradient updates.

    python benchmarks/sb3_pendulum_sac.py --seed 0

With ``--trace STEPS`` it does not stop at the target: it trains for STEPS env steps and prints
every evaluation (``stay_solved.py``).
"""

from __future__ import annotations

import argparse
import json

TARGET = -250.0
EVAL_EVERY = 1000
MAX_STEPS = 20000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--trace",
        type=int,
        default=0,
        help="train this many env steps without stopping; print every evaluation",
    )
    args = parser.parse_args()

    import gymnasium as gym
    import torch
    from machine import print_machine
    from stable_baselines3 import SAC  # type: ignore[import-not-found]
    from stable_baselines3.common.callbacks import (  # type: ignore[import-not-found]
        BaseCallback,
        EvalCallback,
        StopTrainingOnRewardThreshold,
    )

    # As the zoo runs it: one thread per process.
    torch.set_num_threads(1)
    print_machine()
    curve: list[list[float]] = []

    class Record(BaseCallback):  # type: ignore[misc]
        """Called after each evaluation (``--trace``): keeps its mean."""

        def _on_step(self) -> bool:
            curve.append([int(self.parent.num_timesteps), float(self.parent.last_mean_reward)])
            return True

    env = gym.make("Pendulum-v1")
    eval_env = gym.make("Pendulum-v1")
    stop = StopTrainingOnRewardThreshold(reward_threshold=TARGET, verbose=0)
    evaluation = EvalCallback(
        eval_env,
        callback_on_new_best=None if args.trace else stop,
        callback_after_eval=Record() if args.trace else None,
        n_eval_episodes=10,
        eval_freq=EVAL_EVERY,
        deterministic=True,
        verbose=0,
    )
    model = SAC("MlpPolicy", env, learning_rate=1e-3, seed=args.seed, verbose=0)
    model.learn(total_timesteps=args.trace or MAX_STEPS, callback=evaluation)
    result = {
        "seed": args.seed,
        "env_steps": int(model.num_timesteps),
        "eval_reward": float(evaluation.last_mean_reward),
        "grad_updates": int(model._n_updates),
    }
    if args.trace:
        result |= {"trace": curve, "target": TARGET}
    print(json.dumps(result))


if __name__ == "__main__":
    main()
