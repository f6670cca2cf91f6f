"""The Q-value exploration strategies (EpsilonGreedy, PerWorkerEpsilonGreedy, SoftQ): their
schedules and action frequencies, their state, their stats in a policy's learner info, and the
build-time refusal of a strategy an algorithm does not have (the noise strategies have
tests/test_noise_exploration.py)."""

from __future__ import annotations

import inspect
import json
from typing import Any

import gymnasium as gym
import numpy as np
import numpy.typing as npt
import pytest
import torch

from rlconf import ConfigError, PGConfig, PPOConfig
from rlconf.exploration_types import BUILTIN_EXPLORATION
from runtime import PolicyBuilder, RLModule
from runtime.algorithms.pg import PGLearner
from runtime.core.distributions import Categorical
from runtime.core.exploration import (
    BUILTIN,
    NOT_AVAILABLE,
    EpsilonGreedy,
    Exploration,
    PerWorkerEpsilonGreedy,
    SoftQ,
    factory,
)
from runtime.core.policy import TorchPolicy
from runtime.core.sample_batch import SampleBatch as SB

Tensors = dict[str, torch.Tensor]
OBS_SPACE = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
ROWS = 20_000
# Shares of ROWS draws: the standard error is at most 0.0036, so 0.015 is over four of them.
TOLERANCE = 0.015


@pytest.fixture(autouse=True)
def _seeded() -> None:
    torch.manual_seed(0)


def _space(n: int = 4) -> gym.spaces.Discrete:
    space = gym.spaces.Discrete(n)
    space.seed(0)
    return space


def _q_dist(rows: int = ROWS) -> Categorical:
    """Q-values whose argmax alternates between actions 2 and 0 from row to row."""
    q = torch.tensor([[0.0, 1.0, 3.0, 2.0], [5.0, 1.0, 3.0, 2.0]]).repeat(rows // 2, 1)
    return Categorical(q)


def _eps(epsilon: float, **kwargs: Any) -> EpsilonGreedy:
    """EpsilonGreedy held at ``epsilon``."""
    return EpsilonGreedy(
        _space(), initial_epsilon=epsilon, final_epsilon=epsilon, epsilon_timesteps=1, **kwargs
    )


def _shares(actions: torch.Tensor, n: int = 4) -> npt.NDArray[np.float64]:
    counts = np.bincount(actions.numpy(), minlength=n)
    shares: npt.NDArray[np.float64] = counts / counts.sum()
    return shares


# ---------------------------------------------------------------------------- the strategies


def test_every_config_type_is_a_runtime_strategy_or_refused_with_a_reason() -> None:
    assert set(BUILTIN) | set(NOT_AVAILABLE) == set(BUILTIN_EXPLORATION)
    assert not set(BUILTIN) & set(NOT_AVAILABLE)
    assert all(issubclass(cls, Exploration) for cls in BUILTIN.values())


@pytest.mark.parametrize("kind", sorted(BUILTIN))
def test_each_strategy_takes_the_arguments_rlconf_validates_for_it(kind: str) -> None:
    # A subclass passes the arguments it does not name on to its bases (PerWorkerEpsilonGreedy
    # the schedule's to EpsilonGreedy, the noise strategies GaussianNoise's).
    parameters = {
        name
        for cls in BUILTIN[kind].__mro__
        if issubclass(cls, Exploration)
        for name in inspect.signature(cls).parameters
    }
    assert set(BUILTIN_EXPLORATION[kind].__annotations__) <= parameters


def test_epsilon_greedy_defaults() -> None:
    exploration = EpsilonGreedy(_space())
    assert exploration.initial_epsilon == 1.0
    assert exploration.final_epsilon == 0.05
    assert exploration.warmup_timesteps == 0
    assert exploration.epsilon_timesteps == 100_000
    assert exploration.cur_epsilon == 1.0
    assert exploration.epsilon_at(50_000) == pytest.approx(0.525)


@pytest.mark.parametrize(
    ("timestep", "epsilon"),
    [
        (0, 1.0),
        (99, 1.0),  # warmup: the initial epsilon
        (100, 1.0),  # the schedule starts
        (350, 0.775),  # a quarter of the way from 1.0 to 0.1
        (600, 0.55),  # half way
        (1100, 0.1),  # the end
        (50_000, 0.1),  # and constant after it
    ],
)
def test_epsilon_follows_warmup_then_linear_schedule(timestep: int, epsilon: float) -> None:
    exploration = EpsilonGreedy(
        _space(),
        initial_epsilon=1.0,
        final_epsilon=0.1,
        warmup_timesteps=100,
        epsilon_timesteps=1000,
    )
    assert exploration.epsilon_at(timestep) == pytest.approx(epsilon)
    exploration.get_exploration_action(action_distribution=_q_dist(2), timestep=timestep)
    assert exploration.cur_epsilon == pytest.approx(epsilon)
    assert exploration.stats() == {"cur_epsilon": pytest.approx(epsilon)}
    assert exploration.get_state() == {
        "cur_epsilon": pytest.approx(epsilon),
        "last_timestep": timestep,
    }


@pytest.mark.parametrize("epsilon", [0.0, 0.3, 1.0])
def test_epsilon_greedy_takes_random_actions_with_probability_epsilon(epsilon: float) -> None:
    dist = _q_dist()
    greedy = dist.inputs.argmax(-1)
    actions = _eps(epsilon).get_exploration_action(action_distribution=dist, timestep=0)
    assert actions.shape == (ROWS,)
    # A random action is the greedy one a quarter of the time.
    off_greedy = float((actions != greedy).double().mean())
    assert off_greedy == pytest.approx(epsilon * 3 / 4, abs=TOLERANCE)
    # Random actions are uniform: each action other than a row's greedy one gets epsilon / 4.
    zero_greedy_rows = actions[greedy == 0]
    np.testing.assert_allclose(_shares(zero_greedy_rows)[1:], [epsilon / 4] * 3, atol=TOLERANCE)


def test_epsilon_greedy_is_greedy_without_exploration() -> None:
    dist = _q_dist()
    for exploration in (_eps(1.0), EpsilonGreedy(_space())):
        actions = exploration.get_exploration_action(
            action_distribution=dist, timestep=0, explore=False
        )
        assert torch.equal(actions, dist.inputs.argmax(-1))


def test_q_value_strategies_need_a_discrete_action_space() -> None:
    box = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    for cls in (EpsilonGreedy, PerWorkerEpsilonGreedy, SoftQ):
        with pytest.raises(ConfigError, match="needs a Discrete action space"):
            cls(box)


def test_per_worker_epsilons_spread_over_three_workers() -> None:
    def epsilon(worker_index: int) -> float:
        exploration = PerWorkerEpsilonGreedy(_space(), num_workers=3, worker_index=worker_index)
        return exploration.cur_epsilon

    assert epsilon(0) == 0.0  # the local worker only learns
    assert epsilon(1) == pytest.approx(0.4)
    assert epsilon(2) == pytest.approx(0.4**4.5)
    assert epsilon(3) == pytest.approx(0.4**8)


def test_per_worker_epsilon_is_fixed_whatever_the_timestep() -> None:
    exploration = PerWorkerEpsilonGreedy(_space(), num_workers=3, worker_index=1)
    for timestep in (0, 10**6):
        exploration.get_exploration_action(action_distribution=_q_dist(2), timestep=timestep)
        assert exploration.stats() == {"cur_epsilon": pytest.approx(0.4)}
    actions = exploration.get_exploration_action(action_distribution=_q_dist(), timestep=0)
    off_greedy = float((actions != _q_dist().inputs.argmax(-1)).double().mean())
    assert off_greedy == pytest.approx(0.4 * 3 / 4, abs=TOLERANCE)


@pytest.mark.parametrize("num_workers", [0, 1])
def test_per_worker_epsilon_greedy_with_one_worker_or_none_follows_the_schedule(
    num_workers: int,
) -> None:
    exploration = PerWorkerEpsilonGreedy(
        _space(),
        num_workers=num_workers,
        worker_index=num_workers,
        initial_epsilon=0.8,
        final_epsilon=0.2,
        warmup_timesteps=10,
        epsilon_timesteps=100,
    )
    assert exploration.cur_epsilon == pytest.approx(0.8)
    exploration.on_timestep(60)
    assert exploration.cur_epsilon == pytest.approx(0.5)
    exploration.on_timestep(500)
    assert exploration.cur_epsilon == pytest.approx(0.2)


@pytest.mark.parametrize("temperature", [1.0, 0.5])
def test_soft_q_samples_from_the_softmax_of_q_over_temperature(temperature: float) -> None:
    q = torch.tensor([[1.0, 0.0, -1.0, 0.5]]).repeat(ROWS, 1)
    exploration = SoftQ(_space(), temperature=temperature)
    actions = exploration.get_exploration_action(action_distribution=Categorical(q), timestep=7)
    expected = torch.softmax(q[0] / temperature, dim=-1).numpy()
    np.testing.assert_allclose(_shares(actions), expected, atol=TOLERANCE)
    assert exploration.get_state() == {"last_timestep": 7}
    greedy = exploration.get_exploration_action(
        action_distribution=Categorical(q), timestep=7, explore=False
    )
    assert greedy.tolist() == [0] * ROWS


def test_soft_q_with_a_higher_temperature_explores_more() -> None:
    q = Categorical(torch.tensor([[2.0, 0.0, 0.0, 0.0]]).repeat(ROWS, 1))
    cold = SoftQ(_space(), temperature=0.5).get_exploration_action(
        action_distribution=q, timestep=0
    )
    hot = SoftQ(_space(), temperature=4.0).get_exploration_action(action_distribution=q, timestep=0)
    assert _shares(cold)[0] > 0.9 > 0.45 > _shares(hot)[0]


# ---------------------------------------------------------------------------- state


def test_epsilon_greedy_state_is_json_and_round_trips() -> None:
    exploration = EpsilonGreedy(_space(), final_epsilon=0.1, epsilon_timesteps=1000)
    exploration.get_exploration_action(action_distribution=_q_dist(2), timestep=600)
    state = json.loads(json.dumps(exploration.get_state()))
    assert state == {"cur_epsilon": pytest.approx(0.46), "last_timestep": 600}

    restored = EpsilonGreedy(_space(), final_epsilon=0.1, epsilon_timesteps=1000)
    assert restored.cur_epsilon == 1.0
    restored.set_state(state)
    assert restored.get_state() == exploration.get_state()
    assert restored.stats() == exploration.stats()


def test_per_worker_and_soft_q_state_round_trips() -> None:
    worker = PerWorkerEpsilonGreedy(_space(), num_workers=3, worker_index=3)
    worker.on_timestep(1234)
    restored = PerWorkerEpsilonGreedy(_space(), num_workers=3, worker_index=3)
    restored.set_state(json.loads(json.dumps(worker.get_state())))
    assert restored.get_state() == {"cur_epsilon": pytest.approx(0.4**8), "last_timestep": 1234}
    # Another worker's state keeps this worker's own epsilon.
    other = PerWorkerEpsilonGreedy(_space(), num_workers=3, worker_index=1)
    other.set_state(worker.get_state())
    assert other.cur_epsilon == pytest.approx(0.4)

    soft = SoftQ(_space(), temperature=2.0)
    soft.on_timestep(99)
    soft_restored = SoftQ(_space(), temperature=2.0)
    soft_restored.set_state(json.loads(json.dumps(soft.get_state())))
    assert soft_restored.get_state() == {"last_timestep": 99}
    assert soft_restored.stats() == {}


# ---------------------------------------------------------------------------- in a policy


class FixedQ(RLModule):
    """The same Q-values for every observation, with one parameter to learn."""

    dist_class = Categorical

    def __init__(self, obs_space: gym.Space[Any], action_space: gym.Space[Any], config: Any):
        super().__init__(obs_space, action_space, config)
        self.q = torch.nn.Parameter(torch.tensor([0.0, 1.0, 3.0, 2.0]))

    def forward_train(self, batch: Tensors) -> Tensors:
        return {SB.ACTION_DIST_INPUTS: self.q.expand(len(batch[SB.OBS]), 4)}


EXPLORATIONS = ("EpsilonGreedy", "PerWorkerEpsilonGreedy", "SoftQ", "StochasticSampling")


def _policy(exploration_config: dict[str, Any], num_workers: int = 0, **kw: Any) -> TorchPolicy:
    config = (
        PGConfig()
        .rollouts(num_workers=num_workers)
        .exploration(exploration_config=exploration_config)
        .freeze()
    )
    builder = PolicyBuilder(
        learner_class=PGLearner, module_class=FixedQ, explorations=EXPLORATIONS, algorithm="QAlgo"
    )
    return builder(OBS_SPACE, _space(), config, **kw)


def _obs(rows: int = ROWS) -> npt.NDArray[np.float32]:
    return np.random.default_rng(0).uniform(-1, 1, (rows, 3)).astype(np.float32)


def _batch(rows: int = 8) -> SB:
    return SB(
        {
            SB.OBS: _obs(rows),
            SB.ACTIONS: np.arange(rows) % 4,
            SB.ADVANTAGES: np.linspace(-1.0, 1.0, rows).astype(np.float32),
        }
    )


SCHEDULE = {
    "type": "EpsilonGreedy",
    "initial_epsilon": 1.0,
    "final_epsilon": 0.0,
    "epsilon_timesteps": 100,
}


def test_policy_acts_epsilon_greedily_at_its_global_timestep() -> None:
    policy = _policy(SCHEDULE)
    assert isinstance(policy.exploration, EpsilonGreedy)
    early, _, _ = policy.compute_actions(_obs())  # epsilon 1: uniform
    np.testing.assert_allclose(_shares(torch.from_numpy(early)), [0.25] * 4, atol=TOLERANCE)
    policy.on_global_var_update({"timestep": 100})  # epsilon 0: greedy
    late, _, _ = policy.compute_actions(_obs())
    assert late.tolist() == [2] * ROWS


def test_learn_on_batch_reports_the_exploration_stats_among_the_learner_stats() -> None:
    policy = _policy(SCHEDULE)
    # The learning worker may never act: the epsilon follows the timestep it is sent.
    policy.on_global_var_update({"timestep": 25})
    stats = policy.learn_on_batch(_batch())["learner_stats"]
    assert stats["cur_epsilon"] == pytest.approx(0.75)
    assert "policy_loss" in stats and "cur_lr" in stats

    sampling = _policy({"type": "StochasticSampling"})
    assert "cur_epsilon" not in sampling.learn_on_batch(_batch())["learner_stats"]


def test_policy_exploration_state_has_the_epsilon_and_round_trips() -> None:
    policy = _policy(SCHEDULE)
    policy.on_global_var_update({"timestep": 40})
    assert policy.get_exploration_state() == {
        "timestep": 40,
        "cur_epsilon": pytest.approx(0.6),
        "last_timestep": 40,
    }
    state = json.loads(json.dumps(policy.get_json_state()))
    restored = _policy(SCHEDULE)
    restored.set_state(state)
    assert restored.get_exploration_state() == policy.get_exploration_state()


def test_policy_on_a_remote_worker_gets_its_per_worker_epsilon() -> None:
    config = {"type": "PerWorkerEpsilonGreedy"}
    remote = _policy(config, num_workers=3, worker_index=2)
    assert remote.get_exploration_state()["cur_epsilon"] == pytest.approx(0.4**4.5)
    local = _policy(config, num_workers=3, worker_index=0)
    assert local.learn_on_batch(_batch())["learner_stats"]["cur_epsilon"] == 0.0


# ---------------------------------------------------------------------------- refusals


NOISE = (
    "GaussianNoise",
    "PerWorkerGaussianNoise",
    "OrnsteinUhlenbeckNoise",
    "PerWorkerOrnsteinUhlenbeckNoise",
)


@pytest.mark.parametrize("kind", NOISE)
def test_noise_types_are_built_for_an_algorithm_that_lists_them(kind: str) -> None:
    assert kind not in NOT_AVAILABLE
    builder = PolicyBuilder(learner_class=None, explorations=(kind, "Random"), algorithm="QAlgo")
    config = PPOConfig().exploration(exploration_config={"type": kind}).freeze()
    box = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    assert type(builder(OBS_SPACE, box, config).exploration) is BUILTIN[kind]


def test_noise_type_is_refused_before_any_worker_starts_by_an_algorithm_without_it() -> None:
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .rollouts(num_workers=2)
        .exploration(exploration_config={"type": "OrnsteinUhlenbeckNoise"})
    )
    with pytest.raises(ConfigError, match=r"PPO \(build\).*\n.*is not available to PPO"):
        config.build()


class _QAlgo:
    explorations = ("EpsilonGreedy", "SoftQ")


def test_a_strategy_the_algorithm_lacks_names_the_algorithms_that_have_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def algorithm_class(name: str) -> Any:
        if name == "Broken":
            raise ImportError("a user entry that does not import")
        return {"QAlgo": _QAlgo, "OtherQ": _QAlgo}.get(name, object)

    monkeypatch.setattr(factory, "list_algorithms", lambda: ["Broken", "OtherQ", "PPO", "QAlgo"])
    monkeypatch.setattr(factory, "get_algorithm_class", algorithm_class)
    config = PPOConfig().exploration(exploration_config={"type": "SoftQ"}).freeze()
    with pytest.raises(ConfigError) as caught:
        PolicyBuilder(learner_class=None, algorithm="PPO")(OBS_SPACE, _space(), config)
    message = str(caught.value)
    assert "is not available to PPO (SoftQ is a strategy of OtherQ, QAlgo)" in message
    assert "allowed: StochasticSampling, Random, or a subclass of runtime.Exploration" in message

    monkeypatch.setattr(factory, "list_algorithms", lambda: ["PPO"])
    with pytest.raises(ConfigError, match=r"no registered algorithm uses SoftQ"):
        PolicyBuilder(learner_class=None, algorithm="PPO")(OBS_SPACE, _space(), config)
