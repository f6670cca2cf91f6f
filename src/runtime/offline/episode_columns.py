"""The columns an algorithm trains on, computed for rows that did not come from its own
sampling (files, a policy server, an external env): the same postprocessing steps as live
sampling (``add_advantages``, ``add_n_step_returns``, a user's), run by the reading policy.

Rows of one agent's episode are contiguous and in time order, as every writer here writes
them. Each run of rows (one ``eps_id`` and ``agent_index``, consecutive ``t``) is one episode
segment: it ends in a termination (nothing to bootstrap) or is cut (truncated, or the batch
ends first: it bootstraps from V(``new_obs``) of its last row under the current policy). The
runs are laid end to end as one ``(R, 1)`` fragment, so a step sees exactly what a sampled
fragment shows it: ``segment_ends`` and ``bootstrap_values``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from runtime.core.postprocessing import PRODUCES
from runtime.core.sample_batch import SampleBatch as SB
from runtime.core.sequences import AGENT_INDEX

Array = npt.NDArray[Any]
#: The reference's older columns: ``dones`` (terminated or truncated, one flag) and
#: ``action_prob`` (the behaviour policy's probability of the action).
DONES = "dones"
ACTION_PROB = "action_prob"
_PRIVATE = (SB.SEGMENT_ENDS, SB.BOOTSTRAP_VALUES)


def standard_columns(batch: SB) -> SB:
    """``batch`` with the reference's older columns under their current names: ``dones`` as
    ``terminateds`` (those files could not tell a truncation apart) and ``action_logp`` from
    ``action_prob``; anything else as it is (rows that hold every column an algorithm trains
    on are trained on as they are)."""
    columns = dict(batch.items())
    if SB.TERMINATEDS not in columns and DONES in columns:
        columns[SB.TERMINATEDS] = np.asarray(columns.pop(DONES), dtype=bool)
    if SB.ACTION_LOGP not in columns and ACTION_PROB in columns:
        prob = np.asarray(columns[ACTION_PROB], dtype=np.float64)
        with np.errstate(divide="ignore"):
            columns[SB.ACTION_LOGP] = np.log(prob).astype(np.float32)
    return SB(columns)


def episode_columns(batch: SB) -> SB:
    """``batch`` with what cutting it into episodes reads: ``terminateds`` (required),
    ``truncateds`` (False where absent) and ``eps_id`` (0 where a writer left it out: the
    rows are then one episode)."""
    batch = standard_columns(batch)
    columns = dict(batch.items())
    rows = len(batch)
    if SB.TERMINATEDS not in columns:
        raise ValueError(
            "input rows have neither 'terminateds' nor 'dones': an episode's end can't be "
            f"told (columns: {sorted(columns)})"
        )
    if SB.TRUNCATEDS not in columns:
        columns[SB.TRUNCATEDS] = np.zeros(rows, dtype=bool)
    if SB.EPS_ID not in columns:
        columns[SB.EPS_ID] = np.zeros(rows, dtype=np.int64)
    return SB(columns)


def segment_ends(batch: SB) -> Array:
    """True on the last row of each run of one agent's episode in ``batch``."""
    rows = len(batch)
    ends = np.zeros(rows, dtype=bool)
    if rows == 0:
        return ends
    ends[-1] = True
    ids = np.asarray(batch[SB.EPS_ID])
    breaks = ids[1:] != ids[:-1]
    if AGENT_INDEX in batch:
        agents = np.asarray(batch[AGENT_INDEX])
        breaks |= agents[1:] != agents[:-1]
    if SB.T in batch:
        t = np.asarray(batch[SB.T])
        breaks |= t[1:] != t[:-1] + 1
    ends[:-1] = breaks
    ends |= np.asarray(batch[SB.TERMINATEDS], dtype=bool)
    ends |= np.asarray(batch[SB.TRUNCATEDS], dtype=bool)
    return ends


def needs_postprocessing(policy: Any, batch: SB) -> bool:
    """Whether a column the policy's postprocessing steps add is missing from ``batch``."""
    for step in getattr(policy, "postprocessing", ()):
        produces = PRODUCES.get(step, getattr(step, "produces", None))
        if produces is None:
            # A step that does not say what it adds (a user's): run it on every input.
            return True
        if any(name not in batch for name in produces):
            return True
    return False


def postprocess_rows(policy: Any, batch: SB) -> SB:
    """``batch`` (flat rows, see the module's doc) postprocessed by ``policy`` as if it had
    sampled them: ``vf_preds`` (with a critic) and the bootstraps are the current policy's,
    then the policy's postprocessing steps add their columns."""
    batch = episode_columns(batch)
    rows = len(batch)
    if rows == 0:
        return batch
    columns: dict[str, Array] = {
        name: np.asarray(values)[:, None] for name, values in batch.items() if name not in _PRIVATE
    }
    ends = segment_ends(batch)
    terminated = np.asarray(batch[SB.TERMINATEDS], dtype=bool)
    bootstrap = np.zeros(rows, dtype=np.float32)
    if getattr(policy, "has_critic", False):
        values, next_values = _values(policy, batch, ends & ~terminated)
        columns[SB.VF_PREDS] = values[:, None]
        bootstrap = next_values
    columns[SB.SEGMENT_ENDS] = ends[:, None]
    columns[SB.BOOTSTRAP_VALUES] = bootstrap[:, None]
    columns[SB.TERMINATEDS] = terminated[:, None]
    policy.postprocess_fragment(columns)
    return SB({name: values[:, 0] for name, values in columns.items() if name not in _PRIVATE})


def _values(policy: Any, batch: SB, cut: Array) -> tuple[Array, Array]:
    """V(obs) of every row and V(new_obs) where a run is cut (0 elsewhere), one pass."""
    obs = np.asarray(batch[SB.OBS])
    cut_rows = np.flatnonzero(cut)
    if SB.NEXT_OBS not in batch and len(cut_rows):
        raise ValueError(
            "input rows have no 'new_obs': the value of the observation after a cut episode "
            "can't be computed"
        )
    extra = np.asarray(batch[SB.NEXT_OBS])[cut_rows] if len(cut_rows) else obs[:0]
    memory = _memory_inputs(policy, batch, cut_rows)
    predicted = policy.compute_values(np.concatenate([obs, extra]), *memory)
    rows = len(obs)
    next_values = np.zeros(rows, dtype=np.float32)
    next_values[cut_rows] = predicted[rows:]
    return np.asarray(predicted[:rows], dtype=np.float32), next_values


def _memory_inputs(policy: Any, batch: SB, cut_rows: Array) -> tuple[Any, Any, Any]:
    """A policy with memory values each row from the state it was acted with (the rows'
    ``state_in_k``) and, after a cut, from its last row's (the state after it is not kept in
    the rows)."""
    is_recurrent = getattr(policy, "is_recurrent", None)
    if is_recurrent is None or not is_recurrent():
        return (None, None, None)
    keys = []
    k = 0
    while SB.state_in(k) in batch:
        keys.append(SB.state_in(k))
        k += 1
    if not keys:
        raise ValueError(
            "input rows for a policy with memory need the state each row was acted with "
            "('state_in_0', ...), as rollout workers write it"
        )
    state = [np.concatenate([batch[key], batch[key][cut_rows]]) for key in keys]
    prev_actions = (
        np.concatenate([batch[SB.PREV_ACTIONS], batch[SB.PREV_ACTIONS][cut_rows]])
        if SB.PREV_ACTIONS in batch
        else None
    )
    prev_rewards = (
        np.concatenate([batch[SB.PREV_REWARDS], batch[SB.PREV_REWARDS][cut_rows]])
        if SB.PREV_REWARDS in batch
        else None
    )
    return (state, prev_actions, prev_rewards)
