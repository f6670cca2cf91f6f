"""Train, save a checkpoint, restore it in a new algorithm, and compute actions with it.

Checkpoints hold weights as torch tensors (loaded with ``weights_only=True``) and everything
else as JSON, config included, so ``Algorithm.from_checkpoint`` needs nothing else.

Run: python examples/restore_and_act.py
"""

from __future__ import annotations

import os
import tempfile

import gymnasium as gym

from rlconf import PPOConfig
from runtime import Algorithm

ITERATIONS = int(os.environ.get("RLCONF_EXAMPLE_ITERATIONS", 10))

config = (
    PPOConfig()
    .environment("CartPole-v1")
    .rollouts(num_workers=0, num_envs_per_worker=8)
    .training(lr=1e-3, train_batch_size=2000, sgd_minibatch_size=250, num_sgd_iter=10)
    .debugging(seed=0)
)
algo = config.build()
for _ in range(ITERATIONS):
    algo.train()
with tempfile.TemporaryDirectory() as folder:
    path = algo.save(folder)
    algo.stop()
    restored = Algorithm.from_checkpoint(path)  # a PPO, with the saved config

env = gym.make("CartPole-v1")
obs, _info = env.reset(seed=0)
total, done = 0.0, False
while not done:
    action = restored.compute_single_action(obs, explore=False)
    obs, reward, terminated, truncated, _info = env.step(action)
    total += float(reward)
    done = terminated or truncated
print(f"restored at iteration {restored.iteration}: one greedy episode returns {total:.0f}")
restored.stop()
