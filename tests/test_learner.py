"""``Learner`` as a user relies on it: gradient steps, clipping, schedules, target networks,
several named optimizers, state round trips; and the adaptive KL coefficient of PPOLearner.

The learners here minimise a loss that is linear in the parameters, so that every gradient is
known by hand: ``mean_rows(obs . w) + mean_rows(rewards * v)`` has the gradient
``mean(obs)`` for ``w`` and ``mean(rewards)`` for ``v``.
"""

from __future__ import annotations

import io
import json
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch
from torch import nn

from rlconf import PPOConfig
from runtime import ActorCriticModule, Learner, RLModule, SampleBatch
from runtime.algorithms.ppo import PPOLearner
from runtime.core.learner import DEFAULT_OPTIMIZER
from runtime.core.sample_batch import SampleBatch as SB

Tensors = dict[str, torch.Tensor]
OBS_SPACE = gym.spaces.Box(-10.0, 10.0, (2,), np.float32)
ACTION_SPACE = gym.spaces.Discrete(2)

#: One row: grad w = [3, 4] (norm 5), grad v = [12]; the global norm is 13.
OBS = [[3.0, 4.0]]
REWARDS = [12.0]
W0 = [1.0, -1.0]
V0 = [0.5]


class VectorModule(RLModule):
    """Two parameter vectors ``w`` (actor) and ``v`` (critic), and a linear ``head`` that the
    target-network tests follow."""

    def __init__(self, config: Any) -> None:
        super().__init__(OBS_SPACE, ACTION_SPACE, config)
        self.w = nn.Parameter(torch.tensor(W0))
        self.v = nn.Parameter(torch.tensor(V0))
        self.head = nn.Linear(2, 1)
        with torch.no_grad():
            self.head.weight.copy_(torch.tensor([[1.0, 2.0]]))
            self.head.bias.copy_(torch.tensor([3.0]))

    def forward_train(self, batch: Tensors) -> Tensors:
        obs = batch[SB.OBS]
        return {SB.ACTION_DIST_INPUTS: obs * self.w, SB.VF_PREDS: self.v.expand(len(obs))}


class LinearLossLearner(Learner):
    """``mean(obs . w) + mean(rewards * v)``."""

    module: VectorModule

    def compute_loss(self, batch: Tensors) -> tuple[torch.Tensor, dict[str, Any]]:
        actor = (batch[SB.OBS] * self.module.w).sum(-1).mean()
        critic = (batch[SB.REWARDS] * self.module.v).mean()
        loss = actor + critic
        return loss, {"loss": loss}


class SGDLearner(LinearLossLearner):
    """Plain SGD, so that a step is exactly ``-lr * (clipped) gradient``."""

    def build_optimizers(self) -> dict[str, torch.optim.Optimizer]:
        return {DEFAULT_OPTIMIZER: torch.optim.SGD(self.module.parameters(), lr=self.cur_lr)}


def _config(**training: Any) -> Any:
    return PPOConfig().training(**training).freeze()


def _batch() -> SampleBatch:
    return SampleBatch(
        {SB.OBS: np.array(OBS, np.float32), SB.REWARDS: np.array(REWARDS, np.float32)}
    )


def _tensors() -> Tensors:
    return {SB.OBS: torch.tensor(OBS), SB.REWARDS: torch.tensor(REWARDS)}


def _params(module: VectorModule) -> tuple[list[float], list[float]]:
    return module.w.detach().tolist(), module.v.detach().tolist()


# ---------------------------------------------------------------------------- gradient steps


def test_gradient_step_moves_parameters_by_the_first_adam_step_and_counts_updates() -> None:
    lr = 0.1
    learner = LinearLossLearner(VectorModule(_config(lr=lr)), _config(lr=lr))
    assert learner.num_grad_updates == 0

    stats = learner.gradient_step(_tensors())
    # Adam's first step is lr * m / (sqrt(v) + eps) = lr * g / |g|: lr times the gradient's sign.
    w, v = _params(learner.module)
    np.testing.assert_allclose(w, [W0[0] - lr, W0[1] - lr], atol=1e-6)
    np.testing.assert_allclose(v, [V0[0] - lr], atol=1e-6)
    assert learner.num_grad_updates == 1
    assert float(stats["loss"]) == pytest.approx((3 * 1 + 4 * -1) + 12 * 0.5)
    assert not stats["loss"].requires_grad  # detached

    info = learner.update(_batch())
    assert learner.num_grad_updates == 2
    assert info["num_grad_updates"] == 2
    assert info["learner_stats"]["cur_lr"] == pytest.approx(lr)
    assert isinstance(info["learner_stats"]["loss"], float)
    assert _params(learner.module)[0] != w  # the second step moved them again


def test_grad_clip_reports_the_norm_before_clipping_and_limits_the_step() -> None:
    lr = 0.1
    # Global gradient norm sqrt(3^2 + 4^2 + 12^2) = 13; clipped to 6.5 it is halved.
    clipped = SGDLearner(VectorModule(_config()), _config(lr=lr, grad_clip=6.5))
    stats = clipped.gradient_step(_tensors())
    assert float(stats["grad_gnorm"]) == pytest.approx(13.0)
    w, v = _params(clipped.module)
    np.testing.assert_allclose(w, [W0[0] - lr * 1.5, W0[1] - lr * 2.0], rtol=1e-5)
    np.testing.assert_allclose(v, [V0[0] - lr * 6.0], rtol=1e-5)
    assert clipped.info({})["learner_stats"]["cur_lr"] == pytest.approx(lr)

    # A clip above the norm leaves the step alone but still reports the norm.
    loose = SGDLearner(VectorModule(_config()), _config(lr=lr, grad_clip=100.0))
    stats = loose.gradient_step(_tensors())
    assert float(stats["grad_gnorm"]) == pytest.approx(13.0)
    np.testing.assert_allclose(_params(loose.module)[1], [V0[0] - lr * 12.0], rtol=1e-5)

    # No grad_clip: no norm reported, the whole gradient applied.
    unclipped = SGDLearner(VectorModule(_config()), _config(lr=lr))
    stats = unclipped.gradient_step(_tensors())
    assert "grad_gnorm" not in stats
    np.testing.assert_allclose(_params(unclipped.module)[0], [W0[0] - 0.3, W0[1] - 0.4], rtol=1e-5)


# ---------------------------------------------------------------------------- schedules


def test_lr_schedule_sets_the_optimizer_lr_through_on_timestep() -> None:
    config = _config(lr=0.5, lr_schedule=[[0, 0.1], [100, 0.0]])
    learner = LinearLossLearner(VectorModule(config), config)
    optimizer = learner.optimizers[DEFAULT_OPTIMIZER]
    # The schedule wins over lr.
    assert learner.cur_lr == pytest.approx(0.1)
    assert optimizer.param_groups[0]["lr"] == pytest.approx(0.1)

    learner.on_timestep(50)
    assert learner.global_timestep == 50
    assert learner.cur_lr == pytest.approx(0.05)
    assert optimizer.param_groups[0]["lr"] == pytest.approx(0.05)
    # The step the optimizer takes uses it: Adam's first step is lr * sign(gradient).
    learner.gradient_step(_tensors())
    np.testing.assert_allclose(_params(learner.module)[1], [V0[0] - 0.05], atol=1e-6)

    learner.on_timestep(1000)  # past the last point: its value
    assert learner.cur_lr == 0.0
    assert optimizer.param_groups[0]["lr"] == 0.0
    assert learner.info({})["learner_stats"]["cur_lr"] == 0.0


class ScheduledLearner(LinearLossLearner):
    def setup(self) -> None:
        self.add_schedule("beta", [[0, 1.0], [10, 0.0]], 5.0)
        self.add_schedule("gamma_like", None, 0.7)


def test_add_schedule_values_follow_the_timestep_and_constants_stay() -> None:
    learner = ScheduledLearner(VectorModule(_config()), _config())
    assert learner.scheduled("beta") == 1.0  # the points win over the constant
    assert learner.scheduled("gamma_like") == 0.7
    learner.on_timestep(5)
    assert learner.scheduled("beta") == pytest.approx(0.5)
    assert learner.scheduled("gamma_like") == 0.7
    learner.on_timestep(25)
    assert learner.scheduled("beta") == 0.0
    with pytest.raises(KeyError):
        learner.scheduled("no_such_schedule")


# ---------------------------------------------------------------------------- target networks


class TargetLearner(LinearLossLearner):
    def setup(self) -> None:
        self.target_head = self.add_target_network("head", self.module.head)

    def compute_loss(self, batch: Tensors) -> tuple[torch.Tensor, dict[str, Any]]:
        loss, stats = super().compute_loss(batch)
        obs = batch[SB.OBS]
        return loss + (self.module.head(obs) - self.target_head(obs)).pow(2).mean(), stats


def _head(module: nn.Linear) -> tuple[list[list[float]], list[float]]:
    return module.weight.detach().tolist(), module.bias.detach().tolist()


def test_target_network_hard_copy_and_polyak_updates_match_hand_values() -> None:
    learner = TargetLearner(VectorModule(_config()), _config())
    source, target = learner.module.head, learner.target_head
    assert target is not source
    assert _head(target) == ([[1.0, 2.0]], [3.0])

    with torch.no_grad():
        source.weight.copy_(torch.tensor([[3.0, 6.0]]))
        source.bias.copy_(torch.tensor([-1.0]))
    assert _head(target) == ([[1.0, 2.0]], [3.0])  # a copy, not the same tensors

    learner.update_target_networks(tau=0.5)  # 0.5 * source + 0.5 * target
    assert _head(target) == ([[2.0, 4.0]], [1.0])
    learner.update_target_networks(tau=0.5)
    assert _head(target) == ([[2.5, 5.0]], [0.0])
    learner.update_target_networks(tau=0.25)  # 0.25 * [3, 6, -1] + 0.75 * [2.5, 5, 0]
    np.testing.assert_allclose(target.weight.detach().numpy(), [[2.625, 5.25]])
    np.testing.assert_allclose(target.bias.detach().numpy(), [-0.25])
    learner.update_target_networks(tau=1.0)  # a hard copy
    assert _head(target) == ([[3.0, 6.0]], [-1.0])
    learner.update_target_networks()  # tau defaults to 1
    assert _head(target) == _head(source)


def test_target_networks_get_no_gradients_and_only_move_on_update() -> None:
    learner = TargetLearner(VectorModule(_config(lr=0.1)), _config(lr=0.1))
    target = learner.target_head
    assert all(not p.requires_grad for p in target.parameters())
    optimized = {id(p) for p in learner.optimizers[DEFAULT_OPTIMIZER].param_groups[0]["params"]}
    assert not optimized & {id(p) for p in target.parameters()}

    before = _head(target)
    # The head differs from its target after the source moves, so the loss has a gradient
    # for the head (and would have one for the target, were it trainable).
    with torch.no_grad():
        learner.module.head.bias.add_(1.0)
    learner.gradient_step(_tensors())
    assert all(p.grad is None for p in target.parameters())
    assert learner.module.head.bias.grad is not None
    assert _head(target) == before
    assert _head(learner.module.head) != before

    learner.update_target_networks(tau=1.0)
    assert _head(target) == _head(learner.module.head)
    assert "targets/head" in learner.get_tensor_state()


# ---------------------------------------------------------------------------- two optimizers


class TwoOptimizerLearner(LinearLossLearner):
    """An actor and a critic optimizer (SGD), the critic at twice the scheduled lr."""

    def build_optimizers(self) -> dict[str, torch.optim.Optimizer]:
        return {
            "actor": torch.optim.SGD([self.module.w], lr=self.lr_of("actor")),
            "critic": torch.optim.SGD([self.module.v], lr=self.lr_of("critic")),
        }

    def lr_of(self, optimizer: str) -> float:
        return self.cur_lr * (2.0 if optimizer == "critic" else 1.0)


def test_two_named_optimizers_step_their_own_parameters_with_their_own_lr_and_clip() -> None:
    config = _config(lr=0.1, lr_schedule=[[0, 0.1], [10, 0.05]], grad_clip=100.0)
    learner = TwoOptimizerLearner(VectorModule(config), config)
    assert set(learner.optimizers) == {"actor", "critic"}

    stats = learner.gradient_step(_tensors(), optimizer="actor")
    w, v = _params(learner.module)
    np.testing.assert_allclose(w, [W0[0] - 0.1 * 3, W0[1] - 0.1 * 4], rtol=1e-6)
    assert v == V0  # the critic's optimizer did not step
    # Clipping sees only this optimizer's parameters: |[3, 4]| = 5, not 13.
    assert float(stats["grad_gnorm"]) == pytest.approx(5.0)
    assert learner.num_grad_updates == 1

    stats = learner.gradient_step(_tensors(), optimizer="critic")
    np.testing.assert_allclose(_params(learner.module)[1], [V0[0] - 0.2 * 12], rtol=1e-6)
    assert _params(learner.module)[0] == w  # the actor did not move
    assert float(stats["grad_gnorm"]) == pytest.approx(12.0)
    assert learner.num_grad_updates == 2

    # The schedule reaches both, each through lr_of.
    learner.on_timestep(10)
    assert learner.optimizers["actor"].param_groups[0]["lr"] == pytest.approx(0.05)
    assert learner.optimizers["critic"].param_groups[0]["lr"] == pytest.approx(0.1)
    # A second actor step starts from fresh gradients (none left over from the critic step).
    learner.gradient_step(_tensors(), optimizer="actor")
    np.testing.assert_allclose(
        _params(learner.module)[0], [w[0] - 0.05 * 3, w[1] - 0.05 * 4], rtol=1e-6
    )
    assert set(learner.get_tensor_state()) == {"optimizers/actor", "optimizers/critic"}


# ---------------------------------------------------------------------------- state


def _through_a_checkpoint(
    state: dict[str, Any], tensors: dict[str, dict[str, Any]]
) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """What a checkpoint does to the two states: JSON, and torch.save/torch.load."""
    buffer = io.BytesIO()
    torch.save(tensors, buffer)
    buffer.seek(0)
    loaded: dict[str, dict[str, Any]] = torch.load(buffer, weights_only=True)
    return json.loads(json.dumps(state)), loaded


def _assert_same_optimizer_state(a: dict[str, Any], b: dict[str, Any]) -> None:
    assert a["param_groups"] == b["param_groups"]
    assert set(a["state"]) == set(b["state"])
    for index, values in a["state"].items():
        assert set(values) == set(b["state"][index])
        for name, tensor in values.items():
            torch.testing.assert_close(tensor, b["state"][index][name])


def test_learner_state_and_tensor_state_round_trip_into_a_fresh_learner() -> None:
    config = _config(lr=0.1, lr_schedule=[[0, 0.1], [100, 0.01]])
    original = TargetLearner(VectorModule(config), config)
    for _ in range(3):
        original.gradient_step(_tensors())
    with torch.no_grad():
        original.module.head.bias.add_(1.0)
    original.update_target_networks(tau=0.5)  # the target now lags the head by 0.5
    original.on_timestep(40)

    state, tensors = _through_a_checkpoint(original.get_state(), original.get_tensor_state())
    assert state["num_grad_updates"] == 3 and state["global_timestep"] == 40

    module = VectorModule(config)
    module.load_state_dict(original.module.state_dict())  # the weights travel apart
    restored = TargetLearner(module, config)
    restored.set_state(state)
    restored.set_tensor_state(tensors)

    assert restored.num_grad_updates == 3
    assert restored.global_timestep == 40
    assert restored.cur_lr == pytest.approx(original.cur_lr)
    assert restored.cur_lr == pytest.approx(0.1 + 0.4 * (0.01 - 0.1))
    assert _head(restored.target_head) == _head(original.target_head)
    assert _head(restored.target_head) != _head(restored.module.head)
    _assert_same_optimizer_state(
        original.optimizers[DEFAULT_OPTIMIZER].state_dict(),
        restored.optimizers[DEFAULT_OPTIMIZER].state_dict(),
    )
    # Adam's moments came along: the next step is the same on both.
    original.gradient_step(_tensors())
    restored.gradient_step(_tensors())
    assert _params(restored.module) == _params(original.module)
    assert restored.num_grad_updates == original.num_grad_updates == 4


# ---------------------------------------------------------------------------- PPOLearner


def _ppo_config(**training: Any) -> Any:
    settings: dict[str, Any] = {
        "train_batch_size": 16,
        "sgd_minibatch_size": 4,
        "num_sgd_iter": 2,
        "kl_coeff": 0.2,
        "kl_target": 0.01,
        "model": {"fcnet_hiddens": [8]},
    }
    settings.update(training)
    config = PPOConfig().rollouts(rollout_fragment_length=16).training(**settings)
    return config.debugging(seed=3).freeze()


def _ppo_learner(config: Any) -> PPOLearner:
    torch.manual_seed(0)
    return PPOLearner(ActorCriticModule(OBS_SPACE, ACTION_SPACE, config), config)


def _ppo_batch(learner: PPOLearner, logit_shift: float) -> SampleBatch:
    """16 rows sampled (as it were) by the learner's own module with its logits shifted by
    ``[logit_shift, -logit_shift]``."""
    rng = np.random.default_rng(0)
    obs = rng.normal(size=(16, 2)).astype(np.float32)
    with torch.no_grad():
        out = learner.module.forward_train({SB.OBS: torch.from_numpy(obs)})
    logits = out[SB.ACTION_DIST_INPUTS].numpy() + np.array([logit_shift, -logit_shift])
    actions = rng.integers(0, 2, 16)
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    return SampleBatch(
        {
            SB.OBS: obs,
            SB.ACTIONS: actions,
            SB.ACTION_LOGP: log_probs[np.arange(16), actions].astype(np.float32),
            SB.ACTION_DIST_INPUTS: logits.astype(np.float32),
            SB.VF_PREDS: out[SB.VF_PREDS].numpy(),
            SB.ADVANTAGES: rng.normal(size=16).astype(np.float32),
            SB.VALUE_TARGETS: rng.normal(size=16).astype(np.float32),
        }
    )


def test_ppo_update_kl_raises_by_half_above_twice_the_target_and_halves_below_half() -> None:
    learner = _ppo_learner(_ppo_config())
    assert learner.kl_coeff == 0.2 and learner.kl_target == 0.01
    assert learner.update_kl(0.021) == pytest.approx(0.3)  # > 2 * 0.01: x 1.5
    assert learner.kl_coeff == pytest.approx(0.3)
    assert learner.update_kl(0.0049) == pytest.approx(0.15)  # < 0.5 * 0.01: x 0.5
    assert learner.update_kl(0.01) == pytest.approx(0.15)  # on target: unchanged
    assert learner.update_kl(0.02) == pytest.approx(0.15)  # exactly 2x: unchanged
    assert learner.update_kl(0.005) == pytest.approx(0.15)  # exactly 0.5x: unchanged


def test_ppo_update_adapts_kl_coeff_from_the_kl_it_measured() -> None:
    # The sampling policy far from the current one: a KL well above 2 * target.
    far = _ppo_learner(_ppo_config())
    info = far.update(_ppo_batch(far, logit_shift=3.0))
    stats = info["learner_stats"]
    assert stats["kl"] > 0.02
    assert far.kl_coeff == pytest.approx(0.3)
    assert stats["kl_coeff"] == pytest.approx(0.3)
    assert info["num_grad_updates"] == 2 * (16 // 4)  # num_sgd_iter epochs of 4 minibatches

    # The sampling policy is the current one and a tiny lr keeps it so: KL ~0, the coefficient
    # halves.
    same = _ppo_learner(_ppo_config(lr=1e-9))
    stats = same.update(_ppo_batch(same, logit_shift=0.0))["learner_stats"]
    assert stats["kl"] == pytest.approx(0.0, abs=1e-6)
    assert same.kl_coeff == pytest.approx(0.1)


def test_ppo_learner_state_round_trip_restores_kl_coeff_lr_adam_and_shuffling() -> None:
    config = _ppo_config(lr=1e-3, lr_schedule=[[0, 1e-3], [10_000, 1e-4]])
    original = _ppo_learner(config)
    original.update(_ppo_batch(original, logit_shift=3.0))
    original.on_timestep(5_000)
    assert original.kl_coeff != 0.2

    state, tensors = _through_a_checkpoint(original.get_state(), original.get_tensor_state())
    module = ActorCriticModule(OBS_SPACE, ACTION_SPACE, config)
    module.load_state_dict(original.module.state_dict())
    restored = PPOLearner(module, config)
    restored.set_state(state)
    restored.set_tensor_state(tensors)

    assert restored.kl_coeff == original.kl_coeff
    assert restored.cur_lr == pytest.approx(5.5e-4)
    assert restored.num_grad_updates == original.num_grad_updates
    _assert_same_optimizer_state(
        original.optimizers[DEFAULT_OPTIMIZER].state_dict(),
        restored.optimizers[DEFAULT_OPTIMIZER].state_dict(),
    )
    # The next update shuffles the same way and steps the same way on both.
    batch = _ppo_batch(original, logit_shift=1.0)
    first = original.update(batch)["learner_stats"]
    second = restored.update(batch)["learner_stats"]
    assert first == second
    for a, b in zip(original.module.parameters(), restored.module.parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_ppo_epochs_of_one_minibatch_of_every_row_are_not_shuffled() -> None:
    # The same loss in any row order: the epoch's minibatch is the batch as it came, and the
    # shuffling generator is left where it was.
    whole = _ppo_learner(_ppo_config(sgd_minibatch_size=16))
    batch = _ppo_batch(whole, logit_shift=1.0)
    seen: list[torch.Tensor] = []
    step = whole.gradient_step

    def recording(tensors: Any, optimizer: str | None = None) -> dict[str, Any]:
        seen.append(tensors[SB.OBS].clone())
        return step(tensors, optimizer)

    whole.gradient_step = recording  # type: ignore[method-assign]
    rng_before = dict(whole._rng.bit_generator.state)
    info = whole.update(batch)
    assert info["num_grad_updates"] == 2  # num_sgd_iter epochs of one minibatch
    for rows in seen:
        torch.testing.assert_close(rows, torch.from_numpy(batch[SB.OBS]), rtol=0, atol=0)
    assert whole._rng.bit_generator.state == rng_before

    # Minibatches of a quarter of the rows: each epoch draws a permutation.
    parts = _ppo_learner(_ppo_config(sgd_minibatch_size=4))
    rng_before = dict(parts._rng.bit_generator.state)
    parts.update(batch)
    assert parts._rng.bit_generator.state != rng_before
