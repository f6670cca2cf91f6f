"""The losses of PPO, PG and A2C, and advantage estimation, against arithmetic done by hand.

Each loss runs on a stub module whose ``forward_train`` returns fixed logits (and values) as
parameters, so that both the loss values and the gradients they give can be written out with
``math`` for a batch of a few rows with Discrete(2) actions.
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

from runtime.algorithms.a2c import a2c_loss
from runtime.algorithms.pg import pg_loss
from runtime.algorithms.ppo import ppo_loss
from runtime.core.distributions import Categorical
from runtime.core.module import RLModule
from runtime.core.postprocessing import add_advantages, compute_advantages
from runtime.core.sample_batch import SampleBatch as SB

Tensors = dict[str, torch.Tensor]

# ---------------------------------------------------------------------------- by-hand helpers


def log_softmax(logits: list[float]) -> list[float]:
    """log p_j = x_j - log(sum_k exp(x_k))."""
    norm = math.log(sum(math.exp(x) for x in logits))
    return [x - norm for x in logits]


def probs(logits: list[float]) -> list[float]:
    return [math.exp(lp) for lp in log_softmax(logits)]


def entropy(logits: list[float]) -> float:
    """H = -sum_j p_j log p_j."""
    return -sum(p * lp for p, lp in zip(probs(logits), log_softmax(logits), strict=True))


def kl(old_logits: list[float], new_logits: list[float]) -> float:
    """KL(old || new) = sum_j p_old_j (log p_old_j - log p_new_j)."""
    old_lp, new_lp = log_softmax(old_logits), log_softmax(new_logits)
    return sum(math.exp(o) * (o - n) for o, n in zip(old_lp, new_lp, strict=True))


def mean(values: list[float]) -> float:
    return sum(values) / len(values)


def num(tensor: torch.Tensor) -> float:
    """A 0-d tensor of the loss as a float."""
    return float(tensor.detach())


# ---------------------------------------------------------------------------- stub module


class FixedOutputs(RLModule):
    """``forward_train`` returns the given logits (and values) whatever the observations: both
    are parameters, so the gradient of a loss with respect to them can be checked."""

    dist_class = Categorical

    def __init__(self, logits: list[list[float]], values: list[float] | None = None) -> None:
        super().__init__(
            gym.spaces.Box(-1.0, 1.0, (1,), np.float32), gym.spaces.Discrete(2), {"model": {}}
        )
        self.logits = nn.Parameter(torch.tensor(logits, dtype=torch.float32))
        self.values: nn.Parameter | None = None
        if values is not None:
            self.values = nn.Parameter(torch.tensor(values, dtype=torch.float32))
        self.has_critic = values is not None

    def forward_train(self, batch: Tensors) -> Tensors:
        out: Tensors = {SB.ACTION_DIST_INPUTS: self.logits}
        if self.values is not None:
            out[SB.VF_PREDS] = self.values
        return out


def _floats(values: list[float]) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.float32)


# ---------------------------------------------------------------------------- PPO

# Four rows, Discrete(2), clip_param 0.2. The sampling ("old") policy and the current ("new")
# one, the action taken and its advantage:
PPO_CLIP = 0.2
PPO_OLD_LOGITS = [[0.0, 0.0], [0.0, 0.0], [0.1, 0.0], [0.0, 0.0]]
PPO_NEW_LOGITS = [[1.0, 0.0], [0.0, 1.0], [0.2, 0.0], [0.0, 1.0]]
PPO_ACTIONS = [0, 0, 1, 0]
# row 0: ratio e/(e+1)/0.5 = 1.462 > 1.2 with a positive advantage: clipped to 1.2
# row 1: ratio 1/(1+e)/0.5 = 0.538 < 0.8 with a negative advantage: clipped to 0.8
# row 2: ratio 0.948, inside [0.8, 1.2]: not clipped
# row 3: ratio 0.538 < 0.8 with a positive advantage: the unclipped term is the smaller one
PPO_ADVANTAGES = [2.0, -1.0, 0.5, 1.0]
PPO_VF_PREDS = [1.0, 0.0, 2.0, -1.0]
PPO_VALUE_TARGETS = [1.5, 3.0, 2.0, 0.0]
PPO_VF_CLIP = 2.0  # squared errors 0.25, 9, 0, 1 -> 0.25, 2, 0, 1


def _ppo_batch() -> Tensors:
    old_logp = [log_softmax(o)[a] for o, a in zip(PPO_OLD_LOGITS, PPO_ACTIONS, strict=True)]
    return {
        SB.OBS: torch.zeros(4, 1),
        SB.ACTIONS: torch.tensor(PPO_ACTIONS),
        SB.ACTION_LOGP: _floats(old_logp),
        SB.ACTION_DIST_INPUTS: torch.tensor(PPO_OLD_LOGITS),
        SB.ADVANTAGES: _floats(PPO_ADVANTAGES),
        SB.VALUE_TARGETS: _floats(PPO_VALUE_TARGETS),
    }


def _ppo_ratios() -> list[float]:
    rows = zip(PPO_OLD_LOGITS, PPO_NEW_LOGITS, PPO_ACTIONS, strict=True)
    return [math.exp(log_softmax(new)[a] - log_softmax(old)[a]) for old, new, a in rows]


def _ppo_surrogates() -> list[float]:
    out = []
    for ratio, adv in zip(_ppo_ratios(), PPO_ADVANTAGES, strict=True):
        clipped = min(max(ratio, 1 - PPO_CLIP), 1 + PPO_CLIP)
        out.append(min(adv * ratio, adv * clipped))
    return out


def _ppo(
    module: FixedOutputs, *, entropy_coeff: float, kl_coeff: float, vf_loss_coeff: float = 0.5
) -> tuple[torch.Tensor, dict[str, Any]]:
    return ppo_loss(
        module,
        _ppo_batch(),
        clip_param=PPO_CLIP,
        vf_clip_param=PPO_VF_CLIP,
        vf_loss_coeff=vf_loss_coeff,
        entropy_coeff=entropy_coeff,
        kl_coeff=kl_coeff,
    )


def test_ppo_hand_ratios_are_outside_the_clip_range_where_the_rows_say() -> None:
    # A check of the fixture itself: each row exercises the case it is meant to.
    ratios = _ppo_ratios()
    assert ratios[0] == pytest.approx(math.e / (math.e + 1) / 0.5)  # 1.462
    assert ratios[0] > 1 + PPO_CLIP and PPO_ADVANTAGES[0] > 0
    assert ratios[1] == pytest.approx(1 / (1 + math.e) / 0.5)  # 0.538
    assert ratios[1] < 1 - PPO_CLIP and PPO_ADVANTAGES[1] < 0
    assert 1 - PPO_CLIP < ratios[2] < 1 + PPO_CLIP
    assert ratios[3] < 1 - PPO_CLIP and PPO_ADVANTAGES[3] > 0
    assert _ppo_surrogates()[:2] == pytest.approx([2.0 * 1.2, -1.0 * 0.8])
    assert _ppo_surrogates()[3] == pytest.approx(ratios[3])


def test_ppo_surrogate_clips_both_sides_and_reports_per_row_policy_loss() -> None:
    module = FixedOutputs(PPO_NEW_LOGITS)  # no critic
    loss, stats = _ppo(module, entropy_coeff=0.0, kl_coeff=0.0)

    surrogates = _ppo_surrogates()
    expected_rows = [-s for s in surrogates]
    # By hand: -(2*1.2), -(-1*0.8), -(0.5*0.948), -(1*0.538)
    assert expected_rows[0] == pytest.approx(-2.4)
    assert expected_rows[1] == pytest.approx(0.8)
    np.testing.assert_allclose(stats["policy_loss"].detach().numpy(), expected_rows, rtol=1e-5)
    assert num(loss) == pytest.approx(mean(expected_rows), rel=1e-5)
    assert num(stats["total_loss"]) == pytest.approx(mean(expected_rows), rel=1e-5)
    assert "kl" not in stats and "vf_loss" not in stats
    np.testing.assert_allclose(stats["action_dist_inputs"].detach().numpy(), PPO_NEW_LOGITS)


def test_ppo_clipped_rows_give_no_policy_gradient_and_the_others_give_the_hand_gradient() -> None:
    module = FixedOutputs(PPO_NEW_LOGITS)
    loss, _ = _ppo(module, entropy_coeff=0.0, kl_coeff=0.0)
    loss.backward()  # type: ignore[no-untyped-call]
    assert module.logits.grad is not None
    grad = module.logits.grad.numpy()

    # Rows 0 and 1 take the clipped (constant) term: no gradient at all.
    np.testing.assert_array_equal(grad[:2], np.zeros((2, 2)))
    # Rows 2 and 3 take adv * ratio: d/dx_j [-(adv * ratio) / N] with
    # d ratio / d x_j = ratio * (1[j == a] - p_j).
    ratios = _ppo_ratios()
    for row in (2, 3):
        p = probs(PPO_NEW_LOGITS[row])
        a = PPO_ACTIONS[row]
        expected = [
            -PPO_ADVANTAGES[row] / 4 * ratios[row] * ((1.0 if j == a else 0.0) - p[j])
            for j in range(2)
        ]
        np.testing.assert_allclose(grad[row], expected, rtol=1e-5)
    # Row 3 is below 1 - clip but keeps its gradient (the unclipped term is the pessimistic one).
    assert np.all(grad[3] != 0)


def test_ppo_total_loss_adds_entropy_bonus_kl_penalty_and_clipped_value_loss() -> None:
    module = FixedOutputs(PPO_NEW_LOGITS, PPO_VF_PREDS)
    entropy_coeff, kl_coeff, vf_loss_coeff = 0.01, 0.3, 0.5
    loss, stats = _ppo(
        module, entropy_coeff=entropy_coeff, kl_coeff=kl_coeff, vf_loss_coeff=vf_loss_coeff
    )

    surrogates = _ppo_surrogates()
    entropies = [entropy(x) for x in PPO_NEW_LOGITS]
    kls = [kl(o, n) for o, n in zip(PPO_OLD_LOGITS, PPO_NEW_LOGITS, strict=True)]
    squared = [(v - t) ** 2 for v, t in zip(PPO_VF_PREDS, PPO_VALUE_TARGETS, strict=True)]
    assert squared == [0.25, 9.0, 0.0, 1.0]
    vf_losses = [min(s, PPO_VF_CLIP) for s in squared]  # row 1: 9 clipped to 2
    assert vf_losses == [0.25, 2.0, 0.0, 1.0]
    rows = [
        -s - entropy_coeff * h + kl_coeff * k + vf_loss_coeff * v
        for s, h, k, v in zip(surrogates, entropies, kls, vf_losses, strict=True)
    ]

    assert num(loss) == pytest.approx(mean(rows), rel=1e-5)
    assert num(stats["total_loss"]) == pytest.approx(mean(rows), rel=1e-5)
    np.testing.assert_allclose(stats["kl"].detach().numpy(), kls, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(stats["vf_loss"].detach().numpy(), vf_losses, rtol=1e-6)
    np.testing.assert_allclose(stats["vf_preds"].detach().numpy(), PPO_VF_PREDS)
    np.testing.assert_allclose(stats["value_targets"].detach().numpy(), PPO_VALUE_TARGETS)
    # KL(old || new), not KL(new || old): the two differ on these rows.
    reverse = [kl(n, o) for o, n in zip(PPO_OLD_LOGITS, PPO_NEW_LOGITS, strict=True)]
    assert not np.allclose(kls, reverse)


def test_ppo_value_loss_clipping_stops_the_gradient_of_the_clipped_row() -> None:
    module = FixedOutputs(PPO_NEW_LOGITS, PPO_VF_PREDS)
    loss, _ = _ppo(module, entropy_coeff=0.0, kl_coeff=0.0, vf_loss_coeff=0.5)
    loss.backward()  # type: ignore[no-untyped-call]
    assert module.values is not None and module.values.grad is not None
    # d/dv [0.5 * (v - t)^2 / N] = 0.5 * 2 (v - t) / 4, zero where the square was clipped.
    expected = [0.5 * 2 * (v - t) / 4 for v, t in zip(PPO_VF_PREDS, PPO_VALUE_TARGETS, strict=True)]
    expected[1] = 0.0  # 9 > vf_clip_param=2: clipped
    np.testing.assert_allclose(module.values.grad.numpy(), expected, rtol=1e-6)


def test_ppo_kl_term_is_absent_at_zero_kl_coeff_and_entropy_coeff_scales_the_bonus() -> None:
    module = FixedOutputs(PPO_NEW_LOGITS, PPO_VF_PREDS)
    base, base_stats = _ppo(module, entropy_coeff=0.0, kl_coeff=0.0)
    with_kl, kl_stats = _ppo(module, entropy_coeff=0.0, kl_coeff=0.3)
    with_entropy, _ = _ppo(module, entropy_coeff=0.01, kl_coeff=0.0)

    kls = [kl(o, n) for o, n in zip(PPO_OLD_LOGITS, PPO_NEW_LOGITS, strict=True)]
    entropies = [entropy(x) for x in PPO_NEW_LOGITS]
    assert "kl" not in base_stats and "kl" in kl_stats
    assert num(with_kl) - num(base) == pytest.approx(0.3 * mean(kls), rel=1e-4)
    assert num(base) - num(with_entropy) == pytest.approx(0.01 * mean(entropies), rel=1e-4)
    # Without the KL and entropy terms: the policy and the clipped value terms alone.
    vf_losses = [0.25, 2.0, 0.0, 1.0]
    rows = [-s + 0.5 * v for s, v in zip(_ppo_surrogates(), vf_losses, strict=True)]
    assert num(base) == pytest.approx(mean(rows), rel=1e-5)


# ---------------------------------------------------------------------------- PG


def test_pg_loss_is_minus_mean_logp_times_advantage_with_the_reinforce_gradient() -> None:
    logits = [[1.0, 0.0], [0.0, 2.0], [0.3, -0.3]]
    actions = [0, 0, 1]
    advantages = [1.5, -2.0, 0.5]
    module = FixedOutputs(logits)
    batch = {
        SB.OBS: torch.zeros(3, 1),
        SB.ACTIONS: torch.tensor(actions),
        SB.ADVANTAGES: _floats(advantages),
    }
    loss, stats = pg_loss(module, batch)

    logps = [log_softmax(x)[a] for x, a in zip(logits, actions, strict=True)]
    # log p: log(e/(e+1)) = -0.3133, log(1/(1+e^2)) = -2.1269, log(1/(1+e^0.6)) = -1.0375
    assert logps[0] == pytest.approx(-0.31326, abs=1e-5)
    expected = -mean([lp * adv for lp, adv in zip(logps, advantages, strict=True)])
    assert num(loss) == pytest.approx(expected, rel=1e-6)
    assert num(stats["policy_loss"]) == pytest.approx(expected, rel=1e-6)
    assert set(stats) == {"policy_loss"}

    loss.backward()  # type: ignore[no-untyped-call]
    assert module.logits.grad is not None
    for row, (x, a, adv) in enumerate(zip(logits, actions, advantages, strict=True)):
        p = probs(x)
        grad = [-adv / 3 * ((1.0 if j == a else 0.0) - p[j]) for j in range(2)]
        np.testing.assert_allclose(module.logits.grad[row].numpy(), grad, rtol=1e-5)


# ---------------------------------------------------------------------------- A2C

A2C_LOGITS = [[1.0, 0.0], [0.0, 2.0], [0.3, -0.3]]
A2C_ACTIONS = [0, 0, 1]
A2C_ADVANTAGES = [1.0, -2.0, 0.5]
A2C_VF_PREDS = [0.5, 1.0, -1.0]
A2C_VALUE_TARGETS = [1.0, 0.0, 1.0]


def _a2c_batch() -> Tensors:
    return {
        SB.OBS: torch.zeros(3, 1),
        SB.ACTIONS: torch.tensor(A2C_ACTIONS),
        SB.ADVANTAGES: _floats(A2C_ADVANTAGES),
        SB.VALUE_TARGETS: _floats(A2C_VALUE_TARGETS),
    }


def test_a2c_loss_adds_entropy_bonus_and_half_mse_value_loss_weighted_by_vf_loss_coeff() -> None:
    module = FixedOutputs(A2C_LOGITS, A2C_VF_PREDS)
    loss, stats = a2c_loss(module, _a2c_batch(), entropy_coeff=0.1, vf_loss_coeff=0.25)

    logps = [log_softmax(x)[a] for x, a in zip(A2C_LOGITS, A2C_ACTIONS, strict=True)]
    policy_loss = -mean([lp * adv for lp, adv in zip(logps, A2C_ADVANTAGES, strict=True)])
    mean_entropy = mean([entropy(x) for x in A2C_LOGITS])
    # 0.5 * mean((0.5-1)^2, (1-0)^2, (-1-1)^2) = 0.5 * (0.25 + 1 + 4) / 3 = 0.875
    vf_loss = 0.5 * mean([0.25, 1.0, 4.0])
    assert vf_loss == pytest.approx(0.875)
    expected = policy_loss - 0.1 * mean_entropy + 0.25 * vf_loss

    assert num(loss) == pytest.approx(expected, rel=1e-6)
    assert num(stats["policy_loss"]) == pytest.approx(policy_loss, rel=1e-6)
    assert num(stats["entropy"]) == pytest.approx(mean_entropy, rel=1e-6)
    assert num(stats["vf_loss"]) == pytest.approx(0.875, rel=1e-6)

    loss.backward()  # type: ignore[no-untyped-call]
    assert module.values is not None and module.values.grad is not None
    # d/dv [0.25 * 0.5 * mean((v - t)^2)] = 0.25 * (v - t) / 3
    value_grad = [0.25 * (v - t) / 3 for v, t in zip(A2C_VF_PREDS, A2C_VALUE_TARGETS, strict=True)]
    np.testing.assert_allclose(module.values.grad.numpy(), value_grad, rtol=1e-6)


def test_a2c_entropy_coeff_lowers_the_loss_by_the_mean_entropy_and_no_critic_no_vf_loss() -> None:
    module = FixedOutputs(A2C_LOGITS)  # no critic
    plain, plain_stats = a2c_loss(module, _a2c_batch(), entropy_coeff=0.0, vf_loss_coeff=0.25)
    bonus, _ = a2c_loss(module, _a2c_batch(), entropy_coeff=0.1, vf_loss_coeff=0.25)

    logps = [log_softmax(x)[a] for x, a in zip(A2C_LOGITS, A2C_ACTIONS, strict=True)]
    policy_loss = -mean([lp * adv for lp, adv in zip(logps, A2C_ADVANTAGES, strict=True)])
    mean_entropy = mean([entropy(x) for x in A2C_LOGITS])
    assert "vf_loss" not in plain_stats
    assert num(plain) == pytest.approx(policy_loss, rel=1e-6)
    assert num(bonus) == pytest.approx(policy_loss - 0.1 * mean_entropy, rel=1e-6)


# ---------------------------------------------------------------------------- advantages

# A (T=3, N=2) fragment. Column 0: the episode terminates at t=1, a new one runs to the
# fragment's end at t=2 (bootstrap V=2). Column 1: one episode, cut by the fragment's end
# (bootstrap V=5). Bootstrap values on rows that are no segment end must be ignored (99).
REWARDS = np.array([[1.0, 0.0], [2.0, 0.0], [3.0, 1.0]], np.float32)
VALUES = np.array([[0.5, 1.0], [1.0, 2.0], [1.5, 3.0]], np.float32)
BOOTSTRAP = np.array([[99.0, 99.0], [0.0, 99.0], [2.0, 5.0]], np.float32)
TERMINATEDS = np.array([[False, False], [True, False], [False, False]])
SEGMENT_ENDS = np.array([[False, False], [True, False], [True, True]])
GAMMA, LAMBDA = 0.9, 0.5


def _gae_by_hand() -> tuple[list[list[float]], list[list[float]]]:
    g, gl = GAMMA, GAMMA * LAMBDA
    # column 0: deltas r + g * V(next) - V, V(next) = 0 after termination
    d00 = 1 + g * 1.0 - 0.5  # 1.4
    d10 = 2 + g * 0.0 - 1.0  # 1.0 (terminated)
    d20 = 3 + g * 2.0 - 1.5  # 3.3 (bootstrap 2)
    a20, a10 = d20, d10
    a00 = d00 + gl * a10  # 1.85: does not reach past the termination
    # column 1
    d01 = 0 + g * 2.0 - 1.0  # 0.8
    d11 = 0 + g * 3.0 - 2.0  # 0.7
    d21 = 1 + g * 5.0 - 3.0  # 2.5 (bootstrap 5)
    a21 = d21
    a11 = d11 + gl * a21  # 1.825
    a01 = d01 + gl * a11  # 1.62125
    advantages = [[a00, a01], [a10, a11], [a20, a21]]
    values = VALUES.tolist()
    targets = [
        [a + v for a, v in zip(r, vr, strict=True)]
        for r, vr in zip(advantages, values, strict=True)
    ]
    return advantages, targets


def test_compute_advantages_gae_and_discounted_returns_match_hand_computation() -> None:
    advantages, targets = _gae_by_hand()
    assert advantages[0] == pytest.approx([1.85, 1.62125])
    adv, tgt = compute_advantages(
        REWARDS, VALUES, BOOTSTRAP, SEGMENT_ENDS, GAMMA, LAMBDA, use_gae=True, use_critic=True
    )
    np.testing.assert_allclose(adv, advantages, rtol=1e-6)
    np.testing.assert_allclose(tgt, targets, rtol=1e-6)
    assert adv.dtype == np.float32 and tgt.dtype == np.float32

    # Discounted returns, bootstrapped at segment ends; advantages = returns - values.
    g = GAMMA
    r20, r21 = 3 + g * 2.0, 1 + g * 5.0  # 4.8, 5.5
    r10, r11 = 2 + g * 0.0, 0 + g * r21  # 2.0 (terminated), 4.95
    r00, r01 = 1 + g * r10, 0 + g * r11  # 2.8, 4.455
    returns = [[r00, r01], [r10, r11], [r20, r21]]
    adv, tgt = compute_advantages(
        REWARDS, VALUES, BOOTSTRAP, SEGMENT_ENDS, GAMMA, use_gae=False, use_critic=True
    )
    np.testing.assert_allclose(tgt, returns, rtol=1e-6)
    np.testing.assert_allclose(adv, np.array(returns) - VALUES, rtol=1e-6)


class _PolicyStub:
    """What ``add_advantages`` reads of a policy: its config and whether it has a critic."""

    def __init__(self, has_critic: bool, use_gae: bool) -> None:
        self.has_critic = has_critic
        self.config = {"gamma": GAMMA, "lambda": LAMBDA, "use_gae": use_gae}


def _fragment(with_values: bool) -> dict[str, npt.NDArray[Any]]:
    columns: dict[str, npt.NDArray[Any]] = {
        SB.REWARDS: REWARDS.copy(),
        SB.BOOTSTRAP_VALUES: BOOTSTRAP.copy(),
        SB.TERMINATEDS: TERMINATEDS.copy(),
        # The sampler marks truncations and fragment ends; terminations come from TERMINATEDS.
        SB.SEGMENT_ENDS: np.array([[False, False], [False, False], [True, True]]),
    }
    if with_values:
        columns[SB.VF_PREDS] = VALUES.copy()
    return columns


def test_add_advantages_uses_gae_with_a_critic_and_plain_returns_without() -> None:
    columns = _fragment(with_values=True)
    add_advantages(columns, _PolicyStub(has_critic=True, use_gae=True))
    advantages, targets = _gae_by_hand()
    np.testing.assert_allclose(columns[SB.ADVANTAGES], advantages, rtol=1e-6)
    np.testing.assert_allclose(columns[SB.VALUE_TARGETS], targets, rtol=1e-6)

    # No critic (PG): use_gae is ignored, values and bootstrap values count as 0, and the
    # advantages are the discounted returns.
    columns = _fragment(with_values=False)
    add_advantages(columns, _PolicyStub(has_critic=False, use_gae=True))
    g = GAMMA
    returns = [[1 + g * 2.0, 0 + g * (0 + g * 1.0)], [2.0, 0 + g * 1.0], [3.0, 1.0]]
    np.testing.assert_allclose(columns[SB.ADVANTAGES], returns, rtol=1e-6)
    np.testing.assert_allclose(columns[SB.VALUE_TARGETS], returns, rtol=1e-6)
