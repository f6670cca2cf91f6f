"""Exploration strategies: the built-in ones on their own and inside a policy, user strategies
given as a class or an import path in ``exploration_config``, and the error for a strategy an
algorithm does not have."""

from __future__ import annotations

import pickle
from typing import Any

import gymnasium as gym
import numpy as np
import numpy.typing as npt
import pytest
import torch

import runtime
from rlconf import ConfigError, PPOConfig
from runtime import PPO, Exploration, PolicyBuilder, Random, RLModule, StochasticSampling
from runtime.core.distributions import ActionDistribution, Categorical
from runtime.core.policy import TorchPolicy
from runtime.core.sample_batch import SampleBatch as SB
from tests.user_objects import FixedActionExploration

Tensors = dict[str, torch.Tensor]
OBS_SPACE = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
ROWS = 4000


def _space(n: int = 2) -> gym.spaces.Discrete:
    space = gym.spaces.Discrete(n)
    space.seed(0)
    return space


def _dist(logits: list[float], rows: int = ROWS) -> Categorical:
    return Categorical(torch.tensor([logits] * rows))


def _share_of_ones(actions: torch.Tensor | npt.NDArray[Any]) -> float:
    return float(np.asarray(actions).astype(np.float64).mean())


def test_exploration_classes_are_importable_from_runtime() -> None:
    assert runtime.Exploration is Exploration
    assert runtime.StochasticSampling is StochasticSampling
    assert runtime.Random is Random
    assert issubclass(StochasticSampling, Exploration) and issubclass(Random, Exploration)


# ---------------------------------------------------------------------------- built-ins


def test_stochastic_sampling_samples_from_the_distribution_when_exploring() -> None:
    torch.manual_seed(0)
    exploration = StochasticSampling(_space())
    # p(1) = 1 / (1 + e) = 0.269: neither always the argmax (0) nor uniform.
    actions = exploration.get_exploration_action(
        action_distribution=_dist([1.0, 0.0]), timestep=0, explore=True
    )
    assert actions.shape == (ROWS,)
    assert set(actions.tolist()) == {0, 1}
    assert 0.24 < _share_of_ones(actions) < 0.30


def test_stochastic_sampling_is_deterministic_without_exploration() -> None:
    exploration = StochasticSampling(_space(3), random_timesteps=100)
    dist = Categorical(torch.tensor([[0.1, 0.5, 0.2], [2.0, 1.9, 0.0], [0.0, 0.0, 0.3]]))
    for timestep in (0, 50, 1000):  # not random either during random_timesteps
        actions = exploration.get_exploration_action(
            action_distribution=dist, timestep=timestep, explore=False
        )
        assert actions.tolist() == [1, 0, 2]


def test_stochastic_sampling_is_uniform_before_random_timesteps_then_samples() -> None:
    torch.manual_seed(0)
    exploration = StochasticSampling(_space(), random_timesteps=100)
    assert exploration.random_timesteps == 100
    # The distribution all but rules out action 1 (p = 1 / (1 + e^10) = 4.5e-5) ...
    dist = _dist([10.0, 0.0])
    early = exploration.get_exploration_action(action_distribution=dist, timestep=99)
    # ... yet before random_timesteps the actions are uniform.
    assert 0.45 < _share_of_ones(early) < 0.55
    late = exploration.get_exploration_action(action_distribution=dist, timestep=100)
    assert _share_of_ones(late) < 0.01


def test_random_exploration_is_uniform_when_exploring_and_greedy_otherwise() -> None:
    exploration = Random(_space())
    dist = _dist([10.0, 0.0])
    actions = exploration.get_exploration_action(action_distribution=dist, timestep=0)
    assert actions.shape == (ROWS,)
    assert 0.45 < _share_of_ones(actions) < 0.55
    greedy = exploration.get_exploration_action(action_distribution=dist, timestep=0, explore=False)
    assert greedy.tolist() == [0] * ROWS


# ---------------------------------------------------------------------------- in a policy


class FavoursActionZero(RLModule):
    """Logits [5, 0] for every observation: p(1) = 1 / (1 + e^5) = 0.0067."""

    dist_class = Categorical

    def forward_train(self, batch: Tensors) -> Tensors:
        rows = len(batch[SB.OBS])
        return {SB.ACTION_DIST_INPUTS: torch.tensor([[5.0, 0.0]]).expand(rows, 2)}


def _policy(exploration_config: dict[str, Any], action_space: gym.Space[Any]) -> TorchPolicy:
    config = PPOConfig().exploration(exploration_config=exploration_config).freeze()
    return TorchPolicy(
        OBS_SPACE,
        action_space,
        config,
        module_class=FavoursActionZero,
        algorithm="PPO",
    )


def _obs(rows: int = ROWS) -> npt.NDArray[np.float32]:
    return np.random.default_rng(0).uniform(-1, 1, (rows, 3)).astype(np.float32)


def test_policy_passes_its_timestep_to_stochastic_sampling_random_timesteps() -> None:
    torch.manual_seed(0)
    policy = _policy({"type": "StochasticSampling", "random_timesteps": 100}, _space())
    assert isinstance(policy.exploration, StochasticSampling)
    assert policy.exploration.random_timesteps == 100

    early, _, extra = policy.compute_actions(_obs())  # global timestep 0: uniform
    assert 0.45 < _share_of_ones(early) < 0.55
    # The reported log-likelihood is that of the action taken.
    np.testing.assert_allclose(
        extra[SB.ACTION_LOGP], np.where(early == 1, -5.0067153, -0.0067153), rtol=1e-5
    )

    policy.on_global_var_update({"timestep": 150})
    late, _, _ = policy.compute_actions(_obs())
    assert _share_of_ones(late) < 0.02
    greedy, _, _ = policy.compute_actions(_obs(), explore=False)
    assert greedy.tolist() == [0] * ROWS
    early_again, _, _ = policy.compute_actions(_obs(), timestep=10)  # an explicit timestep
    assert 0.45 < _share_of_ones(early_again) < 0.55


def test_policy_with_random_exploration_acts_randomly_and_greedily_when_asked() -> None:
    policy = _policy({"type": "Random"}, _space())
    assert isinstance(policy.exploration, Random)
    actions, _, _ = policy.compute_actions(_obs())
    assert 0.45 < _share_of_ones(actions) < 0.55
    greedy, _, _ = policy.compute_actions(_obs(), explore=False)
    assert greedy.tolist() == [0] * ROWS


# ---------------------------------------------------------------------------- user strategies


class MyExploration(Exploration):
    """Always ``my_arg`` while exploring, greedy otherwise; records what it was called with."""

    def __init__(self, action_space: gym.Space[Any], *, my_arg: int, **kwargs: Any) -> None:
        super().__init__(action_space, **kwargs)
        self.my_arg = my_arg
        self.calls: list[tuple[int, bool]] = []

    def get_exploration_action(
        self,
        *,
        action_distribution: ActionDistribution,
        timestep: int,
        explore: bool = True,
    ) -> torch.Tensor:
        self.calls.append((timestep, explore))
        if not explore:
            return action_distribution.deterministic_sample()
        return torch.full((len(action_distribution.inputs),), self.my_arg, dtype=torch.long)


def test_user_exploration_class_is_built_with_its_argument_and_used_by_compute_actions() -> None:
    config = PPOConfig().exploration(exploration_config={"type": MyExploration, "my_arg": 3})
    frozen = config.freeze()
    policy = PPO.policy_class(OBS_SPACE, gym.spaces.Discrete(4), frozen)
    exploration = policy.exploration
    assert isinstance(exploration, MyExploration)
    assert exploration.my_arg == 3
    assert exploration.model is policy.module
    assert exploration.policy_config is frozen
    assert exploration.framework == "torch"

    policy.on_global_var_update({"timestep": 42})
    actions, _, extra = policy.compute_actions(_obs(5))
    assert actions.tolist() == [3] * 5
    assert exploration.calls == [(42, True)]
    # action_logp is the log-likelihood of the user's action under the module's distribution.
    logits = extra[SB.ACTION_DIST_INPUTS]
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    np.testing.assert_allclose(extra[SB.ACTION_LOGP], log_probs[:, 3], rtol=1e-5)

    greedy, _, extra = policy.compute_actions(_obs(5), explore=False)
    assert exploration.calls[-1] == (42, False)
    assert greedy.tolist() == np.argmax(extra[SB.ACTION_DIST_INPUTS], axis=-1).tolist()


@pytest.mark.parametrize(
    "path",
    ["tests.user_objects:FixedActionExploration", "tests.user_objects.FixedActionExploration"],
)
def test_user_exploration_by_import_path_is_built_and_used(path: str) -> None:
    policy = _policy({"type": path, "action": 1}, _space())
    assert type(policy.exploration) is FixedActionExploration
    assert policy.exploration.action == 1
    actions, _, _ = policy.compute_actions(_obs(10))
    assert actions.tolist() == [1] * 10  # though the module all but rules action 1 out
    greedy, _, _ = policy.compute_actions(_obs(10), explore=False)
    assert greedy.tolist() == [0] * 10


def test_user_exploration_by_import_path_drives_the_algorithms_sampling() -> None:
    algo = (
        PPOConfig()
        .environment("CartPole-v1")
        .rollouts(num_workers=0, rollout_fragment_length=32)
        .training(train_batch_size=32, sgd_minibatch_size=32, num_sgd_iter=1)
        .exploration(
            exploration_config={"type": "tests.user_objects:FixedActionExploration", "action": 1}
        )
        .build()
    )
    try:
        batch = algo.sample_train_batch()["default_policy"]
        assert batch[SB.ACTIONS].tolist() == [1] * len(batch)
    finally:
        algo.stop()


# ---------------------------------------------------------------------------- errors


def test_exploration_type_ppo_does_not_have_is_a_config_error_at_build() -> None:
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .rollouts(num_workers=0)
        .exploration(exploration_config={"type": "EpsilonGreedy"})
    )
    with pytest.raises(ConfigError) as caught:
        algo = config.build()
        algo.stop()
    message = str(caught.value)
    assert "exploration_config.type" in message
    assert "'EpsilonGreedy'" in message
    assert "PPO" in message
    assert "StochasticSampling, Random" in message
    assert "subclass of runtime.Exploration" in message
    [issue] = caught.value.issues
    assert issue.field == "exploration_config.type" and issue.value == "EpsilonGreedy"


def test_a_class_that_is_no_exploration_is_a_config_error() -> None:
    for kind in ("tests.user_objects:MyCallbacks", FavoursActionZero):
        with pytest.raises(ConfigError, match=r"exploration_config\.type"):
            PPO.policy_class(OBS_SPACE, _space(), _config_with(kind))


def _config_with(kind: Any) -> Any:
    return PPOConfig().exploration(exploration_config={"type": kind}).freeze()


def test_a_built_in_strategy_the_algorithm_does_not_allow_is_a_config_error() -> None:
    # An algorithm that samples only: "Random" exists but is not one of its strategies.
    builder = PolicyBuilder(
        learner_class=None, explorations=("StochasticSampling",), algorithm="MyAlgo"
    )
    with pytest.raises(ConfigError) as caught:
        builder(OBS_SPACE, _space(), _config_with("Random"))
    message = str(caught.value)
    assert "MyAlgo" in message and "'Random'" in message
    assert "allowed: StochasticSampling, or a subclass of runtime.Exploration" in message
    policy = builder(OBS_SPACE, _space(), _config_with("StochasticSampling"))
    assert type(policy.exploration) is StochasticSampling


def test_config_error_survives_pickling_as_ray_sends_it_from_remote_workers() -> None:
    with pytest.raises(ConfigError) as caught:
        PolicyBuilder(learner_class=None, algorithm="PPO")(
            OBS_SPACE, _space(), _config_with("EpsilonGreedy")
        )
    again = pickle.loads(pickle.dumps(caught.value))
    assert isinstance(again, ConfigError)
    assert str(again) == str(caught.value)


def test_a_strategy_the_algorithm_cannot_use_is_refused_before_any_worker_starts() -> None:
    config = PPOConfig().environment("CartPole-v1").rollouts(num_workers=2)
    with pytest.raises(ConfigError, match=r"exploration_config.type='SoftQ'.*StochasticSampling"):
        config.exploration(exploration_config={"type": "SoftQ"}).build()


class _Actor(RLModule):
    """A deterministic actor: outputs actions, no distribution."""

    def __init__(self, obs_space: gym.Space[Any], action_space: gym.Space[Any], config: Any):
        super().__init__(obs_space, action_space, config)
        self.scale = torch.nn.Parameter(torch.tensor(0.5))

    def forward_train(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        return {SB.ACTIONS: self.scale * batch[SB.OBS][:, :1]}


class _PlusOne(Exploration):
    def get_exploration_action(
        self, *, action_distribution: ActionDistribution, timestep: int, explore: bool = True
    ) -> torch.Tensor:
        greedy = action_distribution.deterministic_sample()
        return greedy + 1.0 if explore else greedy


def test_a_deterministic_actor_acts_through_the_same_interface() -> None:
    box = gym.spaces.Box(-2.0, 2.0, (1,), np.float32)
    config = PPOConfig().exploration(exploration_config={"type": _PlusOne}).freeze()
    policy = PolicyBuilder(learner_class=None, module_class=_Actor)(OBS_SPACE, box, config)
    obs = np.array([[0.2, 0.0, 0.0], [-0.4, 0.0, 0.0]], np.float32)
    greedy, _, extra = policy.compute_actions(obs, explore=False)
    np.testing.assert_allclose(greedy, [[0.1], [-0.2]], rtol=1e-6)
    np.testing.assert_allclose(extra[SB.ACTION_LOGP], [0.0, 0.0])
    noisy, _, _ = policy.compute_actions(obs, explore=True)
    np.testing.assert_allclose(noisy, [[1.1], [0.8]], rtol=1e-6)
