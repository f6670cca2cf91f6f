"""Early stopping with ASHA: learning rates drawn log-uniformly, each trial stopped as soon as
it falls behind the others at a rung (after 4, 8 and 16 of 32 iterations), so the budget goes
to the promising ones.

``rlconf.sweep.run`` runs the trials as a Ray Tune experiment with Tune's ``ASHAScheduler``:
the scheduler reads the sweep's metric (``episode_reward_mean``, highest is best) at every rung
and stops the trials in the lower half. The summary says how far each trial got.

Run: python examples/asha_sweep.py [max_iterations]
"""

from __future__ import annotations

import os
import sys
import tempfile

from rlconf import PPOConfig, sweep
from rlconf.sweep import SweepSummary


def base_config() -> PPOConfig:
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .rollouts(num_workers=0, num_envs_per_worker=8, rollout_fragment_length=32)
        .training(train_batch_size=256, sgd_minibatch_size=64, num_sgd_iter=10)
        .training(model={"fcnet_hiddens": [64, 64]})
        # Half a CPU per trial: four trials at once on two cores.
        .resources(num_cpus_for_driver=0.5)
        .debugging(seed=0)
    )


def asha_sweep(
    max_iterations: int, num_samples: int, local_dir: str, progress: bool = True
) -> SweepSummary[PPOConfig]:
    from ray.tune.schedulers import ASHAScheduler

    scheduler = ASHAScheduler(
        time_attr="training_iteration",
        max_t=max_iterations,
        # Every trial gets an eighth of the budget before it can be stopped.
        grace_period=max(1, max_iterations // 8),
        reduction_factor=2,
    )
    config = base_config().training(lr=sweep.loguniform(1e-5, 1e-2))  # type: ignore[arg-type]
    return sweep.run(
        config,
        num_samples=num_samples,
        scheduler=scheduler,
        stop={"training_iteration": max_iterations},
        local_dir=local_dir,
        name="asha",
        progress=progress,
    )


def main() -> None:
    default = os.environ.get("RLCONF_EXAMPLE_ITERATIONS", "32")
    iterations = int(sys.argv[1] if len(sys.argv) > 1 else default)
    with tempfile.TemporaryDirectory() as local_dir:
        summary = asha_sweep(
            iterations, num_samples=8 if iterations >= 4 else 2, local_dir=local_dir
        )
    for trial in sorted(summary.trials, key=lambda t: -t.iterations):
        print(
            f"lr={trial.config.lr:<10.3g} iterations={trial.iterations:<3d} "
            f"return={trial.metrics.get('episode_reward_mean', float('nan')):6.1f}"
        )
    print(f"best: lr={summary.best_config.lr:.3g} return={summary.best_metric:.1f}")


if __name__ == "__main__":
    main()
