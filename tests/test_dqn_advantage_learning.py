"""Advantage learning (``advantage_learning_alpha``): each target is lowered by alpha times the
taken action's gap below the best action, valued by the target network, for the scalar and the
distributional loss; the greedy action's value stays, the others fall behind by 1 / (1 - alpha);
the key is bounded to [0, 1) and reaches the learner."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import pytest
import torch

from rlconf import ConfigError
from rlconf.algorithms.dqn import DQNConfig
from runtime.algorithms.dqn import QModule, dqn_loss
from runtime.algorithms.dqn.learner import DQNLearner
from runtime.algorithms.dqn.loss import projected_target
from runtime.core.sample_batch import SampleBatch as SB


def _config(**training: Any) -> DQNConfig:
    return DQNConfig().training(
        model={"fcnet_hiddens": [8]}, hiddens=[], dueling=False, double_q=False, **training
    )


def _module(config: DQNConfig) -> QModule:
    return QModule(gym.spaces.Box(-1, 1, (3,)), gym.spaces.Discrete(3), config.freeze())


def _batch() -> dict[str, torch.Tensor]:
    torch.manual_seed(1)
    return {
        SB.OBS: torch.randn(6, 3),
        SB.ACTIONS: torch.tensor([0, 1, 2, 0, 1, 2]),
        SB.REWARDS: torch.tensor([1.0, 0.5, 2.0, 0.0, 1.0, 1.5]),
        SB.NEXT_OBS: torch.randn(6, 3),
        SB.TERMINATEDS: torch.tensor([False, True, False, False, False, True]),
        "n_step_gamma": torch.full((6,), 0.9),
    }


def _gap(q: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
    return q.max(dim=1).values - q[torch.arange(len(actions)), actions]


def test_the_scalar_target_is_lowered_by_alpha_times_the_target_networks_gap() -> None:
    online, target = _module(_config()), _module(_config())
    batch = _batch()
    _, plain = dqn_loss(online, target, batch, double_q=False, loss_fn="mse")
    _, shifted = dqn_loss(online, target, batch, double_q=False, loss_fn="mse", advantage_alpha=0.6)
    with torch.no_grad():
        gap = _gap(target.q_values(batch[SB.OBS]), batch[SB.ACTIONS])
    assert bool((gap >= 0).all()) and bool((gap > 0).any())
    # td_error = Q(s, a) - target: a target lower by 0.6 x gap, an error higher by it.
    torch.testing.assert_close(shifted["td_error"] - plain["td_error"], 0.6 * gap)


def test_the_distributional_target_shifts_by_alpha_times_the_gap_before_projection() -> None:
    config = _config(num_atoms=11, v_min=0.0, v_max=10.0)
    online, target = _module(config), _module(config)
    # The heads start at uniform atoms (every cross-entropy log 11): spread them.
    with torch.no_grad():
        for parameter in (*online.parameters(), *target.parameters()):
            parameter.normal_()
    batch = _batch()
    _, stats = dqn_loss(online, target, batch, double_q=False, loss_fn="huber", advantage_alpha=0.5)
    with torch.no_grad():
        gap = _gap(target.q_values(batch[SB.OBS]), batch[SB.ACTIONS])
        next_probs = torch.softmax(target.atom_logits(batch[SB.NEXT_OBS]), -1)
        best = (next_probs * target.support).sum(-1).argmax(1)
        alive = 1.0 - batch[SB.TERMINATEDS].float()
        projected = projected_target(
            target.support,
            next_probs[torch.arange(6), best],
            batch[SB.REWARDS] - 0.5 * gap,
            0.9 * alive,
        )
        log_p = torch.log_softmax(online.atom_logits(batch[SB.OBS]), -1)
        cross_entropy = -(projected * log_p[torch.arange(6), batch[SB.ACTIONS]]).sum(-1)
    torch.testing.assert_close(stats["td_error"], cross_entropy)
    _, plain = dqn_loss(online, target, batch, double_q=False, loss_fn="huber")
    assert not torch.allclose(plain["td_error"], stats["td_error"])


@pytest.mark.parametrize(("alpha", "other"), [(0.0, 0.5), (0.5, 0.0), (0.8, -1.5)])
def test_the_greedy_value_stays_and_the_gap_grows_by_one_over_one_minus_alpha(
    alpha: float, other: float
) -> None:
    """A one-step bandit (rewards 1 and 0.5, then the episode ends), learnt by the learner with
    its target copied every 20 steps: the best action's value stays 1, the other's is the
    fixed point of Q = 0.5 - alpha (1 - Q), i.e. 1 - 0.5 / (1 - alpha)."""
    config = _config(td_error_loss_fn="mse", advantage_learning_alpha=alpha)
    torch.manual_seed(0)
    learner = DQNLearner(_module(config), config.freeze())
    assert learner.advantage_alpha == alpha
    obs = torch.ones(2, 3)
    batch = {
        SB.OBS: obs,
        SB.ACTIONS: torch.tensor([0, 1]),
        SB.REWARDS: torch.tensor([1.0, 0.5]),
        SB.NEXT_OBS: obs,
        SB.TERMINATEDS: torch.tensor([True, True]),
        "n_step_gamma": torch.ones(2),
    }
    module, target = learner.module, learner.target
    optimizer = torch.optim.Adam(module.parameters(), lr=0.05)
    for step in range(600):
        if step % 20 == 0:
            target.load_state_dict(module.state_dict())
        optimizer.zero_grad()
        loss, _ = learner.compute_loss(batch)
        torch.autograd.backward(loss)
        optimizer.step()
    assert isinstance(module, QModule)
    with torch.no_grad():
        q = module.q_values(obs[:1])[0]
    assert float(q[0]) == pytest.approx(1.0, abs=0.02)
    assert float(q[1]) == pytest.approx(other, abs=0.02)


def test_alpha_is_off_by_default_and_bounded_to_below_one() -> None:
    assert DQNConfig()["advantage_learning_alpha"] == 0.0
    assert DQNConfig().training(advantage_learning_alpha=0.5).validate()
    with pytest.raises(ConfigError, match=r"advantage_learning_alpha.*less than 1"):
        DQNConfig().training(advantage_learning_alpha=1.0)
    with pytest.raises(ConfigError, match=r"advantage_learning_alpha.*greater than or equal"):
        DQNConfig().training(advantage_learning_alpha=-0.1)
