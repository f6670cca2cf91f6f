"""DQN's parts against hand-computed values: n-step returns on a fragment, the TD loss (double
Q, Huber and squared error, importance weights), dueling heads, and the refusal of
non-Discrete action spaces."""

from __future__ import annotations

import math
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch

from rlconf import ConfigError
from rlconf.algorithms.dqn import DQNConfig
from runtime.algorithms.dqn import QModule, dqn_loss
from runtime.core.postprocessing import add_n_step_returns
from runtime.core.sample_batch import SampleBatch as SB


class _Policy:
    def __init__(self, **training: Any) -> None:
        self.config = DQNConfig().training(**training).freeze()


def test_n_step_returns_sum_rewards_within_the_episode_and_discount_the_bootstrap() -> None:
    # One sub-env, 4 steps: the episode terminates after step 1, a new one runs to the end.
    rewards = np.array([[1.0], [2.0], [4.0], [8.0]], np.float32)
    terminateds = np.array([[False], [True], [False], [False]])
    ends = np.array([[False], [True], [False], [True]])  # the fragment ends at step 3
    new_obs = np.arange(4, dtype=np.float32).reshape(4, 1, 1) + 10
    columns = {
        SB.REWARDS: rewards,
        SB.TERMINATEDS: terminateds,
        SB.SEGMENT_ENDS: ends,
        SB.NEXT_OBS: new_obs,
    }
    add_n_step_returns(columns, _Policy(n_step=3, gamma=0.5))
    np.testing.assert_allclose(columns[SB.REWARDS][:, 0], [1 + 0.5 * 2, 2, 4 + 0.5 * 8, 8])
    np.testing.assert_allclose(columns["n_step_gamma"][:, 0], [0.25, 0.5, 0.25, 0.5])
    np.testing.assert_array_equal(columns[SB.TERMINATEDS][:, 0], [True, True, False, False])
    np.testing.assert_array_equal(columns[SB.NEXT_OBS][:, 0, 0], [11, 11, 13, 13])


def test_one_step_returns_leave_the_rows_as_they_are() -> None:
    rewards = np.array([[1.0, 3.0], [2.0, 5.0]], np.float32)
    columns = {
        SB.REWARDS: rewards.copy(),
        SB.TERMINATEDS: np.zeros((2, 2), bool),
        SB.SEGMENT_ENDS: np.array([[False, False], [True, True]]),
        SB.NEXT_OBS: np.zeros((2, 2, 1), np.float32),
    }
    add_n_step_returns(columns, _Policy(n_step=1, gamma=0.9))
    np.testing.assert_allclose(columns[SB.REWARDS], rewards)
    np.testing.assert_allclose(columns["n_step_gamma"], np.full((2, 2), 0.9))


class _FixedQ(QModule):
    """Q-values looked up from a table by the observation's first entry."""

    def __init__(self, table: list[list[float]]) -> None:
        config = DQNConfig().training(model={"fcnet_hiddens": [4]}).freeze()
        super().__init__(gym.spaces.Box(-9, 9, (1,)), gym.spaces.Discrete(2), config)
        self.table = torch.tensor(table)

    def q_values(self, obs: torch.Tensor) -> torch.Tensor:
        return self.table[obs[:, 0].long()]


def _batch(weights: list[float] | None = None) -> dict[str, torch.Tensor]:
    batch = {
        SB.OBS: torch.tensor([[0.0], [1.0]]),
        SB.ACTIONS: torch.tensor([1, 0]),
        SB.REWARDS: torch.tensor([1.0, 0.5]),
        SB.NEXT_OBS: torch.tensor([[2.0], [3.0]]),
        SB.TERMINATEDS: torch.tensor([False, True]),
        "n_step_gamma": torch.tensor([0.9, 0.9]),
    }
    if weights is not None:
        batch["weights"] = torch.tensor(weights)
    return batch


ONLINE = [[0.0, 2.0], [3.0, 1.0], [5.0, 4.0], [0.0, 0.0]]
TARGET = [[0.0, 0.0], [0.0, 0.0], [6.0, 7.0], [9.0, 9.0]]


def test_double_q_values_the_online_choice_with_the_target_network() -> None:
    online, target = _FixedQ(ONLINE), _FixedQ(TARGET)
    loss, stats = dqn_loss(online, target, _batch(), double_q=True, loss_fn="mse")
    # Row 0: Q=2, online argmax at obs 2 is action 0, target values it 6: 1 + 0.9*6 = 6.4.
    # Row 1: Q=3, terminated: target 0.5.
    td = np.array([2 - 6.4, 3 - 0.5])
    assert float(loss) == pytest.approx(float(np.mean(0.5 * td**2)))
    np.testing.assert_allclose(stats["td_error"].numpy(), td, rtol=1e-6)
    plain, _ = dqn_loss(online, target, _batch(), double_q=False, loss_fn="mse")
    # Without double Q the target network's own max (7) is used: 1 + 0.9*7 = 7.3.
    assert float(plain) == pytest.approx(float(np.mean(0.5 * np.array([2 - 7.3, 2.5]) ** 2)))


def test_huber_loss_and_importance_weights() -> None:
    online, target = _FixedQ(ONLINE), _FixedQ(TARGET)
    loss, _ = dqn_loss(online, target, _batch([0.5, 2.0]), double_q=True, loss_fn="huber")

    def huber(x: float) -> float:
        return 0.5 * x * x if abs(x) <= 1 else abs(x) - 0.5

    expected = (0.5 * huber(2 - 6.4) + 2.0 * huber(2.5)) / 2
    assert float(loss) == pytest.approx(expected)


def test_dueling_q_values_are_value_plus_centred_advantages() -> None:
    config = DQNConfig().training(model={"fcnet_hiddens": [4]}, hiddens=[3]).freeze()
    module = QModule(gym.spaces.Box(-1, 1, (2,)), gym.spaces.Discrete(3), config)
    obs = torch.randn(5, 2)
    features, _ = module.model({"obs": obs, "obs_flat": obs}, [], None)
    assert module.value is not None
    advantages, value = module.advantage(features), module.value(features)
    expected = value + advantages - advantages.mean(dim=1, keepdim=True)
    torch.testing.assert_close(module.q_values(obs), expected)
    assert math.isclose(float((module.q_values(obs) - value).mean().detach()), 0.0, abs_tol=1e-5)


def test_a_box_action_space_is_refused_naming_what_dqn_needs() -> None:
    config = DQNConfig().freeze()
    with pytest.raises(ConfigError, match="DQN needs a Discrete action space"):
        QModule(gym.spaces.Box(-1, 1, (2,)), gym.spaces.Box(-1, 1, (1,)), config)


def test_the_replayed_minibatch_may_be_smaller_than_a_fragment() -> None:
    config = DQNConfig().rollouts(rollout_fragment_length=256).training(train_batch_size=64)
    assert config.validate() is config
    from rlconf import PPOConfig

    with pytest.raises(ConfigError, match=r"train_batch_size.*rollout_fragment_length"):
        PPOConfig().rollouts(rollout_fragment_length=256).training(train_batch_size=64).validate()


def test_noisy_networks_are_taken_off_and_refused_on() -> None:
    """RLlib's DQN files spell out num_atoms: 1, noisy: False (pong-dqn.yaml): accepted as the
    DQN they ask for; noisy networks are refused with the reason."""
    off = {"num_atoms": 1, "noisy": False, "v_min": -10.0, "v_max": 10.0, "sigma0": 0.5}
    config = DQNConfig.from_dict(off)
    assert {k: config[k] for k in off} == off
    with pytest.raises(ConfigError, match=r"noisy=True .*noisy networks"):
        DQNConfig().training(noisy=True)


def test_distributional_settings_that_would_not_act_are_refused() -> None:
    with pytest.raises(ConfigError, match=r"v_max.*needs num_atoms > 1"):
        DQNConfig().training(v_max=100.0).validate()
    with pytest.raises(ConfigError, match=r"v_max.*must be > v_min \(5.0\)"):
        DQNConfig().training(num_atoms=11, v_min=5.0, v_max=5.0).validate()
    with pytest.raises(ConfigError, match=r"td_error_loss_fn.*cross-entropy"):
        DQNConfig().training(num_atoms=11, td_error_loss_fn="mse").validate()
    with pytest.raises(ConfigError, match=r"num_atoms"):
        DQNConfig().training(num_atoms=0)
    assert DQNConfig().training(num_atoms=51, v_min=0.0, v_max=100.0).validate()


def test_adam_epsilon_is_the_epsilon_of_the_q_networks_adam() -> None:
    """RLlib's ``adam_epsilon`` (its Atari files set 1.5e-4): Adam's ``eps``, torch's 1e-8 by
    default; ``optimizer={"eps": ...}`` says the same, and the two set apart are refused."""
    from runtime.algorithms.dqn.learner import DQNLearner

    def eps_of(config: DQNConfig) -> float:
        frozen = config.freeze()
        module = QModule(gym.spaces.Box(-1, 1, (4,)), gym.spaces.Discrete(2), frozen)
        (group,) = DQNLearner(module, frozen).optimizers["default"].param_groups
        return float(group["eps"])

    assert DQNConfig()["adam_epsilon"] == 1e-8
    assert eps_of(DQNConfig()) == 1e-8
    assert eps_of(DQNConfig().training(adam_epsilon=1.5e-4)) == 1.5e-4
    assert eps_of(DQNConfig().training(optimizer={"eps": 1e-3})) == 1e-3
    assert eps_of(DQNConfig().training(adam_epsilon=1e-3, optimizer={"eps": 1e-3})) == 1e-3
    with pytest.raises(ConfigError, match=r"adam_epsilon=0.0001 .*optimizer=\{'eps': 0.001\}"):
        DQNConfig().training(adam_epsilon=1e-4, optimizer={"eps": 1e-3}).validate()
    with pytest.raises(ConfigError, match=r"adam_epsilon.*greater than 0"):
        DQNConfig().training(adam_epsilon=0.0)
