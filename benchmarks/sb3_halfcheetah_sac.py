"""The reference run of ``learn_halfcheetah_sac.py``: Stable-Baselines3's SAC with its defaults
on HalfCheetah-v5 (``workload_settings.SAC``: MlpPolicy with [256, 256] actor and critics, lr
3e-4, batch 256, a replay of 1M, tau 0.005, gamma 0.99, learning from step 100 with one
gradient step per env step, the entropy coefficient tuned from 1.0), evaluated as
``examples/tuned/halfcheetah-sac.yaml`` is: 5 greedy episodes (``deterministic=True``) every
``--eval-every`` env steps, by SB3's own ``EvalCallback``.

It writes a results folder that ``rlconf plot`` reads, as ``rlconf train`` does: ``params.json``
(the settings and the seed: the seeds of one run differ in nothing else, so the plot draws
them as one curve) and ``result.json``, a row every ``--report-every`` env steps with
``timesteps_total``, ``episode_reward_mean`` (the mean return of the last 100 training
episodes, SB3's ``ep_info_buffer``, as ours smooths over 100) and, at each evaluation,
``evaluation/episode_reward_mean``.

Run by ``learn_halfcheetah_sac.py`` under an interpreter that has ``stable-baselines3`` and
``mujoco`` (not dependencies of this project). Prints the machine (``machine.py``), then one
JSON line: env steps, the last evaluation's mean, gradient updates, torch's threads.

    python benchmarks/sb3_halfcheetah_sac.py --seed 0 --logdir DIR [--steps 50000]
        [--eval-every 10000] [--report-every 1000]
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path
from typing import Any

from workload_settings import MUJOCO_ENV, SAC

EVAL_EPISODES = 5


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--logdir", type=Path, required=True, help="the results folder to write")
    parser.add_argument("--steps", type=int, default=50_000)
    parser.add_argument("--eval-every", type=int, default=10_000)
    parser.add_argument("--report-every", type=int, default=1000)
    args = parser.parse_args()
    if args.eval_every % args.report_every:
        parser.error(
            f"--eval-every {args.eval_every} must be a multiple of --report-every "
            f"{args.report_every} (every evaluation lands on a result row)"
        )

    import gymnasium as gym
    import stable_baselines3  # type: ignore[import-not-found]
    import torch
    from machine import print_machine
    from stable_baselines3 import SAC as SB3SAC
    from stable_baselines3.common.callbacks import (  # type: ignore[import-not-found]
        BaseCallback,
        CallbackList,
        EvalCallback,
    )
    from stable_baselines3.common.monitor import Monitor  # type: ignore[import-not-found]
    from stable_baselines3.common.vec_env import DummyVecEnv  # type: ignore[import-not-found]

    print_machine()
    params: dict[str, Any] = {
        "algorithm": "Stable-Baselines3 SAC",
        "stable_baselines3": stable_baselines3.__version__,
        "env": MUJOCO_ENV,
        "net_arch": list(SAC.hiddens),
        "learning_rate": SAC.actor_lr,
        "buffer_size": SAC.buffer,
        "learning_starts": SAC.learning_starts,
        "batch_size": SAC.batch,
        "tau": SAC.tau,
        "gamma": SAC.gamma,
        "train_freq": 1,
        "gradient_steps": 1,
        "ent_coef": "auto",
        "eval_freq": args.eval_every,
        "n_eval_episodes": EVAL_EPISODES,
        "deterministic_eval": True,
        "seed": args.seed,
    }
    args.logdir.mkdir(parents=True, exist_ok=True)
    (args.logdir / "params.json").write_text(json.dumps(params, indent=2) + "\n")
    results = (args.logdir / "result.json").open("w", encoding="utf-8")
    start = time.perf_counter()

    eval_env = DummyVecEnv([lambda: Monitor(gym.make(MUJOCO_ENV))])
    # Its own seeds, apart from the training env's.
    eval_env.seed(args.seed + 10_000)
    evaluation = EvalCallback(
        eval_env,
        n_eval_episodes=EVAL_EPISODES,
        eval_freq=args.eval_every,
        deterministic=True,
        verbose=0,
    )

    class Report(BaseCallback):  # type: ignore[misc]
        """A result row every ``--report-every`` env steps; after ``evaluation`` (it runs
        first in the list), so a row at an evaluation's step carries that evaluation."""

        def _on_step(self) -> bool:
            steps = int(self.model.num_timesteps)
            if steps % args.report_every:
                return True
            returns = [float(e["r"]) for e in self.model.ep_info_buffer]
            row: dict[str, Any] = {
                "timesteps_total": steps,
                "training_iteration": steps // args.report_every,
                "episode_reward_mean": sum(returns) / len(returns) if returns else None,
                "episodes_total": int(self.model._episode_num),
                "num_grad_updates": int(self.model._n_updates),
                "time_total_s": round(time.perf_counter() - start, 3),
            }
            if steps % args.eval_every == 0:
                mean = float(evaluation.last_mean_reward)
                row["evaluation"] = {
                    "episode_reward_mean": mean if math.isfinite(mean) else None,
                    "episodes_this_iter": EVAL_EPISODES,
                }
            results.write(json.dumps(row) + "\n")
            results.flush()
            return True

    model = SB3SAC(
        "MlpPolicy",
        gym.make(MUJOCO_ENV),
        learning_rate=SAC.actor_lr,
        buffer_size=SAC.buffer,
        learning_starts=SAC.learning_starts,
        batch_size=SAC.batch,
        tau=SAC.tau,
        gamma=SAC.gamma,
        train_freq=1,
        gradient_steps=1,
        ent_coef="auto",
        policy_kwargs={"net_arch": list(SAC.hiddens)},
        seed=args.seed,
        device="cpu",
        verbose=0,
    )
    model.learn(total_timesteps=args.steps, callback=CallbackList([evaluation, Report()]))
    results.close()
    print(
        json.dumps(
            {
                "seed": args.seed,
                "env_steps": int(model.num_timesteps),
                "eval_reward": float(evaluation.last_mean_reward),
                "grad_updates": int(model._n_updates),
                "threads": torch.get_num_threads(),
            }
        )
    )


if __name__ == "__main__":
    main()
