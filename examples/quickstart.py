"""The config of the manual's "Quick tour" (docs/getting-started.md), built and trained:
configure PPO fluently, build it, train, evaluate in parallel, save. (It asks for no GPU, so it
runs anywhere; see fractional_gpus.py for GPU shares.)

Run: python examples/quickstart.py
"""

from __future__ import annotations

import os

from rlconf import PPOConfig

ITERATIONS = int(os.environ.get("RLCONF_EXAMPLE_ITERATIONS", 10))
#: Env steps per training iteration (the test suite runs the examples on fewer).
STEPS = int(os.environ.get("RLCONF_EXAMPLE_STEPS", 4000))

config = (
    PPOConfig()
    .environment("CartPole-v1")
    .rollouts(num_workers=2, num_envs_per_worker=8)
    .training(lr=3e-4, gamma=0.99, train_batch_size=STEPS, clip_param=0.2)
    .resources(num_cpus_for_driver=0)  # the driver is this process; its CPU is already here
    .evaluation(
        evaluation_interval=1,
        evaluation_num_workers=2,
        evaluation_parallel_to_training=True,
        evaluation_duration="auto",
        evaluation_config=PPOConfig.overrides(explore=False),
    )
    .exploration(explore=True)
)
algo = config.build()  # a runtime PPO; Ray starts because there are remote workers
for _ in range(ITERATIONS):
    result = algo.train()  # evaluation runs beside the training step
    print(
        f"iter {result['training_iteration']:3d}  "
        f"train return {result['episode_reward_mean']:6.1f}  "
        f"eval return {result['evaluation']['episode_reward_mean']:6.1f} "
        f"(weights of iteration {result['evaluation']['weights_version']})"
    )
path = algo.save()
print(f"checkpoint: {path}")
algo.stop()
