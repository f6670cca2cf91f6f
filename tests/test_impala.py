"""IMPALA and APPO in one process: the learner thread (its queue, its minibatch buffer, its
lock), replay mixed in, the optimizers, results (policy lag, queue stats), checkpoints, and
the settings refused."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from rlconf import APPOConfig, ConfigError, IMPALAConfig
from runtime import Algorithm
from runtime.core.multi_agent_batch import MultiAgentBatch
from runtime.core.sample_batch import SampleBatch
from runtime.training.learner_thread import LearnerThread


def _impala(**training: Any) -> IMPALAConfig:
    return (
        IMPALAConfig()
        .environment("CartPole-v1")
        .rollouts(num_workers=0, num_envs_per_worker=2, rollout_fragment_length=10)
        .training(train_batch_size=40, model={"fcnet_hiddens": [16]}, **training)
        .reporting(min_time_s_per_reporting=0, min_sample_timesteps_per_reporting=200)
        .debugging(seed=0)
    )


class _Recorder:
    """A worker whose ``learn_on_batch`` records what it was given."""

    def __init__(self) -> None:
        self.seen: list[int] = []

    def learn_on_batch(self, batch: MultiAgentBatch) -> dict[str, Any]:
        self.seen.append(int(batch["default_policy"]["id"][0]))
        return {}


def _batch(index: int) -> MultiAgentBatch:
    return MultiAgentBatch.wrap(SampleBatch({"id": np.full(3, index)}))


def _drain(thread: LearnerThread, count: int) -> list[Any]:
    updates = [thread.results.get(timeout=10) for _ in range(count)]
    return updates


def test_the_learner_thread_uses_each_batch_num_sgd_iter_times_interleaved() -> None:
    worker = _Recorder()
    thread = LearnerThread(
        worker, queue_size=4, queue_timeout=5, num_sgd_iter=2, minibatch_buffer_size=2
    )
    for index in range(4):
        thread.put(_batch(index))
    thread.start()
    try:
        updates = _drain(thread, 8)
    finally:
        thread.stop()
    # two slots, each batch used twice, the slots taken in turn
    assert worker.seen == [0, 1, 0, 1, 2, 3, 2, 3]
    assert [u.released for u in updates] == [False, False, True, True] * 2
    assert [u.version for u in updates] == list(range(1, 9))


def test_a_learner_that_fails_stops_the_driver_with_its_error() -> None:
    class Failing:
        def learn_on_batch(self, batch: Any) -> dict[str, Any]:
            raise FloatingPointError("nan in the loss")

    thread = LearnerThread(
        Failing(), queue_size=2, queue_timeout=1, num_sgd_iter=1, minibatch_buffer_size=1
    )
    thread.start()
    thread.put(_batch(0))
    deadline = time.monotonic() + 10
    while thread.error is None and time.monotonic() < deadline:
        time.sleep(0.01)
    with pytest.raises(RuntimeError, match=r"learner thread failed.*nan in the loss"):
        thread.check()
    thread.stop()


def test_a_full_queue_times_out_with_the_reason() -> None:
    thread = LearnerThread(
        _Recorder(), queue_size=1, queue_timeout=0.05, num_sgd_iter=1, minibatch_buffer_size=1
    )  # never started: nothing takes from the queue
    thread.put(_batch(0))
    with pytest.raises(TimeoutError, match=r"learner_queue_timeout=0\.05"):
        thread.put(_batch(1))


def test_impala_trains_and_reports_its_queue_and_policy_lag() -> None:
    algo = _impala().build()
    try:
        results = [algo.train() for _ in range(3)]
        weights = algo.get_policy().get_weights()
        learner_weights = algo.learner_group.get_weights(["default_policy"])["default_policy"]
    finally:
        algo.stop()
    info = results[-1]["info"]
    assert results[-1]["timesteps_total"] >= 600
    assert info["num_env_steps_trained"] > 0
    assert info["learner_weights_version"] > 0 and info["num_weight_broadcasts"] > 0
    assert info["policy_lag_mean"] >= 0 and "get_wait_s_mean" in info["learner_queue"]
    stats = info["learner"]["default_policy"]["learner_stats"]
    assert {"policy_loss", "vf_loss", "entropy", "vf_explained_var"} <= set(stats)
    assert set(weights) == set(learner_weights)


def test_rmsprop_takes_decay_momentum_and_epsilon() -> None:
    algo = _impala(opt_type="rmsprop", decay=0.9, momentum=0.5, epsilon=0.01).build()
    try:
        optimizer = algo.get_policy().learner.optimizers["default"]
    finally:
        algo.stop()
    assert isinstance(optimizer, torch.optim.RMSprop)
    group = optimizer.param_groups[0]
    assert (group["alpha"], group["momentum"], group["eps"]) == (0.9, 0.5, 0.01)


def test_replay_proportion_mixes_earlier_batches_in() -> None:
    algo = _impala(replay_proportion=1.0, replay_buffer_num_slots=4).build()
    try:
        queued: list[MultiAgentBatch] = []
        put = algo._learner_thread.put

        def recording_put(batch: MultiAgentBatch) -> None:
            queued.append(batch)
            put(batch)

        algo._learner_thread.put = recording_put
        for _ in range(2):
            algo.train()
    finally:
        algo.stop()
    new = {id(b) for b in queued}
    assert len(queued) > len(new)  # every batch after the first goes in with one replayed


def test_appo_moves_its_target_network_after_each_round_of_passes() -> None:
    config = (
        APPOConfig()
        .environment("CartPole-v1")
        .rollouts(num_workers=0, num_envs_per_worker=2, rollout_fragment_length=10)
        .training(
            train_batch_size=20,
            num_sgd_iter=3,
            use_kl_loss=True,
            model={"fcnet_hiddens": [16]},
        )
        .reporting(min_time_s_per_reporting=0, min_sample_timesteps_per_reporting=100)
        .debugging(seed=0)
    )
    algo = config.build()
    try:
        learner = algo.get_policy().learner
        assert learner.target_period == 3
        # The learner thread runs beside train(): on a loaded machine the first iteration can
        # end before its first update, so train until the learner has reported and moved once.
        for _ in range(50):
            result = algo.train()
            if result["info"]["learner"] and learner._updates >= 3:
                break
        with algo._learner_thread.lock:
            updates = learner._updates
            moved = updates - updates % 3
            same = all(
                torch.equal(a, b)
                for a, b in zip(
                    learner.module.parameters(), learner.target_module.parameters(), strict=True
                )
            )
    finally:
        algo.stop()
    stats = result["info"]["learner"]["default_policy"]["learner_stats"]
    assert {"kl", "kl_coeff", "mean_IS"} <= set(stats)
    assert moved > 0
    assert same == (updates == moved)  # equal right after a move, apart after more updates


def test_a_checkpoint_keeps_the_learner_and_its_state(tmp_path: Path) -> None:
    algo = _impala().build()
    try:
        algo.train()
        with algo._learner_thread.lock:  # no update between the checkpoint and the copy
            path = algo.save(str(tmp_path / "ckpt"))
            weights = algo.learner_group.get_weights(["default_policy"])["default_policy"]
    finally:
        algo.stop()
    restored = Algorithm.from_checkpoint(path)
    try:
        again = restored.learner_group.get_weights(["default_policy"])["default_policy"]
        restored.train()
    finally:
        restored.stop()
    assert all(np.array_equal(weights[k], again[k]) for k in weights)


def test_settings_that_would_split_a_batch_are_refused() -> None:
    with pytest.raises(ConfigError, match=r"num_learner_workers=2.*cut its fragments apart"):
        _impala().resources(num_learner_workers=2).build()
    with pytest.raises(ConfigError, match="_separate_vf_optimizer"):
        _impala(_separate_vf_optimizer=True).build()
    with pytest.raises(ConfigError, match="use_lstm"):
        _impala().training(model={"use_lstm": True}).build()


def test_after_train_step_is_called_with_each_steps_results() -> None:
    seen: list[dict[str, Any]] = []
    algo = _impala(after_train_step=seen.append).build()
    try:
        algo.train()
    finally:
        algo.stop()
    assert seen and all("learner_queue" in results["info"] for results in seen)
