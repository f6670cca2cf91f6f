"""RLlib's own unit tests run every algorithm through one helper of its test utilities,
``check_compute_single_action(algorithm, include_state, include_prev_action_reward)``: the
policy's ``compute_single_action`` (with ``unsquash_action`` / ``clip_action``), its
``compute_actions_from_input_dict`` and ``compute_single_action(input_dict=...)`` (the same
greedy action), and the algorithm's ``compute_single_action`` (``full_fetch``, the action in
the env's space once unsquashed or clipped), with the model's initial state - or, for a model
without one, a state sampled from the model's ``view_requirements`` - and a previous action and
reward. ``check_compute_single_action`` below is our own port of what it checks, run over the
algorithms on discrete (CartPole) and continuous (Pendulum) spaces, with and without memory."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import Any, cast

import gymnasium as gym
import numpy as np
import pytest
import torch

from rlconf import (
    A2CConfig,
    APPOConfig,
    BCConfig,
    DDPGConfig,
    DQNConfig,
    IMPALAConfig,
    MARWILConfig,
    PGConfig,
    PPOConfig,
    SACConfig,
    TD3Config,
)
from rlconf.model_config import ModelConfigDict
from runtime import Algorithm
from runtime.core.models import TorchModel
from runtime.core.policy import TorchPolicy
from runtime.core.sample_batch import SampleBatch
from runtime.core.view_requirements import ViewRequirements

SMALL: ModelConfigDict = {"fcnet_hiddens": [16]}
LSTM: ModelConfigDict = {**SMALL, "use_lstm": True, "lstm_cell_size": 8, "max_seq_len": 4}
LSTM_PREV: ModelConfigDict = {**LSTM, "lstm_use_prev_action": True, "lstm_use_prev_reward": True}
ATTENTION: ModelConfigDict = {
    **SMALL,
    "use_attention": True,
    "attention_dim": 8,
    "attention_head_dim": 4,
    "attention_num_heads": 1,
    "attention_position_wise_mlp_dim": 8,
    "attention_memory_inference": 3,
    "attention_memory_training": 3,
    "attention_use_n_prev_actions": 2,
    "attention_use_n_prev_rewards": 2,
}


def _as_array(value: Any) -> np.ndarray[Any, Any]:
    if isinstance(value, torch.Tensor):
        return value.detach().cpu().numpy()
    return np.asarray(value)


def _assert_same(first: Any, second: Any) -> None:
    """Equal nested (action, state_out, extra) structures of arrays (float32 rounding)."""
    if isinstance(first, dict):
        assert set(first) == set(second)
        for key in first:
            _assert_same(first[key], second[key])
    elif isinstance(first, list | tuple):
        assert len(first) == len(second)
        for a, b in zip(first, second, strict=True):
            _assert_same(a, b)
    else:
        np.testing.assert_allclose(_as_array(first), _as_array(second), rtol=1e-5, atol=1e-6)


def _state_in(model: Any, include_state: bool) -> list[Any] | None:
    """The helper's state: None without include_state, else the model's initial state or one
    sampled from its view requirements (empty for a model without memory)."""
    if not include_state:
        return None
    state = list(model.get_initial_state())
    if state:
        return state
    views = model.view_requirements
    while f"state_in_{len(state)}" in views:
        state.append(views[f"state_in_{len(state)}"].space.sample())
    return state


def check_compute_single_action(
    algorithm: Algorithm,
    include_state: bool,
    include_prev_action_reward: bool,
    rng: np.random.Generator,
) -> None:
    """Our port of RLlib's helper: every combination of caller (policy, algorithm), method
    (plain, input dict), explore, full_fetch and the unsquash / clip switches."""
    worker = algorithm.workers.local_worker()
    pid = next(iter(worker.get_policies_to_train()))
    policy = algorithm.get_policy(pid)
    model: Any = policy.model
    action_space = policy.action_space
    for caller in (policy, algorithm):
        if caller is algorithm:
            obs_space = worker.for_policy(lambda p: p.observation_space, policy_id=pid)
            obs_space = getattr(obs_space, "original_space", obs_space)
        else:
            obs_space = policy.observation_space
        methods = ["single", "input_dict"] if caller is policy else ["single"]
        fetches = [False, True] if caller is algorithm else [False]
        for method, explore, full_fetch in itertools.product(methods, (True, False), fetches):
            timestep = int(rng.integers(0, 100_000))
            for unsquash in (True, False, None):
                for clip in (False,) if unsquash else (True, False, None):
                    obs = obs_space.sample()
                    if isinstance(obs_space, gym.spaces.Box):
                        obs = np.clip(obs, -1.0, 1.0)
                    state_in = _state_in(model, include_state)
                    prev_action = action_space.sample() if include_prev_action_reward else None
                    prev_reward = 1.0 if include_prev_action_reward else None
                    kwargs: dict[str, Any] = {"explore": explore, "timestep": timestep}
                    if caller is algorithm:
                        kwargs.update(full_fetch=full_fetch, policy_id=pid)
                    if method == "input_dict":
                        row: dict[str, Any] = {SampleBatch.OBS: obs}
                        if include_prev_action_reward:
                            row[SampleBatch.PREV_ACTIONS] = prev_action
                            row[SampleBatch.PREV_REWARDS] = prev_reward
                        for i, s in enumerate(state_in or []):
                            row[f"state_in_{i}"] = s
                        batch = SampleBatch({k: _as_array(v)[None] for k, v in row.items()})
                        batched = policy.compute_actions_from_input_dict(
                            input_dict=batch, explore=explore, timestep=timestep
                        )
                        out = (
                            batched[0][0],
                            [s[0] for s in batched[1]],
                            {k: v[0] for k, v in batched[2].items()},
                        )
                        single = policy.compute_single_action(
                            input_dict=row, explore=explore, timestep=timestep
                        )
                        if not explore:
                            _assert_same(out, single)
                    else:
                        out = caller.compute_single_action(
                            obs,
                            state_in,
                            prev_action=prev_action,
                            prev_reward=prev_reward,
                            unsquash_action=unsquash,
                            clip_action=clip,
                            **kwargs,
                        )
                    action: Any = out
                    if state_in or full_fetch or caller is policy:
                        action, state_out, _ = out
                        for s_in, s_out in zip(state_in or [], state_out, strict=False):
                            assert tuple(_as_array(s_in).shape) == tuple(np.shape(s_out))
                    if unsquash is None:
                        unsquash = bool(caller.config["normalize_actions"])
                    if clip is None:
                        clip = bool(caller.config["clip_actions"])
                    if method != "single" or caller is not algorithm:
                        continue
                    box = isinstance(action_space, gym.spaces.Box)
                    if (clip or unsquash or not box) and not action_space.contains(action):
                        raise AssertionError(f"{action!r} not in the env's {action_space}")
                    if box and not unsquash and caller.config["normalize_actions"]:
                        # In the policy's [-1, 1] coordinates: nothing near the env's bounds.
                        assert np.all(np.abs(action) <= 15.0), action


CONFIGS: dict[str, Callable[[], Any]] = {
    "ppo-cartpole": lambda: PPOConfig().environment("CartPole-v1").training(model=SMALL),
    "ppo-pendulum": lambda: PPOConfig().environment("Pendulum-v1").training(model=SMALL),
    "ppo-lstm-cartpole": lambda: PPOConfig().environment("CartPole-v1").training(model=LSTM_PREV),
    "ppo-lstm-pendulum": lambda: PPOConfig().environment("Pendulum-v1").training(model=LSTM),
    "ppo-attention-pendulum": lambda: (
        PPOConfig().environment("Pendulum-v1").training(model=ATTENTION)
    ),
    "pg-cartpole": lambda: PGConfig().environment("CartPole-v1").training(model=SMALL),
    "a2c-pendulum": lambda: A2CConfig().environment("Pendulum-v1").training(model=SMALL),
    "dqn-cartpole": lambda: DQNConfig().environment("CartPole-v1").training(model=SMALL),
    "sac-pendulum": lambda: (
        SACConfig()
        .environment("Pendulum-v1")
        .training(q_model_config=SMALL, policy_model_config=SMALL)
    ),
    "ddpg-pendulum": lambda: (
        DDPGConfig().environment("Pendulum-v1").training(actor_hiddens=[16], critic_hiddens=[16])
    ),
    "td3-pendulum": lambda: (
        TD3Config().environment("Pendulum-v1").training(actor_hiddens=[16], critic_hiddens=[16])
    ),
    "impala-cartpole": lambda: IMPALAConfig().environment("CartPole-v1").training(model=SMALL),
    "appo-pendulum": lambda: APPOConfig().environment("Pendulum-v1").training(model=SMALL),
    "marwil-cartpole": lambda: MARWILConfig().environment("CartPole-v1").training(model=SMALL),
    "bc-pendulum": lambda: BCConfig().environment("Pendulum-v1").training(model=SMALL),
}


def _build(name: str) -> Algorithm:
    config = CONFIGS[name]().rollouts(num_workers=0).debugging(seed=0)
    algo: Algorithm = config.build()
    return algo


@pytest.fixture(scope="module")
def ppo_pendulum() -> Iterator[Algorithm]:
    algo = _build("ppo-pendulum")
    yield algo
    algo.stop()


@pytest.fixture(scope="module")
def ppo_lstm() -> Iterator[Algorithm]:
    algo = _build("ppo-lstm-cartpole")
    yield algo
    algo.stop()


@pytest.mark.parametrize("name", list(CONFIGS))
def test_rllib_check_compute_single_action(name: str) -> None:
    algo = _build(name)
    try:
        rng = np.random.default_rng(0)
        for include_state, include_prev in itertools.product((False, True), (False, True)):
            check_compute_single_action(algo, include_state, include_prev, rng)
    finally:
        algo.stop()


@pytest.mark.parametrize("fixture", ["ppo_pendulum", "ppo_lstm"])
def test_greedy_input_dict_and_plain_calls_agree(
    fixture: str, request: pytest.FixtureRequest
) -> None:
    algo: Algorithm = request.getfixturevalue(fixture)
    policy = algo.get_policy()
    obs = np.clip(policy.observation_space.sample(), -1.0, 1.0)
    state = policy.get_initial_state()
    prev_action = policy.action_space.sample()
    plain = policy.compute_single_action(
        obs, state, prev_action=prev_action, prev_reward=0.5, explore=False
    )
    row: dict[str, Any] = {"obs": obs, "prev_actions": prev_action, "prev_rewards": 0.5}
    row.update({f"state_in_{i}": s for i, s in enumerate(state)})
    from_dict = policy.compute_single_action(input_dict=row, explore=False)
    _assert_same(plain, from_dict)
    batched = policy.compute_actions_from_input_dict(
        SampleBatch({k: np.asarray(v)[None] for k, v in row.items()}), explore=False
    )
    _assert_same(plain[0], batched[0][0])
    # The algorithm reads an input dict of raw inputs the same way.
    assert np.allclose(
        algo.compute_single_action(input_dict=row, explore=False)[0],
        algo.compute_single_action(
            obs, state, prev_action=prev_action, prev_reward=0.5, explore=False
        )[0],
    )


def test_a_policy_unsquashes_or_clips_only_when_asked(ppo_pendulum: Algorithm) -> None:
    policy = ppo_pendulum.get_policy()
    assert policy.config["normalize_actions"] is True and policy.config["clip_actions"] is False
    obs = np.array([1.0, 0.0, 0.5], dtype=np.float32)
    raw = policy.compute_single_action(obs, [], explore=False)[0]
    space = cast(gym.spaces.Box, policy.action_space)
    low, high = space.low, space.high  # the env's: [-2, 2]
    unsquashed = policy.compute_single_action(obs, explore=False, unsquash_action=True)[0]
    expected = low + (np.clip(raw, -1.0, 1.0) + 1.0) * 0.5 * (high - low)
    np.testing.assert_allclose(unsquashed, expected, rtol=1e-6)
    big = policy.compute_single_action(obs * 100, explore=True, clip_action=True)[0]
    assert np.all((low <= big) & (big <= high))
    # None: the policy's own coordinates, as RLlib's policy returns them.
    assert policy.compute_single_action(obs, explore=False, unsquash_action=None)[0] == raw


def test_algorithm_compute_actions_takes_the_plural_names(ppo_pendulum: Algorithm) -> None:
    obs = {"a": np.array([1.0, 0.0, 0.5], dtype=np.float32)}
    normalized = ppo_pendulum.compute_actions(obs, explore=False, unsquash_actions=False)["a"]
    env = ppo_pendulum.compute_actions(obs, explore=False, episodes=["episode"])["a"]
    assert np.allclose(env, 2.0 * np.clip(normalized, -1, 1))  # Pendulum: [-2, 2]
    singular = ppo_pendulum.compute_actions(obs, explore=False, unsquash_action=False)["a"]
    assert np.allclose(singular, normalized)
    both = ppo_pendulum.compute_actions(
        obs, explore=False, unsquash_actions=False, unsquash_action=False
    )
    assert np.allclose(both["a"], normalized)
    with pytest.raises(TypeError, match=r"unsquash_actions=True, unsquash_action=False"):
        ppo_pendulum.compute_actions(obs, unsquash_actions=True, unsquash_action=False)
    with pytest.raises(TypeError, match=r"'episode'.*'episodes'"):
        ppo_pendulum.compute_actions(obs, episode="episode")


def test_input_dicts_are_read_strictly(ppo_pendulum: Algorithm) -> None:
    policy = ppo_pendulum.get_policy()
    obs = np.zeros(3, dtype=np.float32)
    with pytest.raises(ValueError, match=r"column 'prev_action'.*'prev_actions'"):
        policy.compute_single_action(input_dict={"obs": obs, "prev_action": 0.0})
    with pytest.raises(ValueError, match=r"input_dict=\.\.\., obs=\.\.\.\): give either"):
        policy.compute_single_action(obs, input_dict={"obs": obs})
    with pytest.raises(ValueError, match=r"input_dict=\.\.\., observation=\.\.\.\)"):
        ppo_pendulum.compute_single_action(obs, input_dict={"obs": obs})
    with pytest.raises(ValueError, match=r"no memory"):
        policy.compute_single_action(input_dict={"obs": obs, "state_in_0": np.zeros(2)})
    # The trajectory's other columns are no acting inputs: unread, as in RLlib.
    batch = SampleBatch({"obs": obs[None], "t": np.zeros(1), "rewards": np.ones(1)})
    assert policy.compute_actions_from_input_dict(batch, explore=False)[0].shape == (1, 1)


def _model_views(policy: TorchPolicy) -> ViewRequirements:
    return cast(TorchModel, policy.model).view_requirements


def test_view_requirements(ppo_pendulum: Algorithm, ppo_lstm: Algorithm) -> None:
    plain = ppo_pendulum.get_policy()
    views = _model_views(plain)
    assert set(views) == {"obs", "actions", "rewards"}
    assert views["obs"].space == plain.observation_space and views["obs"].shift == 0
    assert views["actions"].space == plain.action_space
    assert not views["actions"].used_for_compute_actions and views["actions"].used_for_training
    assert {"new_obs", "terminateds"} <= set(plain.view_requirements)
    with pytest.raises(TypeError, match="read-only"):
        views["prev_n_obs"] = views["obs"]

    memory = ppo_lstm.get_policy()
    views = _model_views(memory)
    initial = memory.get_initial_state()
    assert len(initial) == 4  # the LSTM's and the value LSTM's (h, c)
    for i, state in enumerate(initial):
        space = views[f"state_in_{i}"].space
        assert space.shape == state.shape and space.sample().shape == state.shape
        assert views[f"state_in_{i}"].data_col == f"state_out_{i}"
        assert views[f"state_in_{i}"].shift == -1
        assert not views[f"state_out_{i}"].used_for_compute_actions
    assert "state_in_4" not in views
    assert views["prev_actions"].data_col == "actions" and views["prev_actions"].shift == -1
    assert views["prev_rewards"].shift == -1
    assert "state_in_0" in memory.view_requirements
