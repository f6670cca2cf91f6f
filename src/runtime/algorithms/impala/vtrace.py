"""V-trace (Espeholt et al. 2018, "IMPALA", section 4.1) and the time-major layout it runs on.

V-trace corrects an n-step value target for the lag between the policy that acted (the
behaviour policy ``mu``, whose log-probabilities the sampler recorded) and the one being
learned (the target policy ``pi``). On a time-major ``(T, B)`` fragment, with
``rho_t = pi(a_t|x_t) / mu(a_t|x_t)``, ``d_t`` the discount after step ``t`` (``gamma``, 0 after a
termination) and ``V`` the learner's value estimates:

- ``delta_t = min(rho_bar, rho_t) * (r_t + d_t * V(x_{t+1}) - V(x_t))``
- ``vs_t - V(x_t) = delta_t + d_t * min(c_bar, rho_t) * (vs_{t+1} - V(x_{t+1}))``, computed
  backward from ``vs_T - V(x_T) = 0`` (the bootstrap value is not corrected)
- ``pg_advantage_t = min(rho_bar_pg, rho_t) * (r_t + d_t * vs_{t+1} - V(x_t))``

``vs`` is the value target and ``pg_advantages`` the policy gradient's advantage. Neither carries
a gradient: they are targets, like a return.

Batches arrive as flat rows; ``time_major_layout`` finds where each row sits in the ``(T, B)``
layout (``TimeMajor``): see its docstring for the layout and for what the learner must keep in
the batch (``values_bootstrapped``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import torch

from runtime.core.postprocessing import VALUES_BOOTSTRAPPED as VALUES_BOOTSTRAPPED
from runtime.core.sample_batch import SampleBatch as SB

Array = npt.NDArray[Any]

#: ``VALUES_BOOTSTRAPPED``: each row's bootstrap value (V of the observation after the row
#: where it ends an episode segment without terminating, 0 elsewhere), kept from the sampler's
#: ``bootstrap_values`` by ``postprocessing.keep_bootstrap_values``.

#: The rows of one agent in a multi-agent batch (``runtime.env.agent_rows``).
AGENT_INDEX = "agent_index"


@dataclass(frozen=True)
class VTraceReturns:
    """V-trace's outputs, each ``(T, B)`` and without a gradient."""

    #: The value targets ``vs_t``.
    vs: torch.Tensor
    #: The policy gradient's advantages ``min(rho_bar_pg, rho_t) * (r_t + d_t vs_{t+1} - V_t)``.
    pg_advantages: torch.Tensor
    #: ``log pi(a_t) - log mu(a_t)``, unclipped (the stats of how off-policy the batch was).
    log_rhos: torch.Tensor


def vtrace_returns(
    *,
    behaviour_logp: torch.Tensor,
    target_logp: torch.Tensor,
    rewards: torch.Tensor,
    values: torch.Tensor,
    bootstrap_value: torch.Tensor,
    discounts: torch.Tensor,
    clip_rho_threshold: float | None = 1.0,
    clip_pg_rho_threshold: float | None = 1.0,
    clip_c_threshold: float | None = 1.0,
    segment_ends: torch.Tensor | None = None,
    bootstrap_values: torch.Tensor | None = None,
) -> VTraceReturns:
    """V-trace targets on time-major tensors: ``(T, B)`` each, ``bootstrap_value`` ``(B,)``
    (V of the observation after each lane's last step). ``discounts`` is
    ``gamma * (1 - terminated)``: a termination inside a fragment cuts the recursion there. A
    clip threshold of None leaves that weight unclipped. Everything is cast to ``values``'
    dtype.

    ``segment_ends``/``bootstrap_values`` (optional, ``(T, B)`` together) mark the steps whose
    successor in the lane is not their episode's next step (a truncation inside a fragment, the
    last valid step of a padded lane) and give the value each of them bootstraps from instead
    of ``V(x_{t+1})`` (0 after a termination). There the traces stop, as at a termination, but
    a truncated episode still bootstraps: with ``discounts`` alone the step before another
    episode's first would bootstrap from that episode. Where ``segment_ends`` holds on the last
    step, ``bootstrap_value`` is not read.

    The backward recursion is a Python loop over ``T`` (three small ops per step): the caller
    decides the device (the reference moves it to the CPU)."""
    with torch.no_grad():
        dtype = values.dtype
        values = values.detach()
        log_rhos = (target_logp.detach() - behaviour_logp.detach()).to(dtype)
        rewards = rewards.to(dtype)
        discounts = discounts.to(dtype)
        bootstrap_value = bootstrap_value.detach().to(dtype)

        rhos = torch.exp(log_rhos)
        clipped_rhos = rhos if clip_rho_threshold is None else rhos.clamp(max=clip_rho_threshold)
        cs = rhos if clip_c_threshold is None else rhos.clamp(max=clip_c_threshold)

        # V(x_{t+1}) of every step: the next step's value, the bootstrap after the last one,
        # and the recorded bootstrap where an episode segment ends inside the lane.
        next_values = torch.cat([values[1:], bootstrap_value[None]])
        trace_discounts = discounts
        ends: torch.Tensor | None = None
        recorded = torch.zeros_like(values)
        if segment_ends is not None:
            if bootstrap_values is None:
                raise ValueError("vtrace_returns: segment_ends needs bootstrap_values")
            ends = segment_ends.to(torch.bool)
            recorded = bootstrap_values.detach().to(dtype)
            next_values = torch.where(ends, recorded, next_values)
            trace_discounts = torch.where(ends, torch.zeros_like(discounts), discounts)

        # The importance-weighted TD errors, summed backward with the truncated traces c.
        deltas = clipped_rhos * (rewards + discounts * next_values - values)
        decay = trace_discounts * cs
        vs_minus_v = torch.empty_like(values)
        acc = torch.zeros_like(bootstrap_value)
        for t in range(len(values) - 1, -1, -1):
            acc = deltas[t] + decay[t] * acc
            vs_minus_v[t] = acc
        vs = values + vs_minus_v

        # The policy gradient bootstraps from vs_{t+1}, the corrected value of what followed.
        next_vs = torch.cat([vs[1:], bootstrap_value[None]])
        if ends is not None:
            next_vs = torch.where(ends, recorded, next_vs)
        pg_rhos = rhos if clip_pg_rho_threshold is None else rhos.clamp(max=clip_pg_rho_threshold)
        pg_advantages = pg_rhos * (rewards + discounts * next_vs - values)
    return VTraceReturns(vs=vs, pg_advantages=pg_advantages, log_rhos=log_rhos)


def vtrace_on_layout(
    layout: TimeMajor,
    batch: Mapping[str, torch.Tensor],
    *,
    values: torch.Tensor,
    behaviour_logp: torch.Tensor,
    target_logp: torch.Tensor,
    gamma: float,
    clip_rho_threshold: float | None,
    clip_pg_rho_threshold: float | None,
) -> VTraceReturns:
    """``vtrace_returns`` on a flat batch laid out by ``layout`` (the losses' call):
    ``values`` is the learner's V of every batch row (flat, ``(N,)``), the log-likelihoods are
    time-major ``(T, B)``; the rewards, the discounts (``gamma``, 0 after a termination) and
    the bootstraps (the sampler's ``values_bootstrapped``, the successors of lanes cut inside
    an episode: ``TimeMajor.bootstraps``) come from ``batch`` and ``layout``."""
    tm = layout.time_major
    time_major_values = tm(values)
    segment_ends, bootstrap_values = layout.bootstraps(values, batch.get(VALUES_BOOTSTRAPPED))
    return vtrace_returns(
        behaviour_logp=behaviour_logp,
        target_logp=target_logp,
        rewards=tm(batch[SB.REWARDS]),
        values=time_major_values,
        bootstrap_value=bootstrap_values[-1],
        discounts=gamma * (1.0 - tm(batch[SB.TERMINATEDS]).to(time_major_values.dtype)),
        clip_rho_threshold=clip_rho_threshold,
        clip_pg_rho_threshold=clip_pg_rho_threshold,
        segment_ends=segment_ends,
        bootstrap_values=bootstrap_values,
    )


class TimeMajor:
    """Where the rows of a flat batch sit in the ``(T, B)`` layout V-trace runs on.

    The layout (as the reference's ``_make_time_major``: ``B`` fragments of ``T`` steps): a
    lane is a run of rows of one sub-env (``env_id``) and agent (``agent_index``) in which each
    row is the step after the one before it — the same episode at a later ``t``, or a new
    episode after a row that ended one (terminated or truncated) — cut every ``max_len`` rows.
    The sampler flattens each sub-env's fragment of ``rollout_fragment_length`` steps
    contiguously (``EnvRunner._flatten``; a multi-agent policy's rows trajectory by trajectory,
    ``agent_rows.PolicyRows.take``), so with ``max_len = rollout_fragment_length`` a lane is a
    sampled fragment. A batch whose lanes differ in length (``complete_episodes`` fragments, a
    dropped faulty episode, multi-agent trajectories) is padded at the end of each lane and
    masked (``valid``). Rows that do not follow one another start a new lane: two workers'
    fragments of ``env_id`` 0 side by side are two lanes, their episode ids differing with no
    episode ended between them. Where the first of them ends with its episode, they may share
    a lane; that changes no target, the recursion stopping there.

    Bootstraps: a step ends its episode segment (``segment_ends``) when it is terminated,
    truncated, or the next row of the batch does not follow it (the sampler's fragment end,
    where it recorded ``values_bootstrapped``). A lane cut by ``max_len`` inside an episode
    ends on a step whose successor is in the batch: it bootstraps from that row's value
    (``successors``), as the reference's ``vtrace_drop_last_ts``.

    ``drop_last_ts`` (the reference's ``vtrace_drop_last_ts``, True by default in its older
    releases, deprecated later): the last row of each lane leaves the layout and serves only as
    the bootstrap of the row before it (the reference's ``bootstrap_value = values[-1]``, the
    learner's own estimate in place of the sampler's), and ``T`` is one shorter. Without it,
    as the reference's later releases, every row trains and a fragment's end bootstraps from
    ``values_bootstrapped``.

    A module with memory returns its valid rows flat in batch order when it is given all of a
    batch's sequences in order (``sequence_tensors``), so its outputs map the same way.
    """

    def __init__(
        self,
        rows: Array,
        valid: Array,
        segment_ends: Array,
        terminated: Array,
        successors: Array,
        num_rows: int,
    ) -> None:
        #: ``(T, B)`` row of the batch at each place (0 where padded: read ``valid``).
        self.rows = rows
        #: ``(T, B)`` True where a row sits.
        self.valid = valid
        #: ``(T, B)`` True where the step's successor in the lane is not its episode's next
        #: step (terminated, truncated, the end of the sampler's fragment, each lane's last).
        self.segment_ends = segment_ends
        #: ``(T, B)`` True where the episode terminated (no bootstrap: 0).
        self.terminated = terminated
        #: ``(B,)`` the batch row that follows each lane's last step in its episode (a cut of
        #: ``max_len`` or ``drop_last_ts``), -1 where there is none.
        self.successors = successors
        #: The batch's row count (``drop_last_ts`` leaves some of them out of the layout).
        self.num_rows = num_rows
        self.shape: tuple[int, int] = (int(rows.shape[0]), int(rows.shape[1]))
        t_index, b_index = np.nonzero(valid)
        order = np.argsort(rows[t_index, b_index], kind="stable")
        #: The batch rows in the layout, in batch order, and their flat place ``t * B + b``.
        self.row_index: Array = rows[t_index, b_index][order]
        self.place_index: Array = (t_index * self.shape[1] + b_index)[order]
        self._on_device: dict[torch.device, tuple[torch.Tensor, torch.Tensor]] = {}

    def _indices(self, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        if device not in self._on_device:
            self._on_device[device] = (
                torch.as_tensor(self.row_index, device=device),
                torch.as_tensor(self.place_index, device=device),
            )
        return self._on_device[device]

    def time_major(self, flat: torch.Tensor, fill: float = 0.0) -> torch.Tensor:
        """A batch column ``(N, ...)`` as ``(T, B, ...)``, ``fill`` where padded. Gradients
        flow back to ``flat``."""
        rows, places = self._indices(flat.device)
        steps, lanes = self.shape
        out = flat.new_full((steps * lanes, *flat.shape[1:]), fill)
        out[places] = flat[rows]
        return out.reshape(steps, lanes, *flat.shape[1:])

    def flat(self, time_major: torch.Tensor) -> torch.Tensor:
        """The valid steps of a ``(T, B, ...)`` tensor as rows in batch order (the rows
        ``row_index`` names: all of the batch's but those ``drop_last_ts`` left out)."""
        _, places = self._indices(time_major.device)
        steps, lanes = self.shape
        return time_major.reshape(steps * lanes, *time_major.shape[2:])[places]

    def mask(self, device: torch.device) -> torch.Tensor:
        """``valid`` as a tensor."""
        return torch.as_tensor(self.valid, device=device)

    def bootstraps(
        self, values: torch.Tensor, values_bootstrapped: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``(segment_ends, bootstrap_values)``, ``(T, B)`` each, for ``vtrace_returns``.
        ``values``: the learner's V of every batch row (flat, ``(N,)``; read without a
        gradient); ``values_bootstrapped``: the sampler's bootstraps (flat; None: zeros, right
        only where no segment ends but by termination or a ``successor``, e.g. whole fragments
        with ``drop_last_ts`` and no truncation)."""
        device = values.device
        ends = torch.as_tensor(self.segment_ends, device=device)
        if values_bootstrapped is None:
            recorded = torch.zeros(self.shape, dtype=values.dtype, device=device)
        else:
            recorded = self.time_major(values_bootstrapped.to(values.dtype))
        # A terminated step bootstraps from nothing, whatever a column says.
        recorded = torch.where(
            torch.as_tensor(self.terminated, device=device), torch.zeros_like(recorded), recorded
        )
        has_successor = np.flatnonzero(self.successors >= 0)
        if len(has_successor):
            lanes = torch.as_tensor(has_successor, device=device)
            last = torch.as_tensor(self.valid.sum(0)[has_successor] - 1, device=device)
            successor = torch.as_tensor(self.successors[has_successor], device=device)
            recorded = recorded.index_put((last, lanes), values.detach()[successor])
        return ends, recorded


def time_major_layout(
    columns: Mapping[str, Any], max_len: int, *, drop_last_ts: bool = False
) -> TimeMajor:
    """The ``TimeMajor`` layout of a batch (a ``SampleBatch`` or a dict of numpy columns) with
    ``eps_id``, ``terminateds`` and ``truncateds`` (``env_id``, ``agent_index`` and ``t`` where
    present); ``max_len``: ``rollout_fragment_length``, the most steps of a lane."""
    if max_len < 1:
        raise ValueError(f"time_major_layout: max_len must be at least 1, got {max_len}")
    eps = np.asarray(columns[SB.EPS_ID])
    n = len(eps)
    terminated = np.asarray(columns[SB.TERMINATEDS], dtype=bool)
    done = terminated | np.asarray(columns[SB.TRUNCATEDS], dtype=bool)

    # follows[i]: row i is the step after row i - 1 in the same sub-env and agent.
    follows = np.zeros(n, dtype=bool)
    if n > 1:
        same_episode = eps[1:] == eps[:-1]
        if SB.T in columns:
            # Later in the episode, not always by one: a multi-agent row's ``t`` is the env
            # step that closed it, and an agent need not act every step.
            t = np.asarray(columns[SB.T])
            same_episode &= t[1:] > t[:-1]
        next_episode = (eps[1:] != eps[:-1]) & done[:-1]
        step = same_episode | next_episode
        for name in (SB.ENV_ID, AGENT_INDEX):
            if name in columns:
                ids = np.asarray(columns[name])
                step &= ids[1:] == ids[:-1]
        follows[1:] = step

    # Lanes: runs of following rows, cut every max_len rows.
    run_start = np.flatnonzero(~follows)
    run_of_row = np.cumsum(~follows) - 1
    position = np.arange(n) - run_start[run_of_row] if n else np.zeros(0, np.int64)
    starts = np.flatnonzero(position % max_len == 0)
    lens = np.diff(np.append(starts, n))

    # A row ends its segment where its episode does or the next row does not follow it.
    ends_segment = done.copy()
    ends_segment[:-1] |= ~follows[1:]
    if n:
        ends_segment[-1] = True
    last = starts + lens - 1
    successors = np.full(len(starts), -1, dtype=np.int64)
    inside = (last + 1 < n) & ~ends_segment[last]
    successors[inside] = last[inside] + 1

    if drop_last_ts:
        # The last row of each lane becomes the bootstrap of the row before it.
        dropped = last
        lens = lens - 1
        keep = lens > 0
        previous = dropped - 1
        successors = np.where(~done[np.maximum(previous, 0)], dropped, -1)
        starts, lens, successors = starts[keep], lens[keep], successors[keep]

    steps = int(lens.max()) if len(lens) else 0
    lane_count = len(starts)
    pos = np.arange(steps)[:, None]
    valid = pos < lens[None, :]
    rows = np.where(valid, starts[None, :] + pos, 0).astype(np.int64)
    lane_last = valid & (pos == lens[None, :] - 1)
    segment_ends = (ends_segment[rows] & valid) | lane_last
    return TimeMajor(
        rows=rows,
        valid=valid,
        segment_ends=segment_ends.reshape(steps, lane_count),
        terminated=terminated[rows] & valid,
        successors=successors.astype(np.int64),
        num_rows=n,
    )
