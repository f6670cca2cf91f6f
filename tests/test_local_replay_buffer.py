"""``algo.local_replay_buffer``: RLlib's one object over an off-policy algorithm's replay
buffers (``add``, ``sample``, ``replay_buffers[pid]``, ``_storage``), a view of the buffers the
training loop fills and replays from; None for an algorithm that replays nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rlconf import PPOConfig
from rlconf.algorithms.dqn import DQNConfig
from runtime.buffers.multi_agent_replay_buffer import MultiAgentReplayBuffer
from runtime.core.multi_agent_batch import MultiAgentBatch
from runtime.core.sample_batch import SampleBatch


def _dqn(**training: Any) -> Any:
    config = (
        DQNConfig()
        .environment("CartPole-v1")
        .rollouts(num_workers=0, rollout_fragment_length=50)
        .training(
            num_steps_sampled_before_learning_starts=0,
            train_batch_size=16,
            model={"fcnet_hiddens": [8]},
            **training,
        )
        .reporting(min_sample_timesteps_per_reporting=100)
        .debugging(seed=3)
    )
    return config.build()


def test_it_is_the_buffers_the_training_loop_fills_and_replays() -> None:
    algo = _dqn()
    try:
        algo.train()
        view = algo.local_replay_buffer
        assert isinstance(view, MultiAgentReplayBuffer)
        assert view.replay_buffers is algo.replay_buffers
        buffer = view.replay_buffers["default_policy"]
        assert len(view) == len(buffer) == 100
        assert view.stats()["default_policy"]["num_entries"] == 100

        replayed = view.sample(8)
        assert isinstance(replayed, MultiAgentBatch) and len(replayed["default_policy"]) == 8
        assert len(view.sample(5, policy_id="default_policy")["default_policy"]) == 5
        with pytest.raises(KeyError, match=r"no buffer for policy 'other'.*'default_policy'"):
            view.sample(8, policy_id="other")

        # Rows added through it are the loop's: they are in the buffer it replays from.
        rows = buffer._storage[:10]
        view.add(SampleBatch.concat_samples(rows))
        assert len(buffer) == 110
        added = buffer._storage[100]
        np.testing.assert_array_equal(added[SampleBatch.OBS], rows[0][SampleBatch.OBS])
    finally:
        algo.stop()


def test_the_stored_rows_survive_a_checkpoint(tmp_path: Path) -> None:
    algo = _dqn(store_buffer_in_checkpoints=True)
    restored = _dqn(store_buffer_in_checkpoints=True)
    try:
        algo.train()
        restored.restore(algo.save(str(tmp_path)))
        old = algo.local_replay_buffer.replay_buffers["default_policy"]._storage[:42]
        new = restored.local_replay_buffer.replay_buffers["default_policy"]._storage[:42]
        assert len(old) == len(new) == 42
        for before, after in zip(old, new, strict=True):
            assert set(before.keys()) == set(after.keys())
            for key in before:
                np.testing.assert_array_equal(before[key], after[key])
    finally:
        algo.stop()
        restored.stop()


def test_stored_rows_by_slot() -> None:
    from runtime.buffers.replay_buffer import ReplayBuffer

    buffer = ReplayBuffer(capacity=4)
    assert len(buffer._storage) == 0 and buffer._storage[:3] == []
    buffer.add(SampleBatch({"obs": np.arange(3, dtype=np.float32).reshape(3, 1)}))
    buffer.add(SampleBatch({"obs": np.arange(3, 6, dtype=np.float32).reshape(3, 1)}))
    # A ring of 4 slots after 6 rows: slots 0, 1 hold rows 4, 5.
    assert [float(r["obs"][0, 0]) for r in buffer._storage[:]] == [4.0, 5.0, 2.0, 3.0]
    assert float(buffer._storage[-1]["obs"][0, 0]) == 3.0
    with pytest.raises(IndexError, match="row 4 of a buffer holding 4"):
        buffer._storage[4]


def test_an_algorithm_that_replays_nothing_has_none() -> None:
    algo = (
        PPOConfig()
        .environment("CartPole-v1")
        .rollouts(num_workers=0, rollout_fragment_length=64)
        .training(train_batch_size=64, sgd_minibatch_size=32, num_sgd_iter=1)
        .build()
    )
    try:
        assert algo.local_replay_buffer is None
    finally:
        algo.stop()


def test_a_sample_batch_reads_as_the_dict_rllibs_is() -> None:
    batch = SampleBatch({"obs": np.zeros((2, 1)), "rewards": np.ones(2)})
    assert list(batch.keys()) == ["obs", "rewards"] == list(batch)
    assert [v.tolist() for v in batch.values()] == [[[0.0], [0.0]], [1.0, 1.0]]
