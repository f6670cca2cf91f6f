"""``PolicyRows``: the rows one policy collects while a multi-agent worker samples a fragment.

Observations and actions arrive in batches, one per env step (the policy's agents of all
sub-envs at once): ``add_obs`` and ``add_actions`` keep them as chunks and hand out global
row numbers (``h`` for observations, ``g`` for actions). A transition is closed later, when its
agent sees its next observation or is done; ``close`` records which action row it was, which
observation row came next, and the reward summed in between. ``take`` turns the closed rows
into columns with one gather per column, every agent's trajectory contiguous and in time order.

``padded`` lays a policy's trajectories out as ``(T, K)`` columns (time x trajectory), the layout
the algorithms' postprocessing steps work on, and ``unpadded`` reads rows back from it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from runtime.core.sample_batch import SampleBatch as SB

Array = npt.NDArray[Any]

#: The action chunk column holding each action row's observation row (``h``).
OBS_ROW = "_obs_row"
#: Row bookkeeping columns, not shown to learners.
AGENT_INDEX = "agent_index"


class PolicyRows:
    def __init__(self) -> None:
        self._obs: list[Array] = []
        self.num_obs = 0
        self._acts: list[dict[str, Array]] = []
        self.num_acts = 0
        self.g: list[int] = []
        self.next_h: list[int] = []
        self.rewards: list[float] = []
        self.terminateds: list[bool] = []
        self.truncateds: list[bool] = []
        self.infos: list[Any] = []
        self.eps_id: list[int] = []
        self.env_id: list[int] = []
        self.agent_index: list[int] = []
        self.t: list[int] = []

    def add_obs(self, processed: Array) -> int:
        """Keep a batch of processed observations; returns the row number of the first."""
        first = self.num_obs
        self._obs.append(processed)
        self.num_obs += len(processed)
        return first

    def add_actions(self, obs_rows: Array, columns: dict[str, Array]) -> int:
        """Keep a batch of actions (with the policy's extra outputs) taken on the observation
        rows ``obs_rows``; returns the row number of the first."""
        first = self.num_acts
        self._acts.append({**columns, OBS_ROW: obs_rows})
        self.num_acts += len(obs_rows)
        return first

    def close(
        self,
        g: int,
        next_h: int,
        reward: float,
        terminated: bool,
        truncated: bool,
        info: Any,
        eps_id: int,
        env_id: int,
        agent_index: int,
        t: int,
    ) -> None:
        """A transition is over: action row ``g`` led to observation row ``next_h`` (-1: none
        came; the agent's last observation stands in)."""
        self.g.append(g)
        self.next_h.append(next_h)
        self.rewards.append(reward)
        self.terminateds.append(terminated)
        self.truncateds.append(truncated)
        self.infos.append(info)
        self.eps_id.append(eps_id)
        self.env_id.append(env_id)
        self.agent_index.append(agent_index)
        self.t.append(t)

    def __len__(self) -> int:
        return len(self.g)

    def action_rows(self, g: Array) -> tuple[Array, dict[str, Array]]:
        """The observations and action columns of action rows ``g`` (to carry open transitions
        into the next fragment)."""
        acts = _concat(self._acts)
        obs = _concat_obs(self._obs)
        picked = {k: v[g] for k, v in acts.items() if k != OBS_ROW}
        return obs[acts[OBS_ROW][g]], picked

    def take(self) -> dict[str, Array]:
        """The closed rows as columns, ordered by episode, agent and time."""
        acts = _concat(self._acts)
        obs_all = _concat_obs(self._obs)
        g = np.asarray(self.g, dtype=np.int64)
        obs = obs_all[acts[OBS_ROW][g]]
        next_h = np.asarray(self.next_h, dtype=np.int64)
        new_obs = obs.copy()
        has_next = next_h >= 0
        new_obs[has_next] = obs_all[next_h[has_next]]
        infos = np.empty(len(g), dtype=object)
        infos[:] = self.infos
        columns: dict[str, Array] = {
            SB.OBS: obs,
            SB.NEXT_OBS: new_obs,
            SB.REWARDS: np.asarray(self.rewards, dtype=np.float64),
            SB.TERMINATEDS: np.asarray(self.terminateds, dtype=bool),
            SB.TRUNCATEDS: np.asarray(self.truncateds, dtype=bool),
            SB.INFOS: infos,
            SB.EPS_ID: np.asarray(self.eps_id, dtype=np.int64),
            SB.ENV_ID: np.asarray(self.env_id, dtype=np.int64),
            AGENT_INDEX: np.asarray(self.agent_index, dtype=np.int64),
            SB.T: np.asarray(self.t, dtype=np.int64),
        }
        for name, values in acts.items():
            if name != OBS_ROW:
                columns[name] = values[g]
        order = np.lexsort((columns[SB.T], columns[AGENT_INDEX], columns[SB.EPS_ID]))
        return {k: v[order] for k, v in columns.items()}


def _concat(chunks: list[dict[str, Array]]) -> dict[str, Array]:
    if not chunks:
        return {OBS_ROW: np.zeros(0, dtype=np.int64)}
    return {k: np.concatenate([c[k] for c in chunks]) for k in chunks[0]}


def _concat_obs(chunks: list[Array]) -> Array:
    return np.concatenate(chunks) if chunks else np.zeros((0, 1), dtype=np.float32)


def trajectory_starts(columns: dict[str, Array]) -> Array:
    """The first row of each trajectory (episode and agent) in ``take()``'s order."""
    eps, agents = columns[SB.EPS_ID], columns[AGENT_INDEX]
    change = (eps[1:] != eps[:-1]) | (agents[1:] != agents[:-1])
    return np.concatenate([[0], np.flatnonzero(change) + 1]).astype(np.int64)


class Layout:
    """Where each row of ``take()``'s columns sits in the ``(T, K)`` layout."""

    def __init__(self, starts: Array, num_rows: int) -> None:
        lengths = np.diff(np.append(starts, num_rows))
        self.lane = np.repeat(np.arange(len(starts)), lengths)
        self.pos = np.arange(num_rows) - starts[self.lane]
        self.shape = (int(lengths.max()) if len(lengths) else 0, len(starts))
        #: The last row of each trajectory.
        self.last = starts + lengths - 1

    def padded(self, flat: Array, fill: Any = 0) -> Array:
        out = np.full((*self.shape, *flat.shape[1:]), fill, dtype=flat.dtype)
        out[self.pos, self.lane] = flat
        return out

    def unpadded(self, columns: Array) -> Array:
        return columns[self.pos, self.lane]
