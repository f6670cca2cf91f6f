"""Callbacks and custom metrics: record something per episode and get its mean/min/max in
every result (and in TensorBoard, under custom_metrics/).

Run: python examples/custom_metrics.py
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from rlconf import PPOConfig
from runtime import DefaultCallbacks, Episode

ITERATIONS = int(os.environ.get("RLCONF_EXAMPLE_ITERATIONS", 5))


class PoleAngleCallbacks(DefaultCallbacks):
    def on_episode_start(self, *, episode: Episode, **kwargs: Any) -> None:
        episode.user_data["angles"] = []

    def on_episode_step(self, *, episode: Episode, **kwargs: Any) -> None:
        # CartPole's observation: cart position, cart velocity, pole angle, pole velocity.
        episode.user_data["angles"].append(abs(float(episode.last_observation_for()[2])))

    def on_episode_end(self, *, episode: Episode, **kwargs: Any) -> None:
        angles = episode.user_data["angles"]
        episode.custom_metrics["pole_angle"] = float(np.mean(angles))
        episode.hist_data["pole_angles"] = angles

    def on_train_result(self, *, algorithm: Any, result: dict[str, Any], **kwargs: Any) -> None:
        result["callback_ok"] = True


config = (
    PPOConfig()
    .environment("CartPole-v1")
    .rollouts(num_workers=0, num_envs_per_worker=4)
    .training(train_batch_size=1000, sgd_minibatch_size=250)
    .callbacks(PoleAngleCallbacks)
)
algo = config.build()
for _ in range(ITERATIONS):
    result = algo.train()
    custom = result["custom_metrics"]
    print(
        f"iter {result['training_iteration']}  pole angle mean {custom['pole_angle_mean']:.4f} "
        f"(min {custom['pole_angle_min']:.4f}, max {custom['pole_angle_max']:.4f})"
    )
assert result["callback_ok"]
algo.stop()
