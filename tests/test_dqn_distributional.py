"""Distributional DQN (C51, ``num_atoms > 1``): the projection of the n-step target onto the
atoms, the cross-entropy loss and its gradient, Q as the expected return, dueling logits, and
training end to end."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

from rlconf.algorithms.dqn import DQNConfig
from runtime.algorithms.dqn import QModule, dqn_loss
from runtime.algorithms.dqn.loss import projected_target
from runtime.core.sample_batch import SampleBatch as SB


def _module(atoms: int = 11, dueling: bool = False) -> QModule:
    config = (
        DQNConfig()
        .training(
            model={"fcnet_hiddens": [8]},
            hiddens=[4],
            dueling=dueling,
            num_atoms=atoms,
            v_min=0.0,
            v_max=10.0,
        )
        .freeze()
    )
    return QModule(gym.spaces.Box(-1, 1, (3,)), gym.spaces.Discrete(2), config)


def test_the_projection_keeps_the_mass_and_the_mean_inside_the_support() -> None:
    support = torch.linspace(0.0, 10.0, 11)
    probs = torch.softmax(torch.randn(64, 11), dim=-1)
    rewards = torch.rand(64) * 2
    discounts = torch.full((64,), 0.7)
    projected = projected_target(support, probs, rewards, discounts)
    torch.testing.assert_close(projected.sum(dim=-1), torch.ones(64))
    # Shifted atoms stay within [0, 10] (r <= 2, 0.7 * 10 + 2 < 10): the projection keeps
    # the mean exactly, r + discount * E[Z].
    expected_mean = rewards + discounts * (probs * support).sum(dim=-1)
    torch.testing.assert_close((projected * support).sum(dim=-1), expected_mean)


def test_the_projection_splits_between_neighbours_and_clips_at_the_ends() -> None:
    support = torch.linspace(0.0, 10.0, 11)
    point = torch.zeros(3, 11)
    point[:, 2] = 1.0  # all mass at 2
    projected = projected_target(
        support, point, torch.tensor([0.25, 20.0, 1.0]), torch.tensor([1.0, 1.0, 0.0])
    )
    # 2 + 0.25 lies a quarter of the way from 2 to 3.
    np.testing.assert_allclose(projected[0, 2:4].numpy(), [0.75, 0.25], rtol=1e-6)
    # 22 is past v_max: all of it at 10.
    assert projected[1, 10] == pytest.approx(1.0)
    # Terminated (discount 0): the reward itself, exactly on an atom.
    assert projected[2, 1] == pytest.approx(1.0)


def test_q_is_the_expected_return_and_dueling_centres_the_logits() -> None:
    module = _module(dueling=True)
    obs = torch.randn(5, 3)
    logits = module.atom_logits(obs)
    assert logits.shape == (5, 2, 11)
    features, _ = module.model({"obs": obs, "obs_flat": obs}, [], None)
    assert module.value is not None
    advantages = module.advantage(features).view(5, 2, 11)
    expected = module.value(features).unsqueeze(1) + advantages - advantages.mean(1, keepdim=True)
    torch.testing.assert_close(logits, expected)
    q = (torch.softmax(logits, -1) * torch.linspace(0, 10, 11)).sum(-1)
    torch.testing.assert_close(module.q_values(obs), q)
    assert module.forward_train({SB.OBS: obs})[SB.ACTION_DIST_INPUTS].shape == (5, 2)


def test_the_loss_is_the_cross_entropy_with_the_projected_target() -> None:
    torch.manual_seed(0)
    online, target = _module(), _module()
    batch = {
        SB.OBS: torch.randn(4, 3),
        SB.ACTIONS: torch.tensor([0, 1, 1, 0]),
        SB.REWARDS: torch.tensor([1.0, 0.5, 2.0, 0.0]),
        SB.NEXT_OBS: torch.randn(4, 3),
        SB.TERMINATEDS: torch.tensor([False, True, False, False]),
        "n_step_gamma": torch.full((4,), 0.9),
        "weights": torch.tensor([1.0, 2.0, 0.5, 1.0]),
    }
    loss, stats = dqn_loss(online, target, batch, double_q=False, loss_fn="huber")
    with torch.no_grad():
        next_probs = torch.softmax(target.atom_logits(batch[SB.NEXT_OBS]), -1)
        best = (next_probs * target.support).sum(-1).argmax(1)
        alive = torch.tensor([1.0, 0.0, 1.0, 1.0])
        projected = projected_target(
            target.support, next_probs[torch.arange(4), best], batch[SB.REWARDS], 0.9 * alive
        )
        log_p = torch.log_softmax(online.atom_logits(batch[SB.OBS]), -1)
        taken = log_p[torch.arange(4), batch[SB.ACTIONS]]
        cross_entropy = -(projected * taken).sum(-1)
    torch.testing.assert_close(stats["td_error"], cross_entropy)
    torch.testing.assert_close(loss.detach(), (cross_entropy * batch["weights"]).mean())
    # A terminated row's target is its reward, all on the atom at 0.5's neighbours (0 and 1).
    assert float(projected[1, 0]) == pytest.approx(0.5)
    # Gradient steps on one fixed target pull the prediction toward it.
    optimizer = torch.optim.Adam(online.parameters(), lr=1e-2)
    for _ in range(200):
        optimizer.zero_grad()
        step_loss, _ = dqn_loss(online, target, batch, double_q=False, loss_fn="huber")
        torch.autograd.backward(step_loss)
        optimizer.step()
    assert float(step_loss.detach()) < float(loss.detach())


@pytest.mark.slow
def test_distributional_dqn_trains_and_its_q_values_reach_the_returns() -> None:
    """On CartPole, a few thousand steps move Q (the atoms' expected return) well above its
    start and the greedy policy beyond a random one (about 22)."""
    config = (
        DQNConfig()
        .environment("CartPole-v1")
        .rollouts(num_workers=0, num_envs_per_worker=8, rollout_fragment_length=32)
        .training(
            num_atoms=51,
            v_min=0.0,
            v_max=100.0,
            lr=2.3e-3,
            train_batch_size=64,
            training_intensity=32.0,
            num_steps_sampled_before_learning_starts=1000,
            target_network_update_freq=256,
            n_step=3,
            hiddens=[],
            dueling=False,
            double_q=False,
            model={"fcnet_hiddens": [64, 64]},
        )
        .exploration(
            exploration_config={
                "type": "EpsilonGreedy",
                "initial_epsilon": 1.0,
                "final_epsilon": 0.04,
                "epsilon_timesteps": 4000,
            }
        )
        .reporting(min_sample_timesteps_per_reporting=2000)
        .evaluation(
            evaluation_interval=1,
            evaluation_duration=10,
            evaluation_config={"explore": False},
        )
        .debugging(seed=0)
    )
    algo = config.build()
    try:
        for _ in range(3):
            result = algo.train()
    finally:
        algo.stop()
    stats = result["info"]["learner"]["default_policy"]["learner_stats"]
    assert stats["mean_q"] > 20.0
    assert result["evaluation"]["episode_reward_mean"] > 100.0
