"""The built-in networks call their layers' ``forward`` directly where nothing is hooked
(``runtime.core.layer_calls``): the same outputs and gradients as calling them as modules, and
every hook still runs - on a layer, on the model, or registered globally. The off-policy
learners turn only the columns their losses read into tensors, unless a subclass has losses of
its own."""

from __future__ import annotations

from typing import Any, cast

import gymnasium as gym
import numpy as np
import pytest
import torch
from torch import nn

from rlconf import DQNConfig, PPOConfig, SACConfig
from rlconf.model_config import ModelConfigDict
from runtime.algorithms.dqn import QModule
from runtime.algorithms.dqn.learner import DQNLearner
from runtime.algorithms.sac.module import SACModule
from runtime.buffers.replay_buffer import TD_LOSS_COLUMNS
from runtime.core import layer_calls
from runtime.core.layer_calls import run_layers, run_model
from runtime.core.models import TrunkModel
from runtime.core.module import ActorCriticModule
from runtime.core.postprocessing import N_STEP_GAMMA
from runtime.core.sample_batch import SampleBatch
from runtime.core.sample_batch import SampleBatch as SB

OBS = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)


def _ppo_module() -> ActorCriticModule:
    torch.manual_seed(0)
    config = PPOConfig().training(model={"fcnet_hiddens": [8, 8]}).freeze()
    return ActorCriticModule(OBS, gym.spaces.Discrete(2), config)


def _dqn_module(**training: Any) -> QModule:
    torch.manual_seed(0)
    config = DQNConfig().training(model={"fcnet_hiddens": [8, 8]}, **training).freeze()
    return QModule(OBS, gym.spaces.Discrete(2), config)


def _sac_module() -> SACModule:
    torch.manual_seed(0)
    model: ModelConfigDict = {"fcnet_hiddens": [8]}
    config = SACConfig().training(q_model_config=model, policy_model_config=model).freeze()
    return SACModule(OBS, gym.spaces.Box(-1.0, 1.0, (2,), np.float32), config)


def _obs(rows: int = 5) -> torch.Tensor:
    return torch.as_tensor(np.random.default_rng(1).uniform(-1, 1, (rows, 3)), dtype=torch.float32)


def _outputs_and_grads(module: nn.Module, forward: Any) -> tuple[torch.Tensor, list[torch.Tensor]]:
    module.zero_grad(set_to_none=True)
    out: torch.Tensor = forward()
    out.square().sum().backward()  # type: ignore[no-untyped-call]
    return out.detach(), [p.grad.clone() for p in module.parameters() if p.grad is not None]


def _passes() -> list[tuple[nn.Module, Any]]:
    ppo, sac = _ppo_module(), _sac_module()
    dqn, dueling = _dqn_module(dueling=False), _dqn_module(dueling=True)
    obs, actions = _obs(), torch.zeros(5, 2)
    return [
        (ppo, lambda: ppo.forward_train({SB.OBS: obs})[SB.ACTION_DIST_INPUTS]),
        (ppo, lambda: ppo.forward_train({SB.OBS: obs})[SB.VF_PREDS]),
        (ppo, lambda: ppo.compute_values({SB.OBS: obs})),
        (dqn, lambda: dqn.q_values(obs)),
        (dueling, lambda: dueling.q_values(obs)),
        (sac, lambda: sac.policy_inputs(obs)),
        (sac, lambda: sac.q_values(obs, actions)),
    ]


def test_direct_calls_give_the_module_calls_outputs_and_gradients_exactly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    direct = [_outputs_and_grads(module, forward) for module, forward in _passes()]
    monkeypatch.setattr(layer_calls, "no_global_hooks", lambda: False)
    monkeypatch.setattr("runtime.core.models.no_global_hooks", lambda: False)
    called = [_outputs_and_grads(module, forward) for module, forward in _passes()]
    for (out, grads), (out_m, grads_m) in zip(direct, called, strict=True):
        torch.testing.assert_close(out, out_m, rtol=0, atol=0)
        assert len(grads) == len(grads_m) > 0
        for g, g_m in zip(grads, grads_m, strict=True):
            torch.testing.assert_close(g, g_m, rtol=0, atol=0)


def _doubling(module: nn.Module, args: Any, output: torch.Tensor) -> torch.Tensor:
    return output * 2.0


def test_a_hook_on_a_layer_runs_in_the_learners_passes() -> None:
    obs = _obs()
    ppo = _ppo_module()
    before = ppo.forward_train({SB.OBS: obs})
    model = cast(TrunkModel, ppo.model)
    handles = [
        model.trunk[0].register_forward_hook(_doubling),
        cast(nn.Sequential, model.value_branch)[0].register_forward_hook(_doubling),
    ]
    after = ppo.forward_train({SB.OBS: obs})
    for key in (SB.ACTION_DIST_INPUTS, SB.VF_PREDS):
        assert not torch.equal(before[key], after[key])
    for handle in handles:
        handle.remove()
    torch.testing.assert_close(ppo.forward_train({SB.OBS: obs})[SB.VF_PREDS], before[SB.VF_PREDS])

    dqn = _dqn_module(dueling=False)
    plain = dqn.q_values(obs)
    handle = dqn.advantage[-1].register_forward_hook(_doubling)
    torch.testing.assert_close(dqn.q_values(obs), plain * 2.0)
    handle.remove()


def test_a_global_hook_sees_every_layer() -> None:
    seen: list[str] = []

    def record(module: nn.Module, args: Any, output: Any) -> None:
        seen.append(type(module).__name__)

    dqn = _dqn_module()
    handle = nn.modules.module.register_module_forward_hook(record)
    try:
        dqn.q_values(_obs())
    finally:
        handle.remove()
    # Every layer of the pass, called as a module: the trunk's, the last layer's and the dueling
    # heads' (not the model's unused value branch).
    assert dqn.value is not None
    model = cast(TrunkModel, dqn.model)
    passed = [*model.trunk, model.logits, *dqn.advantage, *cast(nn.Sequential, dqn.value)]
    assert seen.count("Linear") == sum(isinstance(m, nn.Linear) for m in passed) == 7
    assert seen.count("Tanh") == 2 and seen.count("ReLU") == 2
    assert {"FullyConnectedNetwork", "Sequential", "Identity"} <= set(seen)
    seen.clear()
    dqn.q_values(_obs())
    assert seen == []  # removed: nothing records


def test_run_layers_is_the_modules_call() -> None:
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Sequential(nn.Linear(4, 2)))
    x = torch.randn(5, 3)
    torch.testing.assert_close(run_layers(net, x), net(x), rtol=0, atol=0)


def test_run_model_calls_the_models_hooks() -> None:
    dqn = _dqn_module()
    inputs = {SB.OBS: _obs(), "obs_flat": _obs()}
    plain, _ = run_model(dqn.model, inputs, [], None)
    calls: list[int] = []
    handle = dqn.model.register_forward_pre_hook(lambda module, args: calls.append(1))
    hooked, _ = run_model(dqn.model, inputs, [], None)
    handle.remove()
    assert calls == [1]
    torch.testing.assert_close(hooked, plain, rtol=0, atol=0)


# -------------------------------------------------------------------- the columns learned on


def _replayed(rows: int = 4) -> SampleBatch:
    rng = np.random.default_rng(0)
    return SampleBatch(
        {
            SB.OBS: rng.uniform(-1, 1, (rows, 3)).astype(np.float32),
            SB.NEXT_OBS: rng.uniform(-1, 1, (rows, 3)).astype(np.float32),
            SB.ACTIONS: np.arange(rows) % 2,
            SB.REWARDS: np.ones(rows, np.float32),
            SB.TERMINATEDS: np.zeros(rows, bool),
            N_STEP_GAMMA: np.full(rows, 0.99, np.float32),
            "weights": np.ones(rows, np.float32),
            SB.EPS_ID: np.arange(rows),
            "extra_column": np.full(rows, 7.0, np.float32),
        }
    )


class _OwnLoss(DQNLearner):
    """A user's DQN learner whose loss reads a column of its own."""

    def compute_loss(self, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, dict[str, Any]]:
        loss, stats = super().compute_loss(batch)
        return loss + 0.0 * batch["extra_column"].sum(), stats


def test_the_dqn_learner_converts_only_the_td_columns_and_a_subclass_gets_every_column(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    config = DQNConfig().training(model={"fcnet_hiddens": [8]}).freeze()
    converted: list[set[str]] = []
    real = DQNLearner.batch_tensors

    def spy(self: DQNLearner, batch: SampleBatch, columns: Any = None) -> Any:
        out = real(self, batch, columns)
        converted.append(set(out))
        return out

    monkeypatch.setattr(DQNLearner, "batch_tensors", spy)
    for kind in (DQNLearner, _OwnLoss):
        learner = kind(QModule(OBS, gym.spaces.Discrete(2), config), config)
        info = learner.update(_replayed())
        assert np.isfinite(info["learner_stats"]["mean_q"])
        assert info["td_error"].shape == (4,)
    assert converted[0] == set(TD_LOSS_COLUMNS)
    assert converted[1] == set(TD_LOSS_COLUMNS) | {SB.EPS_ID, "extra_column"}
