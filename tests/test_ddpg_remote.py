"""TD3 with remote rollout workers: each keeps its per-worker noise scale
(``PerWorkerGaussianNoise`` / ``PerWorkerOrnsteinUhlenbeckNoise``: worker i of n explores at
``0.4 ** (1 + 7 (i-1)/(n-1))``, the learning driver at 0), learns from their samples, and gets
the learned weights back."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from rlconf import TD3Config
from runtime.core.exploration.per_worker_epsilon_greedy import worker_epsilon
from tests.ray_session import local_ray

#: The slow tier (`python -m pytest -m slow`): Ray sessions with remote actors, clusters and Tune.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module", autouse=True)
def ray_session() -> Iterator[None]:
    with local_ray():
        yield


def test_remote_workers_keep_their_noise_scales_and_take_the_learned_weights() -> None:
    # (PerWorkerGaussianNoise keeps its scales the same way: tests/test_noise_exploration.py.)
    kind = "PerWorkerOrnsteinUhlenbeckNoise"
    config = (
        TD3Config()
        .environment("Pendulum-v1")
        .rollouts(num_workers=2, rollout_fragment_length=50)
        .resources(num_cpus_per_worker=0.5, num_cpus_for_driver=0)
        .training(
            actor_hiddens=[16],
            critic_hiddens=[16],
            train_batch_size=32,
            num_steps_sampled_before_learning_starts=100,
        )
        .exploration(exploration_config={"type": kind, "random_timesteps": 100})
        .reporting(min_sample_timesteps_per_reporting=200, min_time_s_per_reporting=0)
        .debugging(seed=0)
    )
    algo = config.build()
    try:
        result = algo.train()
        assert result["timesteps_total"] == 200
        assert "critic_loss" in result["info"]["learner"]["default_policy"]["learner_stats"]
        states = algo.workers.foreach_worker_with_index(
            lambda w, i: (i, w.get_policy().get_exploration_state())
        )
        scales = {i: state["cur_scale"] for i, state in states}
        assert scales == {i: pytest.approx(worker_epsilon(i, 2)) for i in (0, 1, 2)}
        assert scales[1] == pytest.approx(0.4) and scales[2] == pytest.approx(0.4**8)
        local = algo.get_weights()["default_policy"]
        for weights in algo.workers.foreach_worker(lambda w: w.get_weights(), local=False):
            for name, value in local.items():
                np.testing.assert_array_equal(weights["default_policy"][name], value)
    finally:
        algo.stop()
