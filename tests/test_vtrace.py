"""V-trace, the time-major layout, and IMPALA's and APPO's losses against arithmetic done by hand
and against a loop over the paper's definition of the targets.

The losses run on a stub module whose ``forward_train`` returns fixed logits (and values) as
parameters, for batches of a few rows with Discrete(2) actions whose probabilities are round
numbers (logits ``[log p, log (1 - p)]``).
"""

from __future__ import annotations

import math
from typing import Any

import gymnasium as gym
import numpy as np
import numpy.typing as npt
import pytest
import torch
from torch import nn

from runtime.algorithms.appo import appo_loss
from runtime.algorithms.impala import (
    VALUES_BOOTSTRAPPED,
    TimeMajor,
    impala_loss,
    time_major_layout,
    vtrace_returns,
)
from runtime.core.distributions import Categorical
from runtime.core.module import RLModule
from runtime.core.sample_batch import SampleBatch as SB

Array = npt.NDArray[Any]
Tensors = dict[str, torch.Tensor]
GAMMA = 0.9

# ---------------------------------------------------------------------------- the paper's loop


def _clip(x: float, bar: float | None) -> float:
    return x if bar is None else min(x, bar)


def vtrace_by_the_paper(
    log_rhos: Array,
    discounts: Array,
    rewards: Array,
    values: Array,
    bootstrap: Array,
    rho_bar: float | None,
    pg_rho_bar: float | None,
    c_bar: float | None,
) -> tuple[Array, Array]:
    """Equation (1) of the paper, summed forward from each step s (not the recursion):
    ``vs_s = V_s + sum_{t>=s} (prod_{s<=i<t} d_i c_i) rho_t (r_t + d_t V_{t+1} - V_t)``, with
    the per-step discounts ``d`` in place of ``gamma``; then
    ``pg_s = rho_pg_s (r_s + d_s vs_{s+1} - V_s)``."""
    steps, lanes = values.shape
    rhos = np.exp(log_rhos)
    next_values = np.concatenate([values[1:], bootstrap[None]])
    vs = np.zeros_like(values)
    for b in range(lanes):
        for s in range(steps):
            total = values[s, b]
            weight = 1.0
            for t in range(s, steps):
                td = rewards[t, b] + discounts[t, b] * next_values[t, b] - values[t, b]
                total += weight * _clip(rhos[t, b], rho_bar) * td
                weight *= discounts[t, b] * _clip(rhos[t, b], c_bar)
            vs[s, b] = total
    next_vs = np.concatenate([vs[1:], bootstrap[None]])
    pg = np.zeros_like(values)
    for b in range(lanes):
        for s in range(steps):
            td = rewards[s, b] + discounts[s, b] * next_vs[s, b] - values[s, b]
            pg[s, b] = _clip(rhos[s, b], pg_rho_bar) * td
    return vs, pg


def num(tensor: torch.Tensor) -> float:
    """A 0-d loss tensor as a float."""
    return float(tensor.detach())


def _t(values: Any) -> torch.Tensor:
    return torch.as_tensor(np.asarray(values, dtype=np.float64))


# ---------------------------------------------------------------------------- V-trace

# Two steps, one lane, gamma 0.9. The behaviour policy took both actions with probability 0.5;
# the target policy gives them 0.8 and 0.25: rho_0 = 1.6, rho_1 = 0.5.
# rewards 1, 2; V(x_0) = 0.5, V(x_1) = 1.0; bootstrap V(x_2) = 2.0.
#
# Default clipping (rho_bar = c_bar = rho_bar_pg = 1):
#   delta_1 = min(1, 0.5) * (2 + 0.9 * 2.0 - 1.0) = 0.5 * 2.8 = 1.4   -> vs_1 = 1.0 + 1.4 = 2.4
#   delta_0 = min(1, 1.6) * (1 + 0.9 * 1.0 - 0.5) = 1.4, c_0 = min(1, 1.6) = 1
#   vs_0 = 0.5 + 1.4 + 0.9 * 1 * (2.4 - 1.0) = 3.16
#   pg_0 = min(1, 1.6) * (1 + 0.9 * vs_1 - 0.5) = 1 + 2.16 - 0.5 = 2.66
#   pg_1 = min(1, 0.5) * (2 + 0.9 * 2.0 - 1.0) = 1.4
# rho_bar = rho_bar_pg = 2 (c_bar still 1): rho_0 = 1.6 is no longer clipped:
#   delta_0 = 1.6 * 1.4 = 2.24 -> vs_0 = 0.5 + 2.24 + 1.26 = 4.0;  pg_0 = 1.6 * 2.66 = 4.256
# c_bar = 0.5 (rho_bar 1): the trace after step 0 is halved:
#   vs_0 = 0.5 + 1.4 + 0.9 * 0.5 * 1.4 = 2.53
TWO_STEPS: dict[str, Any] = {
    "behaviour_logp": _t([[math.log(0.5)], [math.log(0.5)]]),
    "target_logp": _t([[math.log(0.8)], [math.log(0.25)]]),
    "rewards": _t([[1.0], [2.0]]),
    "values": _t([[0.5], [1.0]]),
    "bootstrap_value": _t([2.0]),
    "discounts": _t([[GAMMA], [GAMMA]]),
}


def test_two_steps_by_hand() -> None:
    out = vtrace_returns(**TWO_STEPS)
    assert out.vs[:, 0].tolist() == pytest.approx([3.16, 2.4])
    assert out.pg_advantages[:, 0].tolist() == pytest.approx([2.66, 1.4])
    assert out.log_rhos[:, 0].tolist() == pytest.approx([math.log(1.6), math.log(0.5)])

    wider = vtrace_returns(**TWO_STEPS, clip_rho_threshold=2.0, clip_pg_rho_threshold=2.0)
    assert wider.vs[:, 0].tolist() == pytest.approx([4.0, 2.4])
    assert wider.pg_advantages[:, 0].tolist() == pytest.approx([4.256, 1.4])

    shorter_traces = vtrace_returns(**TWO_STEPS, clip_c_threshold=0.5)
    assert shorter_traces.vs[:, 0].tolist() == pytest.approx([2.53, 2.4])


def test_the_targets_carry_no_gradient() -> None:
    inputs = {k: v.clone().requires_grad_(True) for k, v in TWO_STEPS.items()}
    out = vtrace_returns(**inputs)
    assert not out.vs.requires_grad
    assert not out.pg_advantages.requires_grad


@pytest.mark.parametrize(
    ("rho_bar", "pg_rho_bar", "c_bar"),
    [(1.0, 1.0, 1.0), (2.0, 0.5, 0.8), (None, None, None), (0.3, 3.0, 1.5)],
)
def test_matches_the_paper_on_random_inputs(
    rho_bar: float | None, pg_rho_bar: float | None, c_bar: float | None
) -> None:
    rng = np.random.default_rng(0)
    steps, lanes = 7, 3
    log_rhos = rng.normal(0.0, 0.8, (steps, lanes))
    behaviour = rng.normal(-1.0, 0.3, (steps, lanes))
    # Some terminations inside the fragments: discount 0 after them.
    discounts = np.where(rng.random((steps, lanes)) < 0.2, 0.0, 0.95)
    rewards = rng.normal(size=(steps, lanes))
    values = rng.normal(size=(steps, lanes))
    bootstrap = rng.normal(size=lanes)

    out = vtrace_returns(
        behaviour_logp=_t(behaviour),
        target_logp=_t(behaviour + log_rhos),
        rewards=_t(rewards),
        values=_t(values),
        bootstrap_value=_t(bootstrap),
        discounts=_t(discounts),
        clip_rho_threshold=rho_bar,
        clip_pg_rho_threshold=pg_rho_bar,
        clip_c_threshold=c_bar,
    )
    vs, pg = vtrace_by_the_paper(
        log_rhos, discounts, rewards, values, bootstrap, rho_bar, pg_rho_bar, c_bar
    )
    np.testing.assert_allclose(out.vs.numpy(), vs, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(out.pg_advantages.numpy(), pg, rtol=1e-10, atol=1e-10)


def _random_lane(rng: np.random.Generator, steps: int) -> dict[str, Any]:
    behaviour = rng.normal(-1.0, 0.3, (steps, 1))
    return {
        "behaviour_logp": _t(behaviour),
        "target_logp": _t(behaviour + rng.normal(0.0, 0.8, (steps, 1))),
        "rewards": _t(rng.normal(size=(steps, 1))),
        "values": _t(rng.normal(size=(steps, 1))),
        "bootstrap_value": _t(rng.normal(size=1)),
        "discounts": _t(np.full((steps, 1), GAMMA)),
    }


def test_a_termination_inside_a_fragment_cuts_the_recursion() -> None:
    rng = np.random.default_rng(1)
    lane = _random_lane(rng, 5)
    lane["discounts"][2] = 0.0  # the episode terminates at step 2
    out = vtrace_returns(**lane)

    # Nothing after the termination reaches the steps up to it.
    later = {k: v.clone() for k, v in lane.items()}
    later["rewards"][3:] += 10.0
    later["values"][3:] -= 5.0
    later["bootstrap_value"] += 7.0
    later["target_logp"][3:] += 1.0
    moved = vtrace_returns(**later)
    torch.testing.assert_close(moved.vs[:3], out.vs[:3])
    torch.testing.assert_close(moved.pg_advantages[:3], out.pg_advantages[:3])
    assert not torch.allclose(moved.vs[3:], out.vs[3:])

    # At the termination itself the target is the clipped one-step one: r + 0.
    rho = math.exp(float(lane["target_logp"][2, 0] - lane["behaviour_logp"][2, 0]))
    reward, value = float(lane["rewards"][2, 0]), float(lane["values"][2, 0])
    assert float(out.vs[2, 0]) == pytest.approx(value + min(1.0, rho) * (reward - value))
    assert float(out.pg_advantages[2, 0]) == pytest.approx(min(1.0, rho) * (reward - value))


def test_segment_ends_split_a_lane_as_two_lanes_would() -> None:
    """A truncation at step 2 of six: steps 0-2 bootstrap from V(final observation) = 0.7,
    the traces stop there, and steps 3-5 are another episode's."""
    rng = np.random.default_rng(2)
    lane = _random_lane(rng, 6)
    ends = torch.zeros(6, 1, dtype=torch.bool)
    ends[2] = True
    recorded = torch.zeros(6, 1, dtype=torch.float64)
    recorded[2] = 0.7
    out = vtrace_returns(**lane, segment_ends=ends, bootstrap_values=recorded)

    first = {k: v[:3] for k, v in lane.items() if k != "bootstrap_value"}
    second = {k: v[3:] for k, v in lane.items() if k != "bootstrap_value"}
    head = vtrace_returns(**first, bootstrap_value=_t([0.7]))
    tail = vtrace_returns(**second, bootstrap_value=lane["bootstrap_value"])
    torch.testing.assert_close(out.vs, torch.cat([head.vs, tail.vs]))
    torch.testing.assert_close(
        out.pg_advantages, torch.cat([head.pg_advantages, tail.pg_advantages])
    )

    # A termination marked as a segment end bootstrapping from 0 is discount 0.
    recorded[2] = 0.0
    as_end = vtrace_returns(**lane, segment_ends=ends, bootstrap_values=recorded)
    cut = dict(lane)
    cut["discounts"] = lane["discounts"].clone()
    cut["discounts"][2] = 0.0
    as_discount = vtrace_returns(**cut)
    torch.testing.assert_close(as_end.vs, as_discount.vs)
    torch.testing.assert_close(as_end.pg_advantages, as_discount.pg_advantages)


def test_pg_advantages_clip_rho_with_their_own_threshold() -> None:
    """pg_t = min(rho_bar_pg, rho_t) * (r_t + d_t vs_{t+1} - V_t): the threshold scales only
    the steps whose rho exceeds it, and leaves vs alone."""
    rng = np.random.default_rng(3)
    lane = _random_lane(rng, 4)
    lane["target_logp"] = lane["behaviour_logp"] + _t([[math.log(3.0)], [0.0], [-1.0], [1.0]])
    unclipped = vtrace_returns(**lane, clip_pg_rho_threshold=None)
    clipped = vtrace_returns(**lane, clip_pg_rho_threshold=1.5)
    rhos = [3.0, 1.0, math.exp(-1.0), math.e]
    for t, rho in enumerate(rhos):
        scale = min(1.5, rho) / rho
        assert float(clipped.pg_advantages[t, 0]) == pytest.approx(
            scale * float(unclipped.pg_advantages[t, 0])
        )
    torch.testing.assert_close(clipped.vs, unclipped.vs)


# ---------------------------------------------------------------------------- the layout


def _columns(
    eps: list[int], t: list[int], env: list[int], terminated: list[int], truncated: list[int]
) -> dict[str, Array]:
    return {
        SB.EPS_ID: np.asarray(eps, dtype=np.int64),
        SB.T: np.asarray(t, dtype=np.int64),
        SB.ENV_ID: np.asarray(env, dtype=np.int64),
        SB.TERMINATEDS: np.asarray(terminated, dtype=bool),
        SB.TRUNCATEDS: np.asarray(truncated, dtype=bool),
    }


def _two_sub_envs() -> dict[str, Array]:
    """A worker's fragment of 4 steps on 2 sub-envs, flattened sub-env by sub-env: sub-env 0
    ends episode 10 (terminated) at its second step and starts episode 11; sub-env 1 runs
    episode 20, truncated at its second step, then episode 21."""
    return _columns(
        eps=[10, 10, 11, 11, 20, 20, 21, 21],
        t=[3, 4, 0, 1, 7, 8, 0, 1],
        env=[0, 0, 0, 0, 1, 1, 1, 1],
        terminated=[0, 1, 0, 0, 0, 0, 0, 0],
        truncated=[0, 0, 0, 0, 0, 1, 0, 0],
    )


def test_layout_of_two_sub_envs_is_one_lane_each() -> None:
    layout = time_major_layout(_two_sub_envs(), 4)
    assert layout.shape == (4, 2)
    assert layout.rows.tolist() == [[0, 4], [1, 5], [2, 6], [3, 7]]
    assert layout.valid.all()
    # Step 1 ends a segment in both lanes (a termination, a truncation), step 3 is each
    # fragment's end.
    assert layout.segment_ends[:, 0].tolist() == [False, True, False, True]
    assert layout.segment_ends[:, 1].tolist() == [False, True, False, True]
    assert layout.terminated[:, 0].tolist() == [False, True, False, False]
    assert layout.successors.tolist() == [-1, -1]

    # The reference's reshape: B fragments of T rows, time first.
    flat = torch.arange(8, dtype=torch.float32)
    torch.testing.assert_close(layout.time_major(flat), flat.reshape(2, 4).T)
    torch.testing.assert_close(layout.flat(layout.time_major(flat)), flat)

    # Bootstraps: the sampler's where a segment ends without terminating, 0 after a
    # termination (whatever the column holds).
    values = torch.arange(8, dtype=torch.float32) / 10
    recorded = torch.tensor([0, 9, 0, 1.5, 0, 2.5, 0, 3.5])
    ends, bootstraps = layout.bootstraps(values, recorded)
    assert ends.tolist() == layout.segment_ends.tolist()
    assert bootstraps.T.tolist() == [[0, 0, 0, 1.5], [0, 2.5, 0, 3.5]]


def test_ragged_batches_are_padded_and_masked() -> None:
    """Two workers' fragments of sub-env 0 side by side: episode 10 runs on past the first
    one's end, and worker 2's 2 rows (after a faulty episode was dropped) are another lane."""
    columns = _columns(
        eps=[10, 10, 10, 10, 30, 30],
        t=[0, 1, 2, 3, 5, 6],
        env=[0, 0, 0, 0, 0, 0],
        terminated=[0] * 6,
        truncated=[0] * 6,
    )
    layout = time_major_layout(columns, 4)
    assert layout.shape == (4, 2)
    assert layout.valid.T.tolist() == [[True] * 4, [True, True, False, False]]
    assert layout.segment_ends.T.tolist() == [
        [False, False, False, True],
        [False, True, False, False],
    ]
    flat = torch.arange(1, 7, dtype=torch.float32)
    assert layout.time_major(flat, fill=-1).T.tolist() == [[1, 2, 3, 4], [5, 6, -1, -1]]
    torch.testing.assert_close(layout.flat(layout.time_major(flat)), flat)


def test_a_lane_cut_inside_an_episode_bootstraps_from_the_next_row() -> None:
    columns = _columns(
        eps=[5] * 6, t=list(range(6)), env=[0] * 6, terminated=[0] * 6, truncated=[0] * 6
    )
    layout = time_major_layout(columns, 4)
    assert layout.shape == (4, 2)
    assert layout.successors.tolist() == [4, -1]
    values = torch.tensor([0.0, 0.1, 0.2, 0.3, 0.4, 0.5], requires_grad=True)
    recorded = torch.tensor([0, 0, 0, 0, 0, 0.9])
    ends, bootstraps = layout.bootstraps(values, recorded)
    assert ends.T.tolist() == [[False, False, False, True], [False, True, False, False]]
    assert bootstraps.T.flatten().tolist() == pytest.approx([0, 0, 0, 0.4, 0, 0.9, 0, 0])
    assert not bootstraps.requires_grad


def test_drop_last_ts_makes_each_lane_s_last_row_its_bootstrap() -> None:
    layout = time_major_layout(_two_sub_envs(), 4, drop_last_ts=True)
    assert layout.shape == (3, 2)
    assert layout.rows.tolist() == [[0, 4], [1, 5], [2, 6]]
    assert layout.successors.tolist() == [3, 7]
    assert layout.row_index.tolist() == [0, 1, 2, 4, 5, 6]
    values = torch.arange(8, dtype=torch.float32)
    _, bootstraps = layout.bootstraps(values, None)
    assert bootstraps.T.tolist() == [[0, 0, 3], [0, 0, 7]]


def test_multi_agent_trajectories_are_lanes_of_their_own() -> None:
    """Two agents of one episode; agent 0 acts every other env step (``t`` is the env step)."""
    columns = _columns(
        eps=[1, 1, 1, 1, 1], t=[0, 2, 4, 1, 3], env=[0] * 5, terminated=[0] * 5, truncated=[0] * 5
    )
    columns["agent_index"] = np.asarray([0, 0, 0, 1, 1])
    layout = time_major_layout(columns, 10)
    assert layout.shape == (3, 2)
    assert layout.valid.T.tolist() == [[True, True, True], [True, True, False]]


# ---------------------------------------------------------------------------- the losses


class FixedOutputs(RLModule):
    """``forward_train`` returns the given logits (and values), both parameters."""

    dist_class = Categorical

    def __init__(self, probs: list[float], actions: list[int], values: list[float]) -> None:
        """``probs``: the probability of each row's action (of two)."""
        super().__init__(
            gym.spaces.Box(-1.0, 1.0, (1,), np.float32), gym.spaces.Discrete(2), {"model": {}}
        )
        logits = [_logits(p, a) for p, a in zip(probs, actions, strict=True)]
        self.logits = nn.Parameter(torch.tensor(logits, dtype=torch.float32))
        self.values = nn.Parameter(torch.tensor(values, dtype=torch.float32))
        self.has_critic = True

    def forward_train(self, batch: Tensors) -> Tensors:
        return {SB.ACTION_DIST_INPUTS: self.logits, SB.VF_PREDS: self.values}


def _logits(prob: float, action: int) -> list[float]:
    """Logits of a Discrete(2) distribution giving ``action`` the probability ``prob``."""
    pair = [math.log(prob), math.log(1 - prob)]
    return pair if action == 0 else pair[::-1]


def entropy(p: float) -> float:
    return -(p * math.log(p) + (1 - p) * math.log(1 - p))


def kl(p_old: float, p_new: float) -> float:
    """KL(old || new) of two Discrete(2) distributions, by the probability of one action."""
    return p_old * math.log(p_old / p_new) + (1 - p_old) * math.log((1 - p_old) / (1 - p_new))


def _batch(
    actions: list[int],
    behaviour_probs: list[float],
    rewards: list[float],
    terminated: list[int],
    recorded: list[float],
) -> Tensors:
    return {
        SB.OBS: torch.zeros(len(actions), 1),
        SB.ACTIONS: torch.tensor(actions),
        SB.ACTION_LOGP: torch.tensor([math.log(p) for p in behaviour_probs]),
        SB.ACTION_DIST_INPUTS: torch.tensor(
            [_logits(p, a) for p, a in zip(behaviour_probs, actions, strict=True)]
        ),
        SB.REWARDS: torch.tensor(rewards, dtype=torch.float64),
        SB.TERMINATEDS: torch.tensor(terminated, dtype=torch.bool),
        VALUES_BOOTSTRAPPED: torch.tensor(recorded),
    }


def _one_lane() -> TimeMajor:
    return time_major_layout(_columns([1, 1], [0, 1], [0, 0], [0, 0], [0, 0]), 2)


# The two-step example above as a batch: target probabilities 0.8 (action 0), 0.25 (action 1),
# the fragment's end bootstrapping from 2.0: vs = [3.16, 2.4], pg_advantages = [2.66, 1.4].
IMPALA_ACTIONS = [0, 1]
IMPALA_TARGET = [0.8, 0.25]
IMPALA_VALUES = [0.5, 1.0]


def _impala(
    module: FixedOutputs, batch: Tensors, layout: TimeMajor, **kwargs: Any
) -> tuple[torch.Tensor, dict[str, Any]]:
    settings: dict[str, Any] = {"gamma": GAMMA, "vf_loss_coeff": 0.5, "entropy_coeff": 0.01}
    settings.update(kwargs)
    return impala_loss(module, batch, layout=layout, **settings)


def test_impala_loss_by_hand() -> None:
    module = FixedOutputs(IMPALA_TARGET, IMPALA_ACTIONS, IMPALA_VALUES)
    batch = _batch(IMPALA_ACTIONS, [0.5, 0.5], [1.0, 2.0], [0, 0], [0.0, 2.0])
    loss, stats = _impala(module, batch, _one_lane())

    policy = -(math.log(0.8) * 2.66 + math.log(0.25) * 1.4) / 2
    vf = 0.5 * ((0.5 - 3.16) ** 2 + (1.0 - 2.4) ** 2) / 2  # 2.2589
    ent = (entropy(0.8) + entropy(0.25)) / 2
    assert float(stats["policy_loss"]) == pytest.approx(policy, rel=1e-5)
    assert float(stats["vf_loss"]) == pytest.approx(vf, rel=1e-5)
    assert float(stats["entropy"]) == pytest.approx(ent, rel=1e-5)
    assert num(loss) == pytest.approx(policy + 0.5 * vf - 0.01 * ent, rel=1e-5)
    # vs = [3.16, 2.4] against V = [0.5, 1.0]: 1 - Var([-2.66, -1.4]) / Var([3.16, 2.4])
    explained = 1 - (0.63**2) / (0.38**2)
    assert float(stats["vf_explained_var"]) == pytest.approx(max(-1.0, explained), rel=1e-5)

    # The targets are constants: d loss / d V_i = 0.5 * 0.5 * 2 (V_i - vs_i) / 2.
    loss.backward()  # type: ignore[no-untyped-call]
    assert module.values.grad is not None
    assert module.values.grad.tolist() == pytest.approx(
        [0.5 * (0.5 - 3.16) / 2, 0.5 * (1.0 - 2.4) / 2], rel=1e-5
    )

    # Summed, as the reference's torch policy: each term twice (two steps).
    summed, sum_stats = _impala(module, batch, _one_lane(), reduction="sum")
    assert float(sum_stats["policy_loss"]) == pytest.approx(2 * policy, rel=1e-5)
    assert float(sum_stats["vf_loss"]) == pytest.approx(2 * vf, rel=1e-5)
    assert num(summed) == pytest.approx(2 * (policy + 0.5 * vf - 0.01 * ent), rel=1e-5)


def test_impala_loss_without_vtrace_is_actor_critic_on_returns() -> None:
    """A second lane of one terminated step (padded to two): returns are the discounted sums,
    R = [1 + 0.9 * 3.8, 2 + 0.9 * 2.0] = [4.42, 3.8] and [3.0]; the behaviour policy plays no
    part."""
    actions = [*IMPALA_ACTIONS, 0]
    module = FixedOutputs([*IMPALA_TARGET, 0.5], actions, [*IMPALA_VALUES, 0.4])
    batch = _batch(actions, [0.1, 0.9, 0.3], [1.0, 2.0, 3.0], [0, 0, 1], [0.0, 2.0, 0.0])
    layout = time_major_layout(_columns([1, 1, 2], [0, 1, 0], [0, 0, 1], [0, 0, 1], [0, 0, 0]), 2)
    assert layout.valid.T.tolist() == [[True, True], [True, False]]
    loss, stats = _impala(module, batch, layout, vtrace=False, entropy_coeff=0.0)

    advantages = [4.42 - 0.5, 3.8 - 1.0, 3.0 - 0.4]
    logps = [math.log(0.8), math.log(0.25), math.log(0.5)]
    policy = -sum(lp * a for lp, a in zip(logps, advantages, strict=True)) / 3
    vf = 0.5 * sum(a * a for a in advantages) / 3  # 0.5 * (15.3664 + 7.84 + 6.76) / 3
    assert float(stats["policy_loss"]) == pytest.approx(policy, rel=1e-5)
    assert float(stats["vf_loss"]) == pytest.approx(vf, rel=1e-5)
    assert num(loss) == pytest.approx(policy + 0.5 * vf, rel=1e-5)

    # On-policy data (behaviour = target) gives V-trace the same targets.
    on_policy = dict(batch)
    on_policy[SB.ACTION_LOGP] = torch.tensor(logps)
    vtrace_loss, _ = _impala(module, on_policy, layout, entropy_coeff=0.0)
    assert num(vtrace_loss) == pytest.approx(num(loss), rel=1e-5)


# APPO: the behaviour policy took both actions with probability 0.5; the target network (old
# policy) gives them 0.8 and 0.2, the current policy 0.9 and 0.35.
# V-trace from behaviour to old: rho = [1.6, 0.4]
#   delta_1 = 0.4 * (2 + 0.9 * 2.0 - 1.0) = 1.12          -> vs_1 = 2.12
#   delta_0 = 1 * (1 + 0.9 * 1.0 - 0.5) = 1.4, c_0 = 1    -> vs_0 = 0.5 + 1.4 + 0.9 * 1.12 = 2.908
#   pg_0 = 1 * (1 + 0.9 * 2.12 - 0.5) = 2.408;  pg_1 = 0.4 * 2.8 = 1.12
# is_ratio = clip(mu / pi_old, 0, 2) = [0.625, 2.5 -> 2.0]
# ratio = is_ratio * pi / mu = [0.625 * 1.8, 2.0 * 0.7] = [1.125, 1.4]
# surrogates (clip 0.2): 2.408 * 1.125 = 2.709 (inside the clip); min(1.12 * 1.4, 1.12 * 1.2)
#   = 1.344 (clipped)
APPO_ACTIONS = [0, 1]
APPO_OLD = [0.8, 0.2]
APPO_NEW = [0.9, 0.35]


def _appo(**kwargs: Any) -> tuple[torch.Tensor, dict[str, Any], FixedOutputs]:
    module = FixedOutputs(APPO_NEW, APPO_ACTIONS, IMPALA_VALUES)
    target = FixedOutputs(APPO_OLD, APPO_ACTIONS, [0.0, 0.0])
    batch = _batch(APPO_ACTIONS, [0.5, 0.5], [1.0, 2.0], [0, 0], [0.0, 2.0])
    settings: dict[str, Any] = {
        "gamma": GAMMA,
        "clip_param": 0.2,
        "vf_loss_coeff": 0.5,
        "entropy_coeff": 0.0,
        "use_kl_loss": False,
        "kl_coeff": 0.0,
    }
    settings.update(kwargs)
    loss, stats = appo_loss(module, batch, target_module=target, layout=_one_lane(), **settings)
    return loss, stats, module


def test_appo_loss_by_hand() -> None:
    loss, stats, module = _appo()
    policy = -(2.709 + 1.344) / 2
    vf = 0.5 * ((0.5 - 2.908) ** 2 + (1.0 - 2.12) ** 2) / 2
    assert float(stats["policy_loss"]) == pytest.approx(policy, rel=1e-5)
    assert float(stats["vf_loss"]) == pytest.approx(vf, rel=1e-5)
    assert num(loss) == pytest.approx(policy + 0.5 * vf, rel=1e-5)
    assert float(stats["mean_IS"]) == pytest.approx((0.625 + 2.0) / 2)
    assert float(stats["var_IS"]) == pytest.approx((0.6875**2) * 2)  # unbiased, as the reference
    assert "kl" not in stats

    # The clipped row gives the current policy no gradient; the other one does.
    loss.backward()  # type: ignore[no-untyped-call]
    assert module.logits.grad is not None
    assert module.logits.grad[1].abs().sum() == 0
    assert module.logits.grad[0].abs().sum() > 0


def test_appo_loss_kl_and_entropy_terms() -> None:
    plain, _, _ = _appo()
    with_kl, stats, _ = _appo(use_kl_loss=True, kl_coeff=0.3, entropy_coeff=0.01)
    expected_kl = (kl(0.8, 0.9) + kl(0.2, 0.35)) / 2  # KL(pi_old || pi)
    ent = (entropy(0.9) + entropy(0.35)) / 2
    assert float(stats["kl"]) == pytest.approx(expected_kl, rel=1e-5)
    assert float(stats["entropy"]) == pytest.approx(ent, rel=1e-5)
    assert num(with_kl) == pytest.approx(num(plain) + 0.3 * expected_kl - 0.01 * ent, rel=1e-5)


def test_appo_loss_without_vtrace_is_ppo_on_the_batch_s_advantages() -> None:
    """The ratio and the KL against the behaviour policy: pi / mu = [1.8, 0.7]; advantages
    [1, -2]: row 0 clipped to 1.2, row 1 at 0.7 < 0.8 with a negative advantage clipped to 0.8
    (the pessimistic term: -1.6 < -1.4)."""
    module = FixedOutputs(APPO_NEW, APPO_ACTIONS, IMPALA_VALUES)
    target = FixedOutputs(APPO_OLD, APPO_ACTIONS, [0.0, 0.0])
    batch = _batch(APPO_ACTIONS, [0.5, 0.5], [1.0, 2.0], [0, 0], [0.0, 2.0])
    batch[SB.ADVANTAGES] = torch.tensor([1.0, -2.0])
    batch[SB.VALUE_TARGETS] = torch.tensor([1.5, 0.0])
    loss, stats = appo_loss(
        module,
        batch,
        target_module=target,
        layout=_one_lane(),
        gamma=GAMMA,
        clip_param=0.2,
        vf_loss_coeff=0.5,
        entropy_coeff=0.0,
        use_kl_loss=True,
        kl_coeff=0.3,
        vtrace=False,
    )
    policy = -(1.0 * 1.2 + -2.0 * 0.8) / 2
    vf = 0.5 * ((0.5 - 1.5) ** 2 + 1.0**2) / 2
    expected_kl = (kl(0.5, 0.9) + kl(0.5, 0.35)) / 2
    assert float(stats["policy_loss"]) == pytest.approx(policy, rel=1e-5)
    assert float(stats["kl"]) == pytest.approx(expected_kl, rel=1e-5)
    assert num(loss) == pytest.approx(policy + 0.5 * vf + 0.3 * expected_kl, rel=1e-5)
    assert "mean_IS" not in stats
