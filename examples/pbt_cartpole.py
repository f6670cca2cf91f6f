"""Population Based Training: four PPO trials train side by side; every few iterations the
worse half copies the weights of a better trial (Tune restores that trial's checkpoint into it)
and carries on with a perturbed learning rate.

``rlconf.sweep.run`` runs the population as a Ray Tune experiment with Tune's
``PopulationBasedTraining``. With ``reuse_actors=True`` an exploiting trial keeps its process:
the algorithm's ``reset_config`` rebuilds it in place for the new learning rate, then the
donor's checkpoint is loaded. Each trial's final learning rate shows where the population went.

Run: python examples/pbt_cartpole.py [iterations]
"""

from __future__ import annotations

import os
import sys
import tempfile

from rlconf import PPOConfig, sweep
from rlconf.sweep import SweepSummary

LEARNING_RATES = [1e-5, 1e-4, 1e-3, 3e-3]


def base_config() -> PPOConfig:
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .rollouts(num_workers=0, num_envs_per_worker=8, rollout_fragment_length=32)
        .training(train_batch_size=256, sgd_minibatch_size=64, num_sgd_iter=10)
        .training(model={"fcnet_hiddens": [64, 64]})
        # Half a CPU per trial: the whole population at once on two cores.
        .resources(num_cpus_for_driver=0.5)
        .debugging(seed=0)
    )


def pbt_sweep(
    iterations: int, local_dir: str, perturbation_interval: int = 4, progress: bool = True
) -> SweepSummary[PPOConfig]:
    from ray.tune.schedulers import PopulationBasedTraining

    scheduler = PopulationBasedTraining(
        time_attr="training_iteration",
        perturbation_interval=perturbation_interval,
        # The worst quarter clones the best quarter: one of four trials each time.
        quantile_fraction=0.25,
        # A clone's lr is the donor's times 0.8 or 1.2, or (one time in four) a fresh draw.
        hyperparam_mutations={"lr": sweep.loguniform(1e-5, 1e-2).to_tune()},
        resample_probability=0.25,
    )
    config = base_config().training(lr=sweep.grid_search(LEARNING_RATES))
    return sweep.run(
        config,
        scheduler=scheduler,
        reuse_actors=True,
        stop={"training_iteration": iterations},
        local_dir=local_dir,
        name="pbt",
        progress=progress,
    )


def main() -> None:
    default = os.environ.get("RLCONF_EXAMPLE_ITERATIONS", "40")
    iterations = int(sys.argv[1] if len(sys.argv) > 1 else default)
    with tempfile.TemporaryDirectory() as local_dir:
        summary = pbt_sweep(iterations, local_dir)
    for trial in summary.trials:
        print(
            f"{trial.name}: final lr={trial.config.lr:.3g} "
            f"return={trial.metrics.get('episode_reward_mean', float('nan')):6.1f}"
        )
    print(f"best: lr={summary.best_config.lr:.3g} return={summary.best_metric:.1f}")


if __name__ == "__main__":
    main()
