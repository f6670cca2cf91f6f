"""Acting on numpy (``runtime.core.numpy_acting``): a fully connected network's actions come
from the same random draws as torch's and its outputs are torch's to float32 rounding; the
arrays follow every change of the weights; anything the plan does not cover acts on torch."""

from __future__ import annotations

import copy
import pickle
from typing import Any, cast

import gymnasium as gym
import numpy as np
import numpy.typing as npt
import pytest
import torch

from rlconf import PPOConfig
from runtime.core import numpy_acting
from runtime.core.policy import TorchPolicy
from runtime.core.sample_batch import SampleBatch as SB

OBS_SPACE = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
DISCRETE = gym.spaces.Discrete(3)
BOX = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)


def _policy(action_space: gym.Space[Any], **model: Any) -> TorchPolicy:
    config = PPOConfig().training(model=cast(Any, {"fcnet_hiddens": [16, 16], **model}))
    torch.manual_seed(0)
    return TorchPolicy(OBS_SPACE, action_space, config.freeze(), algorithm="PPO")


def _obs(rows: int = 5) -> npt.NDArray[np.float32]:
    return np.random.default_rng(1).uniform(-1, 1, (rows, 3)).astype(np.float32)


def _count_numpy(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Records, for each act, whether the numpy path answered."""
    answered: list[bool] = []
    real = numpy_acting.numpy_actions

    def counting(*args: Any, **kw: Any) -> Any:
        out = real(*args, **kw)
        answered.append(out is not None)
        return out

    monkeypatch.setattr("runtime.core.lean_acting.numpy_actions", counting)
    return answered


def _both(
    policy: TorchPolicy, monkeypatch: pytest.MonkeyPatch, **kwargs: Any
) -> tuple[Any, Any, bool]:
    """compute_actions on numpy and on torch from the same random state; whether the numpy
    path answered, and whether both left torch's generator in the same state."""
    answered = _count_numpy(monkeypatch)
    torch.manual_seed(7)
    on_numpy = policy.compute_actions(_obs(), **kwargs)
    after_numpy = torch.get_rng_state()
    monkeypatch.setattr(numpy_acting, "use_numpy", False)
    torch.manual_seed(7)
    on_torch = policy.compute_actions(_obs(), **kwargs)
    monkeypatch.setattr(numpy_acting, "use_numpy", True)
    assert torch.equal(after_numpy, torch.get_rng_state()), "other random draws"
    return on_numpy, on_torch, answered[0]


def _assert_close(on_numpy: Any, on_torch: Any) -> None:
    actions, state, extra = on_numpy
    t_actions, t_state, t_extra = on_torch
    np.testing.assert_allclose(actions, t_actions, rtol=1e-5, atol=1e-6)
    assert actions.dtype == t_actions.dtype and actions.shape == t_actions.shape
    assert state == t_state == []
    assert extra.keys() == t_extra.keys()
    for name in extra:
        assert extra[name].dtype == t_extra[name].dtype, name
        np.testing.assert_allclose(extra[name], t_extra[name], rtol=1e-5, atol=1e-6, err_msg=name)


@pytest.mark.parametrize("space", [DISCRETE, BOX], ids=["discrete", "box"])
@pytest.mark.parametrize("shared", [False, True], ids=["separate_vf", "shared_vf"])
@pytest.mark.parametrize("activation", ["tanh", "relu"])
@pytest.mark.parametrize("explore", [True, False])
@pytest.mark.parametrize("value_preds", [True, False])
def test_numpy_acting_gives_torchs_actions_and_outputs(
    monkeypatch: pytest.MonkeyPatch,
    space: gym.Space[Any],
    shared: bool,
    activation: str,
    explore: bool,
    value_preds: bool,
) -> None:
    policy = _policy(space, vf_share_layers=shared, fcnet_activation=activation)
    on_numpy, on_torch, answered = _both(
        policy, monkeypatch, explore=explore, value_preds=value_preds
    )
    assert answered
    _assert_close(on_numpy, on_torch)
    if isinstance(space, gym.spaces.Discrete):
        np.testing.assert_array_equal(on_numpy[0], on_torch[0])
    assert (SB.VF_PREDS in on_numpy[2]) == value_preds


def test_no_final_linear_and_many_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    policy = _policy(DISCRETE, fcnet_hiddens=[8, 3], no_final_linear=True)
    on_numpy, on_torch, answered = _both(policy, monkeypatch)
    assert answered
    _assert_close(on_numpy, on_torch)
    np.testing.assert_array_equal(on_numpy[0], on_torch[0])


def test_value_function_after_acting_reads_the_last_rows() -> None:
    policy = _policy(DISCRETE, vf_share_layers=True)
    policy.compute_actions(_obs(2))
    _, _, extra = policy.compute_actions(_obs())
    with torch.inference_mode():
        values = cast(Any, policy.model).value_function().numpy()
    np.testing.assert_allclose(values, extra[SB.VF_PREDS], rtol=1e-5, atol=1e-6)


def _act_both(policy: TorchPolicy, monkeypatch: pytest.MonkeyPatch) -> bool:
    on_numpy, on_torch, answered = _both(policy, monkeypatch)
    _assert_close(on_numpy, on_torch)
    return answered


def test_the_arrays_follow_every_change_of_the_weights(monkeypatch: pytest.MonkeyPatch) -> None:
    policy = _policy(DISCRETE)
    model = cast(Any, policy.model)
    assert _act_both(policy, monkeypatch)
    before = policy.compute_actions(_obs(), explore=False)[2][SB.VF_PREDS]
    # In place, as an optimizer step or a weight load.
    with torch.no_grad():
        for param in model.parameters():
            param.add_(0.5)
    assert _act_both(policy, monkeypatch)
    assert not np.allclose(before, policy.compute_actions(_obs())[2][SB.VF_PREDS])
    policy.set_weights({k: v * 0.9 for k, v in policy.get_weights().items()})
    assert _act_both(policy, monkeypatch)
    # New storage under the same parameter.
    model.trunk[0].weight.data = torch.randn_like(model.trunk[0].weight)
    assert _act_both(policy, monkeypatch)
    # New parameters, and a new layer.
    state = {k: torch.randn_like(v) for k, v in model.state_dict().items()}
    model.load_state_dict(state, assign=True)
    assert _act_both(policy, monkeypatch)
    model.value_branch[2] = torch.nn.Linear(16, 16)
    assert _act_both(policy, monkeypatch)
    model.trunk[1] = torch.nn.ReLU()
    assert _act_both(policy, monkeypatch)


def test_hooked_layers_are_called_by_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    policy = _policy(DISCRETE)
    calls: list[str] = []
    handle = (
        cast(Any, policy.model)
        .value_branch[0]
        .register_forward_hook(lambda *args: calls.append("layer"))
    )
    assert not _act_both(policy, monkeypatch)
    assert calls == ["layer", "layer"]
    handle.remove()
    assert _act_both(policy, monkeypatch)
    assert calls == ["layer", "layer"]


@pytest.mark.parametrize(
    "space, model",
    [
        (DISCRETE, {"fcnet_activation": "elu"}),
        (DISCRETE, {"fcnet_activation": "swish"}),
        (BOX, {"free_log_std": True}),
        (gym.spaces.MultiDiscrete([2, 3]), {}),
    ],
    ids=["elu", "swish", "free_log_std", "multi_discrete"],
)
def test_what_the_plan_does_not_cover_acts_on_torch(
    monkeypatch: pytest.MonkeyPatch, space: gym.Space[Any], model: dict[str, Any]
) -> None:
    policy = _policy(space, **model)
    answered = _count_numpy(monkeypatch)
    policy.compute_actions(_obs())
    assert answered == [False]


def test_a_float64_model_acts_on_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    policy = _policy(DISCRETE)
    answered = _count_numpy(monkeypatch)
    policy.compute_actions(_obs())
    policy.model.double()
    assert (
        numpy_acting.numpy_actions(
            policy.model, policy.dist_class, _obs(), explore=True, value_preds=True
        )
        is None
    )
    assert answered == [True]


def test_a_model_that_acted_pickles_and_copies_without_its_plan(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The plan is held outside the model: a pickled or deep-copied model (a target network,
    ``torch.save``) acts on its own parameters' arrays."""
    policy = _policy(DISCRETE, fcnet_activation="relu")
    policy.compute_actions(_obs())
    model = cast(Any, policy.model)
    assert numpy_acting._PLANS.get(model) is not None
    restored = pickle.loads(pickle.dumps(model))
    copied = copy.deepcopy(model)
    with torch.no_grad():
        for param in (*restored.parameters(), *copied.parameters()):
            param.mul_(-1.0)
    for other in (restored, copied):
        assert numpy_acting._PLANS.get(other) is None
        on_numpy = numpy_acting.numpy_actions(
            other, policy.dist_class, _obs(), explore=False, value_preds=True
        )
        assert on_numpy is not None
        with torch.no_grad():
            x = torch.from_numpy(_obs())
            values = other.value_branch(x).squeeze(-1).numpy()
        np.testing.assert_allclose(on_numpy[1][SB.VF_PREDS], values, rtol=1e-5, atol=1e-6)
