"""Learner workers (``num_learner_workers``): Ray actors trained data-parallel with
torch.distributed (gloo); on the same batch they give the weights one local learner gives, they
checkpoint and restore, and a learner actor that dies is a clear error. One Ray session."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import ray

from rlconf import DQNConfig, PPOConfig
from rlconf.errors import ConfigError
from runtime import Algorithm
from runtime.core.learner_workers import LearnerWorkerFailure, RemoteLearnerGroup
from tests.ray_session import local_ray

#: The slow tier (`python -m pytest -m slow`): Ray sessions with remote actors, clusters and Tune.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module", autouse=True)
def ray_session() -> Iterator[None]:
    with local_ray():
        yield


def _ppo(learners: int = 0) -> PPOConfig:
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .rollouts(num_workers=0, num_envs_per_worker=4, rollout_fragment_length=50)
        .training(train_batch_size=200, sgd_minibatch_size=50, num_sgd_iter=3)
        .resources(
            num_learner_workers=learners, num_cpus_per_learner_worker=0.5 if learners else 1.0
        )
        .debugging(seed=5)
    )


def _same_weights(a: Algorithm, b: Algorithm, rtol: float = 1e-5) -> None:
    wa, wb = a.get_weights()["default_policy"], b.get_weights()["default_policy"]
    for key in wa:
        np.testing.assert_allclose(wa[key], wb[key], rtol=rtol, atol=1e-6, err_msg=key)


def test_two_learner_workers_give_the_weights_of_one_local_learner_for_ppo() -> None:
    local, remote = _ppo().build(), _ppo(learners=2).build()
    try:
        assert isinstance(remote.learner_group, RemoteLearnerGroup)
        assert remote.learner_group.devices == ["cpu", "cpu"]
        remote.set_weights(local.get_weights())
        for _ in range(2):
            batch = local.sample_train_batch()
            info_local = local.learn_on_batch(batch)["default_policy"]["learner_stats"]
            info_remote = remote.learn_on_batch(batch)["default_policy"]["learner_stats"]
            for key in ("total_loss", "kl", "entropy", "vf_explained_var"):
                assert info_remote[key] == pytest.approx(info_local[key], rel=1e-4, abs=1e-6)
        # The acting copy in the driver got the learners' weights.
        _same_weights(local, remote)
    finally:
        local.stop()
        remote.stop()


def test_learner_workers_train_checkpoint_and_restore(tmp_path: Path) -> None:
    algo = _ppo(learners=2).build()
    try:
        result = algo.train()
        assert result["info"]["learner"]["default_policy"]["num_grad_updates"] > 0
        path = algo.save(str(tmp_path))
        state = algo.learner_group.learner_state("default_policy")
        assert state is not None and state["num_grad_updates"] > 0
    finally:
        algo.stop()
    restored = PPOConfig.from_dict(_ppo().to_dict()).build()  # one local learner this time
    try:
        restored.restore(path)
        assert (
            restored.get_policy().learner.get_state()["num_grad_updates"]
            == (state["num_grad_updates"])
        )
        restored.train()
    finally:
        restored.stop()


def test_dqn_learns_with_learner_workers_and_updates_their_targets() -> None:
    config = (
        DQNConfig()
        .environment("CartPole-v1")
        .rollouts(num_workers=0, rollout_fragment_length=8)
        .training(
            train_batch_size=32,
            num_steps_sampled_before_learning_starts=0,
            target_network_update_freq=8,
        )
        .resources(num_learner_workers=2, num_cpus_per_learner_worker=0.5)
        .reporting(min_sample_timesteps_per_iteration=200)
        .debugging(seed=1)
    )
    algo = config.build()
    try:
        for _ in range(2):
            result = algo.train()
        assert result["info"]["learner"]["default_policy"]["num_grad_updates"] > 0
        assert algo._counters["num_target_updates"] > 0
    finally:
        algo.stop()


def test_a_learner_actor_that_dies_is_a_clear_error() -> None:
    algo = _ppo(learners=2).build()
    try:
        algo.train()
        group: Any = algo.learner_group
        ray.kill(group._actors[1], no_restart=True)
        with pytest.raises(LearnerWorkerFailure, match=r"learner worker 1 of 2 failed"):
            algo.train()
    finally:
        algo.stop()


def test_driver_gpus_with_learner_workers_are_refused() -> None:
    with pytest.raises(ConfigError, match=r"num_gpus_per_learner_worker"):
        _ppo(learners=2).resources(num_gpus=1).build()
