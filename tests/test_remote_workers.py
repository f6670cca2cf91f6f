"""WorkerSets with remote Ray workers: syncing, EnvContexts, filters, fault tolerance, and
PPO learning with 2 remote workers. One Ray session for the module."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import ray
import torch

from rlconf import IMPALAConfig, PGConfig, PPOConfig
from runtime import PPO
from runtime.core.sample_batch import SampleBatch as SB
from runtime.core.sequences import sequence_tensors
from runtime.env.worker_set import WorkerFailure
from tests.envs import RecreationCallbacks
from tests.ray_session import ROOT, local_ray

sys.path.insert(0, str(Path(ROOT) / "examples"))

from tuned_ppo_cartpole import tuned_config

#: The slow tier (`python -m pytest -m slow`): Ray sessions with remote actors, clusters and Tune.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module", autouse=True)
def ray_session() -> Iterator[None]:
    with local_ray():
        yield


def _config(**fault_tolerance: Any) -> PPOConfig:
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .rollouts(num_workers=2, rollout_fragment_length=50, observation_filter="MeanStdFilter")
        .resources(num_cpus_per_worker=0.5, num_cpus_for_driver=0)
        .training(
            train_batch_size=200,
            sgd_minibatch_size=100,
            num_sgd_iter=1,
            model={"fcnet_hiddens": [16]},
        )
        .fault_tolerance(**fault_tolerance)
        .debugging(seed=0)
    )


@pytest.fixture(scope="module")
def algo() -> Iterator[PPO]:
    algorithm = _config().build()
    algorithm.train()
    yield algorithm
    algorithm.stop()


def test_remote_workers_are_ray_actors_with_their_env_context(algo: PPO) -> None:
    workers = algo.workers
    assert len(workers.remote_workers()) == 2
    assert workers.local_worker().envs == []  # the driver does not sample
    contexts = workers.foreach_worker(
        lambda w: (w.env_context.worker_index, w.env_context.remote, w.env_context.num_workers),
        local=False,
    )
    assert sorted(contexts) == [(1, True, 2), (2, True, 2)]
    assert workers.foreach_worker_with_index(lambda w, i: i) == [0, 1, 2]
    assert algo.train()["num_healthy_workers"] == 2


def test_weights_and_filters_are_synced_to_remote_workers(algo: PPO) -> None:
    algo.train()
    local = algo.get_weights()["default_policy"]
    for weights in algo.workers.foreach_worker(lambda w: w.get_weights(), local=False):
        for name, value in weights["default_policy"].items():
            np.testing.assert_array_equal(value, local[name])
    local_filter = algo.workers.local_worker().get_filter_states()["default_policy"]
    assert local_filter["stats"]["n"] >= 400  # merged from both workers
    remote = algo.workers.foreach_worker(lambda w: w.get_filter_states(), local=False)
    for state in remote:
        assert state["default_policy"]["stats"]["n"] >= local_filter["stats"]["n"]


def test_a_dead_worker_fails_training_unless_tolerated() -> None:
    algorithm = _config().build()
    try:
        ray.kill(algorithm.workers.remote_workers()[0], no_restart=True)
        with pytest.raises(WorkerFailure, match="ignore_worker_failures"):
            algorithm.train()
    finally:
        algorithm.stop()


def test_ignore_worker_failures_continues_on_the_healthy_workers() -> None:
    algorithm = _config(ignore_worker_failures=True).build()
    try:
        ray.kill(algorithm.workers.remote_workers()[0], no_restart=True)
        result = algorithm.train()
        assert result["num_healthy_workers"] == 1
        assert result["timesteps_total"] >= 200
    finally:
        algorithm.stop()


def test_recreate_failed_workers_replaces_and_syncs_them(
    caplog: pytest.LogCaptureFixture,
) -> None:
    RecreationCallbacks.recreated = []
    config = _config(recreate_failed_workers=True).callbacks(RecreationCallbacks)
    caplog.set_level(logging.NOTSET)  # log_level INFO decides
    algorithm = config.debugging(log_level="INFO").build()
    try:
        algorithm.train()
        ray.kill(algorithm.workers.remote_workers()[0], no_restart=True)
        result = algorithm.train()
        assert RecreationCallbacks.recreated == [1]
        # log_level INFO: where the workers went, that they started and were recreated.
        info = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
        placement = "PPO: reserved a placement group of 2 rollout worker(s) x {CPU: 0.5}"
        assert any(message.startswith(placement) for message in info)
        assert "workers: started 2 remote rollout worker(s) (0.5 CPU, 0 GPU each)" in info
        assert "workers: recreating remote worker(s) [1]" in info
        assert "workers: remote worker(s) [1] recreated and synced (1 recreated so far)" in info
        assert result["num_recreated_workers"] == 1
        assert algorithm.train()["num_healthy_workers"] == 2
        local = algorithm.get_weights()["default_policy"]
        for weights in algorithm.workers.foreach_worker(lambda w: w.get_weights(), local=False):
            for name, value in weights["default_policy"].items():
                np.testing.assert_array_equal(value, local[name])
    finally:
        algorithm.stop()


def test_ppo_with_two_remote_workers_learns_cartpole() -> None:
    # The tuned settings, with the 8 sub-envs spread over two remote workers; 150 takes about
    # 17k steps there, under a third of the budget.
    algorithm = (
        tuned_config(seed=0)
        .rollouts(num_workers=2, num_envs_per_worker=4)
        .resources(num_cpus_per_worker=0.5, num_cpus_for_driver=0)
        .build()
    )
    try:
        result = algorithm.train()
        best = result["episode_reward_mean"]
        while best < 150 and result["timesteps_total"] < 60_000:
            result = algorithm.train()
            best = max(best, result["episode_reward_mean"])
        assert best >= 150
    finally:
        algorithm.stop()


def test_a_memory_model_on_remote_workers_samples_what_the_learner_replays() -> None:
    """The rows a remote worker samples carry the inputs each step acted from (state, previous
    action): the driver's learner reproduces their action likelihoods on sequences."""
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


def test_remote_workers_read_their_share_of_the_input_files(tmp_path: Path) -> None:
    from runtime.offline import JsonWriter
    from runtime.offline.json_reader import JsonReader

    writer = (
        PGConfig()
        .environment("CartPole-v1")
        .rollouts(num_workers=0, rollout_fragment_length=50)
        .training(train_batch_size=50)
        .debugging(seed=0)
        .build()
    )
    try:
        batches = [writer.workers.local_worker().sample() for _ in range(4)]
    finally:
        writer.stop()
    for index, batch in enumerate(batches):  # one file each
        JsonWriter(tmp_path / f"part{index}").write(batch)
    algo = (
        PGConfig()
        .environment("CartPole-v1")
        .rollouts(num_workers=2, rollout_fragment_length=50)
        .resources(num_cpus_per_worker=0.5, num_cpus_for_driver=0)
        .training(train_batch_size=100)
        .offline_data(input_=str(tmp_path / "part*" / "*.json"))
        .build()
    )
    try:
        shares = algo.workers.foreach_worker_with_index(
            lambda worker, index: (
                index,
                [f.parent.name for f in _json_reader(worker.input_reader, JsonReader).files],
            )
        )
        result = algo.train()
    finally:
        algo.stop()
    by_index = dict(shares)
    assert by_index[1] == ["part0", "part2"] and by_index[2] == ["part1", "part3"]
    assert result["timesteps_total"] == 100  # one 50-row batch from each worker


def _json_reader(reader: Any, kind: type) -> Any:
    while not isinstance(reader, kind):
        reader = reader.child
    return reader


def _impala_config(**fault_tolerance: Any) -> IMPALAConfig:
    return (
        IMPALAConfig()
        .environment("CartPole-v1")
        .rollouts(num_workers=2, num_envs_per_worker=2, rollout_fragment_length=25)
        .resources(num_cpus_per_worker=0.5, num_cpus_for_driver=0)
        .training(train_batch_size=100, model={"fcnet_hiddens": [16]})
        .reporting(min_time_s_per_reporting=0, min_sample_timesteps_per_reporting=500)
        .fault_tolerance(**fault_tolerance)
        .debugging(seed=0)
    )


def test_impala_samples_asynchronously_and_broadcasts_to_the_workers_it_used() -> None:
    algorithm = _impala_config().build()
    try:
        results = [algorithm.train() for _ in range(2)]
        # Requests stay in flight between steps: max_sample_requests_in_flight_per_worker each.
        in_flight = sorted(algorithm._requests.values())
        versions = algorithm.workers.foreach_worker(lambda w: w.weights_version, local=False)
    finally:
        algorithm.stop()
    info = results[-1]["info"]
    assert in_flight == [1, 1, 2, 2]
    assert results[-1]["timesteps_total"] >= 1000 and info["num_env_steps_trained"] > 0
    assert info["num_weight_broadcasts"] > 0 and max(versions) > 0
    # Fragments sampled with older weights than the learner's when they were queued.
    assert info["policy_lag_max"] >= info["policy_lag_mean"] >= 0
    assert results[-1]["episodes_this_iter"] > 0


def test_impala_recreates_a_killed_worker_and_drops_its_requests() -> None:
    algorithm = _impala_config(recreate_failed_workers=True).build()
    try:
        algorithm.train()
        ray.kill(algorithm.workers.remote_workers()[0], no_restart=True)
        results = [algorithm.train() for _ in range(2)]
        in_flight = sorted(algorithm._requests.values())
    finally:
        algorithm.stop()
    assert results[-1]["num_recreated_workers"] == 1
    assert results[-1]["num_healthy_workers"] == 2
    assert in_flight == [1, 1, 2, 2]
