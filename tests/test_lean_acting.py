"""The lean acting path (``runtime.core.lean_acting``) gives exactly what the general path of
``compute_actions`` gives - the same actions, log-likelihoods, distribution inputs, values and
random draws - and steps aside for what it does not cover (hooks, custom models, a
strategy's random first steps, memory). These tests keep the numpy path of the fully connected
network (``runtime.core.numpy_acting``, ``tests/test_numpy_acting.py``) off, so that the torch
operations of the lean path act."""

from __future__ import annotations

from typing import Any, cast

import gymnasium as gym
import numpy as np
import numpy.typing as npt
import pytest
import torch

from rlconf import PPOConfig
from runtime.core import lean_acting, numpy_acting
from runtime.core.policy import TorchPolicy
from runtime.core.sample_batch import SampleBatch as SB

OBS_SPACE = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
DISCRETE = gym.spaces.Discrete(3)
BOX = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)


@pytest.fixture(autouse=True)
def _torch_acting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(numpy_acting, "use_numpy", False)


def _policy(action_space: gym.Space[Any], model: Any = None, **exploration: Any) -> TorchPolicy:
    config = PPOConfig().training(model=cast(Any, model or {"fcnet_hiddens": [16, 16]}))
    if exploration:
        config = config.exploration(
            exploration_config={"type": "StochasticSampling", **exploration}
        )
    torch.manual_seed(0)
    return TorchPolicy(OBS_SPACE, action_space, config.freeze(), algorithm="PPO")


def _obs(rows: int = 5) -> npt.NDArray[np.float32]:
    return np.random.default_rng(1).uniform(-1, 1, (rows, 3)).astype(np.float32)


def _both_paths(
    policy: TorchPolicy, monkeypatch: pytest.MonkeyPatch, **kwargs: Any
) -> tuple[Any, Any, int]:
    """compute_actions through the lean path and through the general one, from the same
    random state; and how many times the lean path answered."""
    answered = 0
    real = lean_acting.lean_actions

    def counting(*args: Any, **kw: Any) -> Any:
        nonlocal answered
        out = real(*args, **kw)
        answered += out is not None
        return out

    monkeypatch.setattr("runtime.core.policy.lean_actions", counting)
    torch.manual_seed(7)
    lean = policy.compute_actions(_obs(), **kwargs)
    monkeypatch.setattr("runtime.core.policy.lean_actions", lambda *a, **k: None)
    torch.manual_seed(7)
    general = policy.compute_actions(_obs(), **kwargs)
    return lean, general, answered


def _assert_same(lean: Any, general: Any) -> None:
    actions, state, extra = lean
    g_actions, g_state, g_extra = general
    np.testing.assert_array_equal(actions, g_actions)
    assert state == g_state == []
    assert extra.keys() == g_extra.keys()
    for name in extra:
        np.testing.assert_array_equal(extra[name], g_extra[name], err_msg=name)


@pytest.mark.parametrize("space", [DISCRETE, BOX], ids=["discrete", "box"])
@pytest.mark.parametrize("shared", [False, True], ids=["separate_vf", "shared_vf"])
@pytest.mark.parametrize("explore", [True, False])
@pytest.mark.parametrize("value_preds", [True, False])
def test_lean_path_gives_exactly_the_general_paths_outputs(
    monkeypatch: pytest.MonkeyPatch,
    space: gym.Space[Any],
    shared: bool,
    explore: bool,
    value_preds: bool,
) -> None:
    policy = _policy(space, {"fcnet_hiddens": [16, 16], "vf_share_layers": shared})
    lean, general, answered = _both_paths(
        policy, monkeypatch, explore=explore, value_preds=value_preds
    )
    assert answered == 1
    _assert_same(lean, general)
    assert (SB.VF_PREDS in lean[2]) == value_preds


def test_lean_path_keeps_the_models_value_function_current() -> None:
    """``model.value_function()`` after acting reads the last pass, as after ``forward``."""
    policy = _policy(DISCRETE, {"fcnet_hiddens": [16, 16], "vf_share_layers": True})
    policy.compute_actions(_obs(2))
    _, _, extra = policy.compute_actions(_obs())
    with torch.inference_mode():
        values = cast(Any, policy.model).value_function().numpy()
    np.testing.assert_array_equal(values, extra[SB.VF_PREDS])


def test_hooks_are_called_on_the_lean_path_or_it_steps_aside(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    policy = _policy(DISCRETE)
    calls: list[str] = []
    layer = cast(Any, policy.model).trunk[0]
    handle = layer.register_forward_hook(lambda *args: calls.append("layer"))
    lean, general, answered = _both_paths(policy, monkeypatch)
    assert answered == 1 and calls == ["layer", "layer"]
    _assert_same(lean, general)
    handle.remove()
    handle = policy.model.register_forward_hook(lambda *args: calls.append("model"))
    _, _, answered = _both_paths(policy, monkeypatch)
    assert answered == 0 and calls[-2:] == ["model", "model"]
    handle.remove()
    handle = torch.nn.modules.module.register_module_forward_hook(
        lambda *args: calls.append("global")
    )
    try:
        _, _, answered = _both_paths(policy, monkeypatch)
    finally:
        handle.remove()
    assert answered == 0 and "global" in calls


def test_random_first_steps_and_memory_take_the_general_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    policy = _policy(DISCRETE, random_timesteps=10)
    _, _, answered = _both_paths(policy, monkeypatch, timestep=3)
    assert answered == 0
    _, _, answered = _both_paths(policy, monkeypatch, timestep=10)
    assert answered == 1
    _, _, answered = _both_paths(policy, monkeypatch, explore=False, timestep=3)
    assert answered == 1
    lstm = _policy(DISCRETE, {"fcnet_hiddens": [8], "use_lstm": True, "lstm_cell_size": 4})
    _, _, answered = _both_paths(lstm, monkeypatch)
    assert answered == 0
