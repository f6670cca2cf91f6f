"""``model.fcnet_use_layernorm`` (RLlib's name for it): a LayerNorm after each hidden layer of
the MLP over flat observations, before its activation, in every network built from that MLP
(policy and value trunks, Q-networks, memory models' feature layers); refused where no such MLP
is built (image observations, DDPG without its state preprocessor)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
from gymnasium.spaces import Box, Discrete
from torch import nn

from rlconf import ConfigError, DDPGConfig, PPOConfig, SACConfig
from rlconf.model_config import MODEL_DEFAULTS
from runtime import ModelCatalog
from runtime.core.feature_trunk import feature_trunk
from runtime.core.models import FullyConnectedNetwork


def _model(**overrides: Any) -> dict[str, Any]:
    return {**MODEL_DEFAULTS, **overrides}


def _kinds(module: nn.Module) -> list[type[nn.Module]]:
    return [type(layer) for layer in module.modules() if not list(layer.children())]


def test_each_hidden_layer_is_normalized_before_its_activation() -> None:
    model = ModelCatalog.get_model(
        Box(-1.0, 1.0, (4,)),
        Discrete(2),
        2,
        _model(
            fcnet_hiddens=[32, 16],
            fcnet_activation="relu",
            fcnet_use_layernorm=True,
            vf_share_layers=False,
        ),
        "m",
    )
    assert isinstance(model, FullyConnectedNetwork)
    trunk = _kinds(model.trunk)
    assert trunk == [nn.Linear, nn.LayerNorm, nn.ReLU, nn.Linear, nn.LayerNorm, nn.ReLU]
    # the separate value network is built from the same MLP
    assert _kinds(model.value_branch).count(nn.LayerNorm) == 2
    # it acts: each hidden layer's output, before the activation, has mean 0 and variance 1
    # per row whatever the input's scale
    x = torch.randn(64, 4) * 50.0 + 7.0
    layers = list(model.trunk.children())
    first = layers[1](layers[0](x))
    assert torch.allclose(first.mean(-1), torch.zeros(64), atol=1e-4)
    assert torch.allclose(first.var(-1, unbiased=False), torch.ones(64), atol=1e-3)


def test_off_by_default_and_the_network_is_unchanged() -> None:
    space, actions = Box(-1.0, 1.0, (4,)), Discrete(2)
    torch.manual_seed(0)
    plain = ModelCatalog.get_model(space, actions, 2, _model(fcnet_hiddens=[8]), "m")
    torch.manual_seed(0)
    off = ModelCatalog.get_model(
        space, actions, 2, _model(fcnet_hiddens=[8], fcnet_use_layernorm=False), "m"
    )
    assert nn.LayerNorm not in _kinds(plain)
    for a, b in zip(plain.state_dict().values(), off.state_dict().values(), strict=True):
        assert torch.equal(a, b)


def test_memory_models_feature_layers_get_it() -> None:
    trunk, size, key = feature_trunk(
        Box(-1.0, 1.0, (3,)), _model(fcnet_hiddens=[16], fcnet_use_layernorm=True)
    )
    assert (size, key) == (16, "obs_flat")
    assert _kinds(trunk)[:2] == [nn.Linear, nn.LayerNorm] and len(_kinds(trunk)) == 3


def test_image_observations_refuse_it() -> None:
    with pytest.raises(ConfigError) as info:
        ModelCatalog.get_model(
            Box(0, 255, (84, 84, 3), np.uint8),
            Discrete(2),
            2,
            _model(fcnet_use_layernorm=True),
            "m",
        )
    assert "model.fcnet_use_layernorm" in str(info.value) and "conv" in str(info.value)


def test_ppo_trains_with_it_and_acts_through_the_normalized_network() -> None:
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .rollouts(num_workers=0, rollout_fragment_length=32)
        .training(
            train_batch_size=64,
            sgd_minibatch_size=32,
            num_sgd_iter=1,
            model={"fcnet_hiddens": [16], "fcnet_use_layernorm": True},
        )
        .debugging(seed=0)
    )
    algo = config.build()
    try:
        assert algo.train()["timesteps_total"] == 64
        model = algo.get_policy().model
        assert nn.LayerNorm in _kinds(model)
        # acting goes through the LayerNorm: zeroing its gain makes every action's logit the
        # output layer's bias alone
        with torch.no_grad():
            model.trunk[1].weight.zero_()
            model.trunk[1].bias.zero_()
        _, _, extra = algo.get_policy().compute_actions(np.zeros((3, 4), np.float32) + 1.0)
        logits = extra["action_dist_inputs"]
        assert np.allclose(logits, model.logits.bias.detach().numpy(), atol=1e-6)
    finally:
        algo.stop()


def test_sacs_q_networks_take_it_from_q_model_config() -> None:
    algo = (
        SACConfig()
        .environment("Pendulum-v1")
        .training(
            q_model_config={"fcnet_hiddens": [16], "fcnet_use_layernorm": True},
            policy_model_config={"fcnet_hiddens": [16]},
            num_steps_sampled_before_learning_starts=10,
            train_batch_size=8,
        )
        .reporting(min_sample_timesteps_per_reporting=20)
        .debugging(seed=0)
        .build()
    )
    try:
        algo.train()
        module = algo.get_policy().module
        assert all(nn.LayerNorm in _kinds(q) for q in module.q_nets)
        assert nn.LayerNorm not in _kinds(module.model)
    finally:
        algo.stop()


def test_ddpg_without_its_state_preprocessor_refuses_it() -> None:
    config = (
        DDPGConfig()
        .environment("Pendulum-v1")
        .training(model={"fcnet_use_layernorm": True})
        .debugging(seed=0)
    )
    with pytest.raises(ConfigError) as info:
        config.build()
    assert "model.fcnet_use_layernorm" in str(info.value)
