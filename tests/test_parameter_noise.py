"""ParameterNoise: noise on the network's weights while exploring (the module's own weights
untouched), the same noise through an episode and fresh noise at the next, greedy acting on
the clean weights, the stddev adapting to the distance between the noisy and clean policies,
its sub-exploration's schedule, and its state."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

from rlconf import DQNConfig, PPOConfig, TD3Config
from rlconf.errors import ConfigError
from runtime import Algorithm
from runtime.core.exploration import ParameterNoise


def _dqn(**exploration: Any) -> Algorithm:
    algo: Algorithm = (
        DQNConfig()
        .environment("CartPole-v1")
        .rollouts(num_workers=0, rollout_fragment_length=20)
        .training(model={"fcnet_hiddens": [16]})
        .exploration(exploration_config={"type": "ParameterNoise", **exploration})
        .reporting(min_sample_timesteps_per_reporting=40)
        .debugging(seed=0)
        .build()
    )
    return algo


def test_exploring_acts_with_noisy_weights_and_greedy_with_the_clean_ones() -> None:
    algo = _dqn(random_timesteps=0, initial_stddev=0.5)
    try:
        policy = algo.get_policy()
        strategy = policy.exploration
        assert isinstance(strategy, ParameterNoise)
        before = {k: v.clone() for k, v in policy.module.state_dict().items()}
        obs = np.random.default_rng(0).normal(size=(6, 4)).astype(np.float32)
        _, _, noisy = policy.compute_actions(obs, explore=True)
        _, _, noisy_again = policy.compute_actions(obs, explore=True)
        _, _, clean = policy.compute_actions(obs, explore=False)
        key = "action_dist_inputs"
        # the same noise until an episode starts; the weights themselves never change
        np.testing.assert_array_equal(noisy[key], noisy_again[key])
        assert not np.allclose(noisy[key], clean[key])
        after = policy.module.state_dict()
        assert all(torch.equal(before[k], after[k]) for k in before)
        strategy.on_episode_start(policy)
        _, _, fresh = policy.compute_actions(obs, explore=True)
        assert not np.allclose(fresh[key], noisy[key])
    finally:
        algo.stop()


def test_the_stddev_adapts_to_the_action_distance_after_each_fragment() -> None:
    # Huge noise: the noisy policy is far from the clean one, the stddev shrinks by 1.01 per
    # fragment; tiny noise: it grows.
    for initial, shrinks in ((50.0, True), (1e-6, False)):
        algo = _dqn(random_timesteps=0, initial_stddev=initial)
        try:
            result = algo.train()
            stats = algo.get_policy().exploration.stats()
            assert stats["cur_epsilon"] == pytest.approx(0.01)
            fragments = result["timesteps_total"] // 20
            expected = initial * 1.01 ** (-fragments if shrinks else fragments)
            assert stats["cur_stddev"] == pytest.approx(expected, rel=1e-6)
        finally:
            algo.stop()


def test_epsilon_is_one_through_the_random_phase_then_a_step_to_001() -> None:
    algo = _dqn(random_timesteps=100)
    try:
        strategy = algo.get_policy().exploration
        assert isinstance(strategy, ParameterNoise)
        sub = strategy.sub_exploration
        sub.on_timestep(100)
        assert sub.stats()["cur_epsilon"] == 1.0
        sub.on_timestep(102)
        assert sub.stats()["cur_epsilon"] == pytest.approx(0.01)
        state = strategy.get_state()
        strategy.stddev = 3.0
        strategy.set_state(state)
        assert strategy.stddev == 1.0 and strategy.stats()["cur_stddev"] == 1.0
    finally:
        algo.stop()


def test_a_deterministic_actor_explores_with_weight_noise_and_ou_noise() -> None:
    algo = (
        TD3Config()
        .environment("Pendulum-v1")
        .rollouts(num_workers=0, rollout_fragment_length=20)
        .training(
            actor_hiddens=[16],
            critic_hiddens=[16],
            train_batch_size=16,
            num_steps_sampled_before_learning_starts=20,
        )
        .exploration(exploration_config={"type": "ParameterNoise", "random_timesteps": 0})
        .reporting(min_sample_timesteps_per_reporting=40)
        .debugging(seed=0)
        .build()
    )
    try:
        algo.train()
        stats = algo.get_policy().exploration.stats()
        assert stats["cur_stddev"] != 1.0 and "cur_scale" in stats
    finally:
        algo.stop()


def test_an_unknown_sub_exploration_or_an_algorithm_without_it_is_refused() -> None:
    with pytest.raises(ValueError, match=r"sub_exploration=.*'SoftQ'.*EpsilonGreedy"):
        _dqn(sub_exploration={"type": "SoftQ"})
    with pytest.raises(ConfigError, match=r"ParameterNoise is a strategy of"):
        (
            PPOConfig()
            .environment("CartPole-v1")
            .exploration(exploration_config={"type": "ParameterNoise"})
            .build()
        )
