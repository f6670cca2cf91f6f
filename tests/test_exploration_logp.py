"""A user Exploration may return ``(actions, logp)``, as the reference documents: the policy
reports that ``logp`` as ``action_logp`` (what PPO's ratio starts from), and still takes a plain
tensor of actions (their log-likelihood then comes from the action distribution)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch

from rlconf import PPOConfig
from runtime import PPO
from runtime.core.distributions import ActionDistribution
from runtime.core.exploration import Exploration
from runtime.core.policy import TorchPolicy
from runtime.core.sample_batch import SampleBatch as SB

#: What the pair's logp says of every action (not the distribution's log-likelihood of it).
LOGP = -0.25


class SampleWithLogp(Exploration):
    """Samples as StochasticSampling does, and returns ``(actions, logp)`` the reference's way
    (greedy: logp 0, as the reference's deterministic sample)."""

    def get_exploration_action(
        self, *, action_distribution: ActionDistribution, timestep: int, explore: bool = True
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        if not explore:
            actions = action_distribution.deterministic_sample()
            return actions, torch.zeros(len(actions))
        actions = action_distribution.sample()
        return actions, torch.full((len(actions),), LOGP)


class LogpOfNone(Exploration):
    def get_exploration_action(
        self, *, action_distribution: ActionDistribution, timestep: int, explore: bool = True
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        return action_distribution.deterministic_sample(), None


class BadPair(Exploration):
    def __init__(self, action_space: Any, *, shape: tuple[int, ...] = (), **kwargs: Any) -> None:
        super().__init__(action_space, **kwargs)
        self.shape = shape

    def get_exploration_action(
        self, *, action_distribution: ActionDistribution, timestep: int, explore: bool = True
    ) -> Any:
        actions = action_distribution.sample()
        if not self.shape:
            return actions, torch.zeros(len(actions)), "extra"
        return actions, torch.zeros(self.shape)


def _config(exploration: dict[str, Any]) -> PPOConfig:
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .rollouts(num_workers=0, rollout_fragment_length=100)
        .training(train_batch_size=200, sgd_minibatch_size=100, num_sgd_iter=2)
        .exploration(exploration_config=exploration)
        .debugging(seed=0)
    )


def _policy(exploration: dict[str, Any]) -> TorchPolicy:
    space = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)
    return PPO.policy_class(space, gym.spaces.Discrete(2), _config(exploration).freeze())


def test_a_ppo_run_acts_and_trains_with_the_pairs_logp() -> None:
    algo = _config({"type": SampleWithLogp}).build()
    try:
        for iteration in (1, 2):
            result = algo.train()
            assert result["training_iteration"] == iteration
            assert result["num_env_steps_trained"] == 200 * iteration
            stats = result["info"]["learner"]["default_policy"]["learner_stats"]
            assert np.isfinite(stats["total_loss"])
        batch = algo.workers.local_worker().sample()
        np.testing.assert_array_equal(batch[SB.ACTION_LOGP], LOGP)
        assert set(np.unique(batch[SB.ACTIONS])) <= {0, 1}

        action, _, extra = algo.compute_single_action(np.zeros(4), full_fetch=True)
        assert action in (0, 1)
        assert extra[SB.ACTION_LOGP] == pytest.approx(LOGP)
        greedy, _, extra = algo.compute_single_action(np.zeros(4), explore=False, full_fetch=True)
        assert greedy == int(np.argmax(extra[SB.ACTION_DIST_INPUTS]))
        assert extra[SB.ACTION_LOGP] == 0.0

        policy = algo.get_policy()
        action, _, extra = policy.compute_single_action(np.zeros(4, np.float32))
        assert extra[SB.ACTION_LOGP] == pytest.approx(LOGP)
    finally:
        algo.stop()


def test_a_pair_with_logp_none_and_a_plain_tensor_take_the_distributions_logp() -> None:
    obs = np.zeros((3, 4), np.float32)
    for exploration in (LogpOfNone, "StochasticSampling"):
        policy = _policy({"type": exploration})
        actions, _, extra = policy.compute_actions(obs, explore=False)
        logits = torch.as_tensor(extra[SB.ACTION_DIST_INPUTS])
        expected = torch.log_softmax(logits, -1)[torch.arange(3), torch.as_tensor(actions)]
        np.testing.assert_allclose(extra[SB.ACTION_LOGP], expected.numpy(), rtol=1e-5)


@pytest.mark.parametrize(
    ("shape", "message"),
    [
        ((), r"BadPair.get_exploration_action\(\) returned a tuple of 3 items; allowed: a "),
        ((3, 1), r"logp of shape \(3, 1\); allowed: one log-likelihood per row, shape \(3,\)"),
    ],
)
def test_a_malformed_return_names_the_class_and_what_is_allowed(
    shape: tuple[int, ...], message: str
) -> None:
    policy = _policy({"type": BadPair, "shape": shape})
    with pytest.raises((TypeError, ValueError), match=message):
        policy.compute_actions(np.zeros((3, 4), np.float32))
