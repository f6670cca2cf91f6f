"""Preprocessors, filters, advantages, schedules, the model catalog and the torch policy."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch

from rlconf import A2CConfig, PPOConfig
from runtime import ModelCatalog, TorchModel
from runtime.algorithms.ppo import PPO
from runtime.core.policy import TorchPolicy
from runtime.core.postprocessing import compute_advantages
from runtime.core.schedules import PiecewiseSchedule
from runtime.env.filters import MeanStdFilter, RunningStat
from runtime.env.preprocessors import get_preprocessor


def test_preprocessors_flatten_every_supported_space() -> None:
    space = gym.spaces.Dict(
        {
            "a": gym.spaces.Discrete(3),
            "b": gym.spaces.Tuple(
                [gym.spaces.Box(-1, 1, (2, 2)), gym.spaces.MultiDiscrete([2, 3])]
            ),
        }
    )
    prep = get_preprocessor(space, {})
    assert prep.shape == (3 + 4 + 5,)
    obs = {"a": 2, "b": (np.arange(4, dtype=np.float32).reshape(2, 2), np.array([1, 0]))}
    row = prep.transform(obs)
    np.testing.assert_array_equal(row[:3], [0, 0, 1])
    np.testing.assert_array_equal(row[3:7], [0, 1, 2, 3])
    np.testing.assert_array_equal(row[7:], [0, 1, 1, 0, 0])
    assert row.dtype == np.float32
    many = prep.transform_many([obs, obs])
    assert many.shape == (2, 12)


def test_unsupported_observation_space_is_named() -> None:
    with pytest.raises(ValueError, match="Text"):
        get_preprocessor(gym.spaces.Text(5), {})


def test_mean_std_filter_merges_worker_buffers_exactly() -> None:
    rng = np.random.default_rng(0)
    a, b = rng.normal(3, 2, (500, 2)), rng.normal(-1, 1, (300, 2))
    driver, worker = MeanStdFilter((2,)), MeanStdFilter((2,))
    driver(a.astype(np.float32))
    worker(b.astype(np.float32))
    driver.apply_buffer(worker.pop_buffer())
    both = np.concatenate([a, b])
    np.testing.assert_allclose(driver.stats.mean, both.mean(0), rtol=1e-5)
    np.testing.assert_allclose(driver.stats.std, both.std(0, ddof=1), rtol=1e-4)
    assert worker.pop_buffer()["stats"]["n"] == 0  # flushed
    out = driver(np.array([[3.0, -1.0]], np.float32), update=False)
    assert np.all(np.abs(out) < 2)


def test_running_stat_state_round_trips() -> None:
    stat = RunningStat((3,))
    stat.push_many(np.arange(12.0).reshape(4, 3))
    again = RunningStat.from_state((3,), stat.to_state())
    np.testing.assert_array_equal(again.mean, stat.mean)
    assert again.n == 4


def test_gae_matches_a_hand_computation_with_truncation_bootstrap() -> None:
    # One env, 3 steps: episode ends truncated at t=1 (bootstrap V=10), then one open step.
    rewards = np.array([[1.0], [1.0], [1.0]], np.float32)
    values = np.array([[0.5], [0.4], [0.3]], np.float32)
    next_values = np.array([[0.0], [10.0], [2.0]], np.float32)
    ends = np.array([[False], [True], [True]])
    adv, targets = compute_advantages(rewards, values, next_values, ends, 0.9, 0.5)
    d1 = 1 + 0.9 * 10 - 0.4
    d0 = 1 + 0.9 * 0.4 - 0.5
    d2 = 1 + 0.9 * 2 - 0.3
    np.testing.assert_allclose(adv[:, 0], [d0 + 0.45 * d1, d1, d2], rtol=1e-6)
    np.testing.assert_allclose(targets, adv + values, rtol=1e-6)


def test_discounted_returns_without_critic_ignore_values() -> None:
    rewards = np.ones((3, 1), np.float32)
    values = np.full((3, 1), 7.0, np.float32)
    ends = np.array([[False], [False], [True]])
    adv, targets = compute_advantages(
        rewards, values, np.zeros((3, 1), np.float32), ends, 0.5, use_gae=False, use_critic=False
    )
    np.testing.assert_allclose(adv[:, 0], [1.75, 1.5, 1.0])
    np.testing.assert_allclose(targets[:, 0], [1.75, 1.5, 1.0])


def test_piecewise_schedule() -> None:
    schedule = PiecewiseSchedule([[0, 1.0], [100, 0.0]])
    assert schedule.value(0) == 1.0
    assert schedule.value(50) == pytest.approx(0.5)
    assert schedule.value(1000) == 0.0


def _policy(config: Any, obs_dim: int = 4, action_space: Any = None) -> TorchPolicy:
    return PPO.policy_class(
        gym.spaces.Box(-np.inf, np.inf, (obs_dim,), np.float32),
        action_space or gym.spaces.Discrete(2),
        config.freeze(),
    )


def test_catalog_builds_the_configured_mlp() -> None:
    policy = _policy(
        PPOConfig().training(model={"fcnet_hiddens": [32, 16], "vf_share_layers": True})
    )
    linears = [m for m in policy.model.modules() if isinstance(m, torch.nn.Linear)]
    assert [(m.in_features, m.out_features) for m in linears] == [
        (4, 32),
        (32, 16),
        (16, 2),
        (16, 1),
    ]
    separate = _policy(PPOConfig().training(model={"fcnet_hiddens": [8], "vf_share_layers": False}))
    shapes = [
        (m.in_features, m.out_features)
        for m in separate.model.modules()
        if isinstance(m, torch.nn.Linear)
    ]
    assert shapes == [(4, 8), (8, 2), (4, 8), (8, 1)]


def test_free_log_std_is_a_parameter_not_an_output() -> None:
    box = gym.spaces.Box(-1, 1, (3,), np.float32)
    policy = _policy(PPOConfig().training(model={"free_log_std": True}), action_space=box)
    names = [n for n, _ in policy.model.named_parameters()]
    assert "log_std.log_std" in names
    actions, _, extra = policy.compute_actions(np.zeros((5, 4), np.float32))
    assert actions.shape == (5, 3)
    assert extra["action_dist_inputs"].shape == (5, 6)
    # The log-std half is the same for every observation.
    logstd = extra["action_dist_inputs"][:, 3:]
    np.testing.assert_array_equal(logstd, np.zeros_like(logstd))


class TinyModel(TorchModel):
    def __init__(
        self,
        obs_space: Any,
        action_space: Any,
        num_outputs: int,
        model_config: dict[str, Any],
        name: str,
        width: int = 3,
    ) -> None:
        super().__init__(obs_space, action_space, num_outputs, model_config, name)
        self.body = torch.nn.Linear(int(np.prod(obs_space.shape)), width)
        self.head = torch.nn.Linear(width, num_outputs)
        self.value = torch.nn.Linear(width, 1)
        self._h: torch.Tensor | None = None

    def forward(
        self, input_dict: dict[str, torch.Tensor], state: list[torch.Tensor], seq_lens: Any
    ) -> tuple[torch.Tensor, list[torch.Tensor]]:
        self._h = torch.relu(self.body(input_dict["obs_flat"]))
        return self.head(self._h), state

    def value_function(self) -> torch.Tensor:
        assert self._h is not None
        out: torch.Tensor = self.value(self._h).squeeze(-1)
        return out


def test_custom_model_registered_by_name_gets_its_config() -> None:
    ModelCatalog.register_custom_model("tiny", TinyModel)
    policy = _policy(
        PPOConfig().training(model={"custom_model": "tiny", "custom_model_config": {"width": 7}})
    )
    assert isinstance(policy.model, TinyModel)
    assert policy.model.body.out_features == 7
    actions, _, extra = policy.compute_actions(np.zeros((2, 4), np.float32))
    assert actions.shape == (2,) and extra["vf_preds"].shape == (2,)


def test_unregistered_custom_model_is_named() -> None:
    with pytest.raises(ValueError, match="'nope' is not registered"):
        _policy(PPOConfig().training(model={"custom_model": "nope"}))


def test_explore_false_is_deterministic_and_weights_round_trip() -> None:
    config = PPOConfig().training(model={"fcnet_hiddens": [16]})
    a, b = _policy(config.copy()), _policy(config.copy())
    obs = np.random.default_rng(0).normal(size=(64, 4)).astype(np.float32)
    greedy1, _, _ = a.compute_actions(obs, explore=False)
    greedy2, _, _ = a.compute_actions(obs, explore=False)
    np.testing.assert_array_equal(greedy1, greedy2)
    b.set_weights(a.get_weights())
    np.testing.assert_array_equal(b.compute_actions(obs, explore=False)[0], greedy1)
    action, state, extra = a.compute_single_action(obs[0], explore=False)
    assert action == greedy1[0] and state == [] and "action_logp" in extra


def test_lr_schedule_moves_the_optimizer_lr() -> None:
    from runtime.algorithms.a2c import A2C

    config = A2CConfig().training(lr_schedule=[[0, 0.1], [1000, 0.0]]).freeze()
    policy = A2C.policy_class(gym.spaces.Box(-1, 1, (4,)), gym.spaces.Discrete(2), config)
    assert policy.cur_lr == pytest.approx(0.1)
    policy.on_global_var_update({"timestep": 500})
    assert policy.cur_lr == pytest.approx(0.05)
    assert policy.optimizer.param_groups[0]["lr"] == pytest.approx(0.05)


def test_the_models_tanh_matches_torch_with_and_without_gradients() -> None:
    from runtime.core.tanh import Tanh

    layer = Tanh()
    x = torch.randn(64, 32)
    with torch.inference_mode():
        assert torch.allclose(layer(x), torch.tanh(x), atol=1e-6)
        assert torch.allclose(layer(x.t()), torch.tanh(x.t()), atol=1e-6)
    leaf = x.clone().requires_grad_(True)
    layer(leaf).sum().backward()
    assert leaf.grad is not None
    assert torch.allclose(leaf.grad, 1 - torch.tanh(x) ** 2, atol=1e-6)
