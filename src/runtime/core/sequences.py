"""Train batches of models with memory as sequences: pure functions that cut a batch's rows
into sequences of at most ``max_seq_len`` steps of one agent's episode, and gather a set of
those sequences into what a recurrent module trains on.

A sequence batch (what ``sequence_tensors`` returns) holds:

- the model inputs (``obs``, ``prev_actions``, ``prev_rewards``) zero-padded, ``(S, T, ...)``
  for ``S`` sequences of ``T`` steps (the longest of them);
- ``state_in_k``: the state each sequence starts from (that of its first row, as it acted);
- ``seq_lens``: each sequence's length;
- every other column as the sequences' valid rows, flat, sequence after sequence: the order in
  which the module returns its outputs (its padded steps dropped), so a loss reads both alike.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import numpy.typing as npt
import torch

from runtime.core.sample_batch import SampleBatch as SB

Array = npt.NDArray[Any]
#: The columns a recurrent model reads per step (padded in a sequence batch).
STEP_INPUTS = (SB.OBS, SB.PREV_ACTIONS, SB.PREV_REWARDS)
AGENT_INDEX = "agent_index"


def sequence_bounds(columns: Any, max_seq_len: int) -> tuple[Array, Array]:
    """``(starts, lens)``: the first row and the length of each sequence. A sequence is a run of
    rows of one episode (and one agent), cut every ``max_seq_len`` rows; the rows of an episode
    are consecutive steps wherever they are adjacent in a batch (a sampler's fragment, or
    consecutive fragments of the same sub-env). ``columns``: a ``SampleBatch`` or a dict of
    numpy columns with ``eps_id`` (and ``agent_index`` for a multi-agent batch)."""
    eps = np.asarray(columns[SB.EPS_ID])
    n = len(eps)
    if n == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    breaks = np.ones(n, dtype=bool)
    breaks[1:] = eps[1:] != eps[:-1]
    if AGENT_INDEX in columns:
        agents = np.asarray(columns[AGENT_INDEX])
        breaks[1:] |= agents[1:] != agents[:-1]
    run_starts = np.flatnonzero(breaks)
    run_of_row = np.cumsum(breaks) - 1
    position = np.arange(n) - run_starts[run_of_row]
    starts = np.flatnonzero(position % int(max_seq_len) == 0)
    lens = np.diff(np.append(starts, n))
    return starts.astype(np.int64), lens.astype(np.int64)


def state_keys(columns: Iterable[str]) -> list[str]:
    """The ``state_in_k`` columns of a batch, in order of ``k``."""
    keys = [name for name in columns if name.startswith("state_in_")]
    return sorted(keys, key=lambda name: int(name.rsplit("_", 1)[1]))


def sequence_tensors(
    tensors: Mapping[str, torch.Tensor], starts: Array, lens: Array, chosen: Array
) -> dict[str, torch.Tensor]:
    """The sequence batch of the sequences ``chosen`` (indices into ``starts``/``lens``) of a
    batch whose columns are ``tensors`` (all of the batch's rows)."""
    first = starts[chosen]
    length = lens[chosen]
    steps = int(length.max()) if len(length) else 0
    # Padded steps repeat the last valid row: a causal model's valid outputs never read them.
    offsets = np.minimum(np.arange(steps)[None, :], length[:, None] - 1)
    device = next(iter(tensors.values())).device
    padded_rows = torch.as_tensor(first[:, None] + offsets, device=device)
    ends = np.cumsum(length)
    flat = np.arange(int(ends[-1]) if len(ends) else 0) - np.repeat(ends - length - first, length)
    flat_rows = torch.as_tensor(flat, device=device)
    first_rows = torch.as_tensor(first, device=device)
    out: dict[str, torch.Tensor] = {SB.SEQ_LENS: torch.as_tensor(length, device=device)}
    for name, values in tensors.items():
        if name in STEP_INPUTS:
            out[name] = values[padded_rows]
        elif name.startswith("state_in_"):
            out[name] = values[first_rows]
        else:
            out[name] = values[flat_rows]
    return out


def minibatches_of_sequences(
    lens: Array, order: Array, rows: int, keep_rest: bool = False
) -> list[Array]:
    """Groups of whole sequences, taken in ``order``, each of at least ``rows`` valid rows (the
    reference counts minibatches of sequences by their valid rows the same way). The last group
    is what is left: kept when it reaches half of ``rows`` (or with ``keep_rest``: an A2C
    microbatch takes every row)."""
    groups: list[Array] = []
    cumulative = np.cumsum(lens[order])
    start = 0
    taken = 0
    while start < len(order):
        end = int(np.searchsorted(cumulative, taken + rows, side="left")) + 1
        end = min(end, len(order))
        group = order[start:end]
        size = int(lens[group].sum())
        if not keep_rest and groups and size < rows // 2:
            break
        groups.append(group)
        taken += size
        start = end
    return groups
