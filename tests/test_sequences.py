"""The pure functions that cut train batches into sequences for models with memory."""

from __future__ import annotations

import numpy as np
import torch

from runtime.core.sample_batch import SampleBatch as SB
from runtime.core.sequences import (
    minibatches_of_sequences,
    sequence_bounds,
    sequence_tensors,
    state_keys,
)


def test_sequences_break_at_episodes_agents_and_max_seq_len() -> None:
    columns = {
        SB.EPS_ID: np.array([1, 1, 1, 1, 1, 2, 2, 3, 3, 3]),
        "agent_index": np.array([0, 0, 0, 0, 0, 0, 0, 0, 1, 1]),
    }
    starts, lens = sequence_bounds(columns, 3)
    assert starts.tolist() == [0, 3, 5, 7, 8]
    assert lens.tolist() == [3, 2, 2, 1, 2]
    # without agents: episodes alone
    starts, lens = sequence_bounds({SB.EPS_ID: columns[SB.EPS_ID]}, 2)
    assert starts.tolist() == [0, 2, 4, 5, 7, 9]
    assert lens.tolist() == [2, 2, 1, 2, 2, 1]
    empty = sequence_bounds({SB.EPS_ID: np.zeros(0, np.int64)}, 4)
    assert [len(a) for a in empty] == [0, 0]


def test_sequence_tensors_pad_inputs_take_start_states_and_keep_valid_rows_flat() -> None:
    rows = 7
    tensors = {
        SB.OBS: torch.arange(rows, dtype=torch.float32)[:, None].repeat(1, 2),
        SB.ACTIONS: torch.arange(rows) * 10,
        SB.PREV_REWARDS: torch.arange(rows, dtype=torch.float32) / 10,
        SB.state_in(0): torch.arange(rows, dtype=torch.float32)[:, None] + 100,
    }
    starts = np.array([0, 3, 5])
    lens = np.array([3, 2, 2])
    out = sequence_tensors(tensors, starts, lens, np.array([2, 0]))
    assert out[SB.SEQ_LENS].tolist() == [2, 3]
    assert out[SB.OBS].shape == (2, 3, 2)
    # padded steps repeat the last valid row; valid rows are those of the sequences, in order
    assert out[SB.OBS][:, :, 0].tolist() == [[5, 6, 6], [0, 1, 2]]
    assert out[SB.PREV_REWARDS].shape == (2, 3)
    assert out[SB.ACTIONS].tolist() == [50, 60, 0, 10, 20]
    assert out[SB.state_in(0)][:, 0].tolist() == [105, 100]


def test_minibatches_hold_whole_sequences_of_at_least_the_rows_asked_for() -> None:
    lens = np.array([5, 5, 3, 2, 5, 1])
    groups = minibatches_of_sequences(lens, np.arange(6), 8)
    assert [g.tolist() for g in groups] == [[0, 1], [2, 3, 4]]  # the last single row: dropped
    kept = minibatches_of_sequences(lens, np.arange(6), 8, keep_rest=True)
    assert [g.tolist() for g in kept] == [[0, 1], [2, 3, 4], [5]]
    shuffled = minibatches_of_sequences(lens, np.array([5, 4, 3, 2, 1, 0]), 6)
    assert [g.tolist() for g in shuffled] == [[5, 4], [3, 2, 1], [0]]


def test_state_keys_are_ordered_by_index() -> None:
    names = ["obs", "state_in_10", "state_in_2", "state_in_0", "actions"]
    assert state_keys(names) == ["state_in_0", "state_in_2", "state_in_10"]
