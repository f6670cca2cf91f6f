"""A learning-rate sweep two ways: with Ray Tune, and as a plain loop over ``rlconf.sweep``.

Tune runs the trials side by side (each trial reserves the bundles
``PPO.default_resource_request`` gives), reports training and evaluation metrics, and keeps
the algorithm's checkpoints. The plain loop needs no Tune at all: every grid point is a
validated config you build and train yourself.

Run: python examples/sweep_lr.py [iterations]
"""

from __future__ import annotations

import os
import sys
import tempfile
from typing import Any

from rlconf import PPOConfig, sweep

LEARNING_RATES = [1e-3, 3e-4, 1e-4]


def base_config() -> PPOConfig:
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .rollouts(num_workers=0, num_envs_per_worker=8, rollout_fragment_length=64)
        .training(train_batch_size=512, sgd_minibatch_size=128, num_sgd_iter=5)
        # Evaluate greedy actions for 5 episodes after every training iteration.
        .evaluation(
            evaluation_interval=1,
            evaluation_duration=5,
            evaluation_config=PPOConfig.overrides(explore=False),
        )
        .debugging(seed=0)
    )


def tune_sweep(iterations: int, storage_path: str) -> Any:
    """Three trials, one per learning rate; returns Tune's ResultGrid."""
    from ray import tune

    import runtime  # noqa: F401  (registers "PPO" etc. as Tune trainables)

    config = base_config().training(lr=sweep.grid_search(LEARNING_RATES))
    tuner = tune.Tuner(
        "PPO",
        # A config holding search spaces is a Tune param space (the config object itself is
        # accepted too; to_dict() keeps type checkers happy).
        param_space=config.to_dict(),
        run_config=tune.RunConfig(
            name="lr_sweep",
            storage_path=storage_path,
            stop={"training_iteration": iterations, "episode_reward_mean": 150},
            checkpoint_config=tune.CheckpointConfig(checkpoint_at_end=True),
            verbose=0,
        ),
    )
    return tuner.fit()


def plain_sweep(iterations: int) -> dict[float, float]:
    """The same grid without Tune: lr -> evaluation return after ``iterations``."""
    returns = {}
    for config in sweep.grid(base_config(), lr=LEARNING_RATES):
        algo = config.build()
        try:
            for _ in range(iterations):
                result = algo.train()
        finally:
            algo.stop()
        returns[config.lr] = result["evaluation"]["episode_reward_mean"]
    return returns


def main(iterations: int, storage_path: str) -> tuple[Any, dict[float, float]]:
    """Both sweeps, printed; returns Tune's ResultGrid and the plain loop's returns."""
    results = tune_sweep(iterations, storage_path)
    for result in results:
        print(
            f"tune  lr={result.config['lr']:<7g} "
            f"return={result.metrics['episode_reward_mean']:6.1f} "
            f"eval={result.metrics['evaluation']['episode_reward_mean']:6.1f}"
        )
    returns = plain_sweep(iterations)
    for lr, eval_return in returns.items():
        print(f"plain lr={lr:<7g} eval={eval_return:6.1f}")
    return results, returns


if __name__ == "__main__":
    default = os.environ.get("RLCONF_EXAMPLE_ITERATIONS", "10")
    with tempfile.TemporaryDirectory() as storage:
        main(int(sys.argv[1] if len(sys.argv) > 1 else default), storage)
