"""Strict calls on ``TorchPolicy``: ``compute_actions`` and ``compute_single_action`` take the
reference's keywords by name (``explore``, ``timestep``, ...), and nothing else. A keyword they
do not take is a TypeError naming it (a misspelt ``explore`` would otherwise keep exploring);
previous actions and rewards and infos are inputs of every call, as in the reference (a model
without memory ignores them: tests/test_prev_inputs_without_memory.py), and so are episodes,
which no model here reads; a state given to a model without memory is a ValueError naming it."""

from __future__ import annotations

import inspect
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from rlconf import PGConfig
from runtime.core.policy import TorchPolicy

OBS = np.zeros((3, 4), dtype=np.float32)

#: RLlib's ``TorchPolicy.compute_actions`` parameters, in order (its ``**kwargs`` left out).
REFERENCE_PARAMETERS = [
    "obs_batch",
    "state_batches",
    "prev_action_batch",
    "prev_reward_batch",
    "info_batch",
    "episodes",
    "explore",
    "timestep",
]


@pytest.fixture(scope="module")
def policy() -> TorchPolicy:
    config = PGConfig().debugging(seed=0).freeze()
    return TorchPolicy(gym.spaces.Box(-1.0, 1.0, (4,), np.float32), gym.spaces.Discrete(2), config)


def test_compute_actions_has_the_reference_signature_without_kwargs() -> None:
    parameters = inspect.signature(TorchPolicy.compute_actions).parameters
    positional = [
        name
        for name, p in parameters.items()
        if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD and name != "self"
    ]
    assert positional == REFERENCE_PARAMETERS
    # What the runtime's own callers pass besides (the env runners), by keyword only.
    keyword_only = [n for n, p in parameters.items() if p.kind is inspect.Parameter.KEYWORD_ONLY]
    assert keyword_only == ["value_preds", "env_indices"]
    assert not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())


@pytest.mark.parametrize(
    "keyword", ["explor", "polcy_id", "full_fetch", "state", "prev_action", "clip_actions"]
)
def test_an_unknown_keyword_is_a_type_error_naming_it(policy: TorchPolicy, keyword: str) -> None:
    kwargs: dict[str, Any] = {keyword: False}
    with pytest.raises(TypeError, match=rf"compute_actions\(\).*'{keyword}'"):
        policy.compute_actions(OBS, **kwargs)


def test_the_reference_keywords_and_the_runners_keywords_work(policy: TorchPolicy) -> None:
    greedy, states, _ = policy.compute_actions(OBS, explore=False)
    assert states == [] and greedy.shape == (3,)
    again, _, _ = policy.compute_actions(
        OBS,
        state_batches=[],
        prev_action_batch=None,
        prev_reward_batch=None,
        info_batch=None,
        episodes=None,
        explore=False,
        timestep=7,
        value_preds=False,
        env_indices=[0, 1, 2],
    )
    assert again.tolist() == greedy.tolist()
    # Positionally, in the reference's order: explore is the seventh argument.
    positional, _, _ = policy.compute_actions(OBS, None, None, None, None, None, False, 7)
    assert positional.tolist() == greedy.tolist()


def test_a_state_for_a_model_without_memory_is_refused_episodes_are_taken(
    policy: TorchPolicy,
) -> None:
    with pytest.raises(ValueError, match=r"compute_actions\(state_batches=.*no state"):
        policy.compute_actions(OBS, state_batches=[np.zeros((3, 8))])
    # Episodes are the reference's inputs of the call (for models that read them): taken.
    greedy, _, _ = policy.compute_actions(OBS, explore=False)
    with_episodes, _, _ = policy.compute_actions(OBS, episodes=["episode"] * 3, explore=False)
    assert with_episodes.tolist() == greedy.tolist()


def test_compute_single_action_is_as_strict(policy: TorchPolicy) -> None:
    action, states, extra = policy.compute_single_action(
        OBS[0], prev_action=None, prev_reward=None, info=None, episode=None, explore=False
    )
    assert action in (0, 1) and states == [] and set(extra) >= {"action_logp"}
    assert policy.compute_single_action(OBS[0], explore=False, timestep=3)[0] == action
    bad: dict[str, Any] = {"explor": False}
    with pytest.raises(TypeError, match=r"compute_single_action\(\).*'explor'"):
        policy.compute_single_action(OBS[0], **bad)
    assert policy.compute_single_action(OBS[0], episode="episode", explore=False)[0] == action
