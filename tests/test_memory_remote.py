"""A model with memory on remote rollout workers (one Ray session for the module): the rows a
remote worker samples carry the inputs each step acted from, so the driver's learner trains on
sequences that reproduce the sampled action likelihoods."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
import ray
import torch

from rlconf import PPOConfig
from runtime.core.sample_batch import SampleBatch as SB
from runtime.core.sequences import sequence_tensors
from tests.ray_session import local_ray


@pytest.fixture(scope="module", autouse=True)
def ray_session() -> Iterator[None]:
    with local_ray():
        yield


def test_remote_workers_sample_what_the_learner_replays() -> None:
    algo = (
        PPOConfig()
        .environment("runtime.example_envs.RepeatAfterMeEnv", env_config={"repeat_delay": 1})
        .rollouts(num_workers=1, num_envs_per_worker=2, rollout_fragment_length=40)
        .resources(num_cpus_per_worker=0.5, num_cpus_for_driver=0)
        .training(
            train_batch_size=80,
            sgd_minibatch_size=40,
            num_sgd_iter=2,
            model={"use_lstm": True, "lstm_cell_size": 8, "max_seq_len": 5, "fcnet_hiddens": [8]},
        )
        .debugging(seed=0)
        .build()
    )
    try:
        algo.train()
        (remote,) = algo.workers.remote_workers()
        batch = ray.get(remote.sample.remote())
        rows = batch.policy_batches["default_policy"] if hasattr(batch, "policy_batches") else batch
        assert {SB.state_in(0), SB.state_in(1)} <= set(rows.columns)
        learner = algo.get_policy().learner
        starts, lens = learner.sequences_of(rows)
        tensors = sequence_tensors(
            learner.batch_tensors(rows), starts, lens, np.arange(len(starts))
        )
        with torch.no_grad():
            out = learner.module.forward_train(tensors)
            logp = learner.module.dist_class(out[SB.ACTION_DIST_INPUTS]).logp(tensors[SB.ACTIONS])
        assert float((logp - tensors[SB.ACTION_LOGP]).abs().max()) < 1e-5
    finally:
        algo.stop()
