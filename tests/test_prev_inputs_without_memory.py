"""Previous actions and rewards and env infos are inputs of every acting call, as RLlib
documents them (its exploration tests pass ``prev_action`` / ``prev_reward`` to every
algorithm, memory or not): a policy whose model has no memory takes and ignores them, a model
with memory reads those it is configured to, and a keyword the call does not have is still a
``TypeError`` naming it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from rlconf import DQNConfig, PGConfig
from runtime import Algorithm
from runtime.core.policy import TorchPolicy

OBS = np.array([[0.1, -0.2, 0.3, 0.0], [0.0, 0.5, -0.1, 0.2]], dtype=np.float32)
BOX = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)


def _policy(model: Any = None) -> TorchPolicy:
    config = (
        PGConfig().training(model=model if model is not None else {}).debugging(seed=0).freeze()
    )
    return TorchPolicy(BOX, gym.spaces.Discrete(2), config)


def test_a_policy_without_memory_takes_and_ignores_prev_inputs_and_infos() -> None:
    policy = _policy()
    assert not policy.is_recurrent()
    plain, _, plain_extra = policy.compute_actions(OBS, explore=False)
    actions, states, extra = policy.compute_actions(
        OBS,
        prev_action_batch=np.array([1, 0]),
        prev_reward_batch=np.array([0.5, -1.0]),
        info_batch=[{"lives": 3}, {}],
        explore=False,
    )
    assert states == [] and actions.tolist() == plain.tolist()
    np.testing.assert_array_equal(extra["action_dist_inputs"], plain_extra["action_dist_inputs"])
    # Positionally, in the reference's order.
    positional, _, _ = policy.compute_actions(OBS, None, [1, 0], [0.5, -1.0], [{}, {}], None, False)
    assert positional.tolist() == plain.tolist()
    single, single_state, single_extra = policy.compute_single_action(
        OBS[0], prev_action=1, prev_reward=0.5, info={"lives": 3}, explore=False
    )
    plain_single, _, plain_single_extra = policy.compute_single_action(OBS[0], explore=False)
    assert single == plain_single == plain[0] and single_state == []
    np.testing.assert_array_equal(
        single_extra["action_dist_inputs"], plain_single_extra["action_dist_inputs"]
    )
    # A keyword the calls do not have is still a TypeError naming it.
    bad: dict[str, Any] = {"explor": False, "prev_action": 1}
    with pytest.raises(TypeError, match=r"compute_single_action\(\).*'explor'"):
        policy.compute_single_action(OBS[0], **bad)
    bad_batch: dict[str, Any] = {"prev_action": np.zeros(2)}
    with pytest.raises(TypeError, match=r"compute_actions\(\).*'prev_action'"):
        policy.compute_actions(OBS, **bad_batch)


def test_a_model_with_memory_reads_the_prev_inputs_it_is_configured_to() -> None:
    policy = _policy({"use_lstm": True, "lstm_cell_size": 8, "lstm_use_prev_action": True})
    state = policy.get_initial_state()
    after_0 = policy.compute_single_action(
        OBS[0], state, prev_action=0, prev_reward=2.0, info={}, explore=False
    )
    after_1 = policy.compute_single_action(
        OBS[0], state, prev_action=1, prev_reward=2.0, info={}, explore=False
    )
    assert not np.allclose(after_0[2]["action_dist_inputs"], after_1[2]["action_dist_inputs"])
    # lstm_use_prev_reward is off: the previous reward is taken and not read.
    other_reward = policy.compute_single_action(
        OBS[0], state, prev_action=0, prev_reward=-5.0, explore=False
    )
    np.testing.assert_allclose(
        other_reward[2]["action_dist_inputs"], after_0[2]["action_dist_inputs"]
    )


@pytest.fixture(scope="module", params=["PG", "DQN"])
def algo(request: pytest.FixtureRequest) -> Iterator[Algorithm]:
    config_class = PGConfig if request.param == "PG" else DQNConfig
    algorithm = (
        config_class()
        .environment("CartPole-v1")
        .rollouts(num_workers=0, rollout_fragment_length=10)
        .training(train_batch_size=10)
        .debugging(seed=0)
        .build()
    )
    yield algorithm
    algorithm.stop()


def test_the_algorithm_takes_prev_inputs_and_infos_as_rllib_does(algo: Algorithm) -> None:
    obs = OBS[0]
    plain = algo.compute_single_action(obs, explore=False)
    given = algo.compute_single_action(
        obs, prev_action=1, prev_reward=1.0, info={"lives": 3}, explore=False
    )
    assert given == plain
    listed = algo.compute_actions(
        [obs, obs], prev_action=[0, 1], prev_reward=[1.0, 0.0], info=[{}, {}], explore=False
    )
    assert listed == [plain, plain]
    keyed = algo.compute_actions(
        {"a": obs}, prev_action={"a": 1}, prev_reward={"a": 1.0}, info={"a": {}}, explore=False
    )
    assert keyed == {"a": plain}
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'explor'.*'explore'"):
        algo.compute_single_action(obs, prev_action=1, explor=False)
    with pytest.raises(ValueError, match=r"compute_single_action\(state=.*no memory"):
        algo.compute_single_action(obs, [np.zeros(4)], prev_action=1)
