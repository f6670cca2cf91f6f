"""Build, validate, serialise and sweep an rlconf config (no training needed).

Run: python examples/config_basics.py
"""

from __future__ import annotations

from rlconf import ConfigError, PPOConfig, sweep

config = (
    PPOConfig()
    .environment("CartPole-v1")
    .rollouts(num_workers=2, num_envs_per_worker=8)
    .training(lr=3e-4, gamma=0.99, train_batch_size=4000, clip_param=0.2)
    .evaluation(
        evaluation_interval=1,
        evaluation_num_workers=2,
        evaluation_parallel_to_training=True,
        evaluation_duration="auto",
        evaluation_config=PPOConfig.overrides(explore=False),
    )
)
config.validate()

# A wrong value fails at the call that gives it, naming the method, field, value and rule.
try:
    config.training(lr="abc")  # type: ignore[arg-type]
except ConfigError as error:
    print(error)

# JSON round-trips losslessly, so a config can be stored next to its results.
assert PPOConfig.from_json(config.to_json()) == config

# A plain grid without Tune: every combination is a validated, independent config.
for candidate in sweep.grid(config, lr=[1e-3, 3e-4], num_sgd_iter=[10, 30]):
    print(f"lr={candidate.lr} num_sgd_iter={candidate.num_sgd_iter}")
