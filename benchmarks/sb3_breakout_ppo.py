"""The reference run of ``learn_breakout_ppo.py``: Stable-Baselines3's PPO ``CnnPolicy`` on
Breakout with CleanRL's ``ppo_atari`` settings (``workload_settings.ATARI_PPO``: 8 envs x 128
steps, 4 epochs of minibatches of 256, clip 0.1, entropy 0.01, value 0.5, gradient norm 0.5,
gamma 0.99, GAE lambda 0.95, the learning rate decaying linearly from 2.5e-4 to 0 over
``--steps``), over ``make_atari_env`` and ``VecFrameStack(4)`` as ``sb3_workloads.py`` makes
them (SB3's ``AtariWrapper``: the same DeepMind preprocessing as ours).

It writes a results folder that ``rlconf plot`` reads, as ``rlconf train`` does: ``params.json``
(the settings and the seed: the seeds of one run differ in nothing else, so the plot draws them
as one band) and ``result.json``, a row at the end of every rollout (every 1,024 env steps, as
our iterations) with ``timesteps_total``, ``game_reward_mean`` (the mean return of the last 100
games in SB3's ``ep_info_buffer``: its ``Monitor`` sits under the ``AtariWrapper``, so it counts
whole games and unclipped game points) and ``games_total``. The key is the one
``atari_game_returns.py`` adds to ours; ``episode_reward_mean`` is left out, as ours counts
lives under that name.

Run by ``learn_breakout_ppo.py`` under an interpreter that has ``stable-baselines3``, ale-py and
opencv (not dependencies of this project). Prints the machine (``machine.py``), then one JSON
line: env steps, the last ``game_reward_mean``, the games, gradient updates, torch's threads.

    python benchmarks/sb3_breakout_ppo.py --seed 0 --logdir DIR [--steps 200000]
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from workload_settings import ATARI_ENV, ATARI_PPO


def linear(start: float) -> Callable[[float], float]:
    """SB3's schedule of ``start`` decaying linearly to 0 over ``learn()``'s budget (SB3 calls
    it with the fraction of the budget left)."""
    return lambda remaining: remaining * start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--logdir", type=Path, required=True, help="the results folder to write")
    parser.add_argument("--steps", type=int, default=200_000)
    args = parser.parse_args()

    import stable_baselines3  # type: ignore[import-not-found]
    import torch
    from machine import print_machine
    from sb3_workloads import atari_env
    from stable_baselines3 import PPO
    from stable_baselines3.common.callbacks import BaseCallback  # type: ignore[import-not-found]

    print_machine()
    s = ATARI_PPO
    params: dict[str, Any] = {
        "algorithm": "Stable-Baselines3 PPO",
        "stable_baselines3": stable_baselines3.__version__,
        "policy": "CnnPolicy",
        "env": ATARI_ENV,
        "wrappers": "make_atari_env + VecFrameStack(4)",
        "n_envs": s.num_envs,
        "n_steps": s.num_steps,
        "batch_size": s.minibatch,
        "n_epochs": s.epochs,
        "learning_rate": f"linear from {s.lr} to 0 over {args.steps} steps",
        "clip_range": s.clip,
        "ent_coef": s.ent_coef,
        "vf_coef": s.vf_coef,
        "max_grad_norm": s.max_grad_norm,
        "gamma": s.gamma,
        "gae_lambda": s.gae_lambda,
        "seed": args.seed,
    }
    args.logdir.mkdir(parents=True, exist_ok=True)
    (args.logdir / "params.json").write_text(json.dumps(params, indent=2) + "\n")
    results = (args.logdir / "result.json").open("w", encoding="utf-8")
    start = time.perf_counter()
    minibatches = s.batch // s.minibatch

    class Report(BaseCallback):  # type: ignore[misc]
        """Counts the games as they end, and writes a result row after every rollout."""

        def __init__(self) -> None:
            super().__init__()
            self.games = 0
            self.rollouts = 0
            self.mean: float | None = None

        def _on_step(self) -> bool:
            self.games += sum("episode" in info for info in self.locals["infos"])
            return True

        def _on_rollout_end(self) -> None:
            self.rollouts += 1
            returns = [float(e["r"]) for e in self.model.ep_info_buffer]
            self.mean = sum(returns) / len(returns) if returns else None
            row = {
                "timesteps_total": int(self.model.num_timesteps),
                "training_iteration": self.rollouts,
                "game_reward_mean": self.mean,
                "games_total": self.games,
                # SB3 counts epochs; the gradient steps are its epochs' minibatches.
                "num_grad_updates": int(self.model._n_updates) * minibatches,
                "time_total_s": round(time.perf_counter() - start, 3),
            }
            results.write(json.dumps(row) + "\n")
            results.flush()

    report = Report()
    model = PPO(
        "CnnPolicy",
        atari_env(s.num_envs, args.seed),
        n_steps=s.num_steps,
        batch_size=s.minibatch,
        n_epochs=s.epochs,
        learning_rate=linear(s.lr),
        clip_range=s.clip,
        ent_coef=s.ent_coef,
        vf_coef=s.vf_coef,
        max_grad_norm=s.max_grad_norm,
        gamma=s.gamma,
        gae_lambda=s.gae_lambda,
        seed=args.seed,
        device="cpu",
        verbose=0,
    )
    model.learn(total_timesteps=args.steps, callback=report)
    results.close()
    print(
        json.dumps(
            {
                "seed": args.seed,
                "env_steps": int(model.num_timesteps),
                "game_reward_mean": report.mean,
                "games_total": report.games,
                "grad_updates": int(model._n_updates) * minibatches,
                "threads": torch.get_num_threads(),
            }
        )
    )


if __name__ == "__main__":
    main()
