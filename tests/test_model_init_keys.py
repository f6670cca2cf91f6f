"""``DefaultModelConfig``'s head and initializer keys act on the built-in networks: head layers
before each output (DQN's Q head under two names), each layer group's initializers by name,
function or import path; unknown and contradicting names are refused."""

from __future__ import annotations

import math
from typing import Any, cast

import gymnasium as gym
import pytest
import torch
from gymnasium.spaces import Box, Discrete
from torch import nn

from rlconf import (
    A2CConfig,
    APPOConfig,
    ConfigError,
    DDPGConfig,
    DefaultModelConfig,
    DQNConfig,
    IMPALAConfig,
    PGConfig,
    PPOConfig,
    SACConfig,
)
from rlconf.algorithm_config import AlgorithmConfig
from rlconf.model_config import ModelConfigDict
from runtime import ModelCatalog, RLModule
from runtime.algorithms.a2c import A2C
from runtime.algorithms.appo import APPO
from runtime.algorithms.ddpg import DDPG
from runtime.algorithms.dqn import DQN
from runtime.algorithms.impala import IMPALA
from runtime.algorithms.pg import PG
from runtime.algorithms.ppo import PPO
from runtime.algorithms.sac import SACModule

OBS = Box(-1.0, 1.0, (4,))
IMAGES = Box(0.0, 1.0, (10, 10, 3))


def sevens(tensor: torch.Tensor, value: float = 7.0) -> torch.Tensor:
    """An initializer of our own, named by its import path in a test below."""
    return nn.init.constant_(tensor, value)


def _model(**keys: Any) -> dict[str, Any]:
    """The model dict a PPO config completes from ``keys`` (validated as any config's)."""
    return dict(PPOConfig().training(model=cast(ModelConfigDict, keys))["model"])


def _net(model: dict[str, Any], obs: gym.Space[Any] = OBS, outputs: int = 3) -> Any:
    return ModelCatalog.get_model(obs, Discrete(outputs), outputs, model)


def _linears(module: nn.Module) -> list[nn.Linear]:
    return [layer for layer in module.modules() if type(layer) is nn.Linear]


def _orthogonal(weight: torch.Tensor, gain: float) -> bool:
    """The rows (or columns, of a tall matrix) orthonormal times ``gain``."""
    matrix = weight.detach().reshape(len(weight), -1)
    gram = matrix @ matrix.T if matrix.shape[0] <= matrix.shape[1] else matrix.T @ matrix
    return torch.allclose(gram, gain**2 * torch.eye(len(gram)), atol=1e-4)


# ------------------------------------------------------------------ initializers


@pytest.mark.parametrize(
    "names",
    [
        (
            "fcnet_kernel_initializer",
            "fcnet_kernel_initializer_kwargs",
            "fcnet_bias_initializer_kwargs",
        ),
        (
            "fcnet_weights_initializer",
            "fcnet_weights_initializer_config",
            "fcnet_bias_initializer_config",
        ),
    ],
    ids=["new-stack", "rllib-2x"],
)
def test_the_fcnet_initializers_start_the_body_layers(names: tuple[str, str, str]) -> None:
    kernel, kernel_kwargs, bias_kwargs = names
    net = _net(
        _model(
            fcnet_hiddens=[32, 16],
            **{kernel: "orthogonal_", kernel_kwargs: {"gain": 3.0}},
            fcnet_bias_initializer="constant",  # torch's constant_, without the "_"
            **{bias_kwargs: {"val": 0.5}},
        )
    )
    body = _linears(net.trunk) + _linears(net.value_branch)[:-1]  # PPO: a value trunk of its own
    assert len(body) == 4
    for layer in body:
        assert _orthogonal(layer.weight, 3.0)
        assert torch.all(layer.bias == 0.5)
    # The outputs are the heads' layers: they keep their own start.
    for layer, gain in ((net.logits, 0.01), (_linears(net.value_branch)[-1], 1.0)):
        assert _orthogonal(layer.weight, gain) and torch.all(layer.bias == 0.0)


def test_the_head_initializers_start_the_head_layers_and_the_outputs() -> None:
    net = _net(
        _model(
            fcnet_hiddens=[16],
            vf_share_layers=True,
            head_fcnet_hiddens=[8],
            head_fcnet_kernel_initializer="Orthogonal_",
            head_fcnet_kernel_initializer_kwargs={"gain": 0.5},
            head_fcnet_bias_initializer="ones_",
        )
    )
    heads = _linears(net.logits) + _linears(net.value_branch)
    assert [(layer.in_features, layer.out_features) for layer in heads] == [
        (16, 8),
        (8, 3),
        (16, 8),
        (8, 1),
    ]
    for layer in heads:
        assert _orthogonal(layer.weight, 0.5) and torch.all(layer.bias == 1.0)
    (body,) = _linears(net.trunk)
    assert _orthogonal(body.weight, math.sqrt(2)) and torch.all(body.bias == 0.0)


def test_the_conv_initializers_start_the_conv_layers() -> None:
    net = _net(
        _model(
            conv_kernel_initializer="constant_",
            conv_kernel_initializer_kwargs={"val": 0.25},
            conv_bias_initializer="ones",
        ),
        IMAGES,
    )
    convs = [layer for layer in net.modules() if isinstance(layer, nn.Conv2d)]
    assert len(convs) == 4  # the default 10x10 stack, and the value function's own
    for conv in convs:
        assert conv.bias is not None
        assert torch.all(conv.weight == 0.25) and torch.all(conv.bias == 1.0)
    assert torch.all(net.logits.bias == 0.0)  # not a conv layer


def test_the_lstm_initializers_start_both_lstms() -> None:
    model = _model(
        use_lstm=True,
        lstm_cell_size=8,
        vf_share_layers=False,
        lstm_kernel_initializer="orthogonal_",
        lstm_kernel_initializer_kwargs={"gain": 2.0},
        lstm_bias_initializer="zeros_",
    )
    net = _net(model)
    for lstm in (net.lstm, net.value_lstm):
        for name, param in lstm.named_parameters():
            if name.startswith("weight"):
                assert _orthogonal(param, 2.0), name
            else:
                assert torch.all(param == 0.0), name
    # Without them the LSTM keeps torch's own start (uniform, nonzero biases).
    plain = _net(_model(use_lstm=True, lstm_cell_size=8))
    assert not torch.all(plain.lstm.bias_ih_l0 == 0.0)


def test_a_function_or_its_import_path_initialises_and_round_trips_through_json() -> None:
    config = PPOConfig().rl_module(
        model_config=DefaultModelConfig(
            fcnet_hiddens=[6],
            fcnet_kernel_initializer=sevens,
            fcnet_kernel_initializer_kwargs={"value": 3.0},
            head_fcnet_kernel_initializer=nn.init.xavier_uniform_,
        )
    )
    read_back = PPOConfig.from_json(config.to_json())
    assert read_back["model"]["fcnet_kernel_initializer"] is sevens
    net = _net(dict(read_back["model"]))
    assert torch.all(net.trunk[0].weight == 3.0)
    bound = math.sqrt(6.0 / (6 + 3))  # xavier_uniform_'s, of the 6 -> 3 output layer
    assert net.logits.weight.abs().max() <= bound and not _orthogonal(net.logits.weight, 0.01)
    # An import path in a file (a YAML or JSON string) names the function.
    from_file = PPOConfig.from_dict(
        {"model": {"fcnet_bias_initializer": "tests.test_model_init_keys.sevens"}}
    )
    assert from_file["model"]["fcnet_bias_initializer"] is sevens
    assert torch.all(_net(dict(from_file["model"])).trunk[0].bias == 7.0)


def test_the_keys_at_their_defaults_or_the_layers_own_start_build_the_same_numbers() -> None:
    given = DefaultModelConfig(fcnet_hiddens=[16], fcnet_activation="tanh").to_dict()
    del given["log_std_clip_param"]  # accepted at its default only, and changes nothing
    # Zero biases are the dense layers' own start, however they are named; no arguments are
    # no arguments.
    given.update(
        fcnet_bias_initializer="zeros",
        head_fcnet_bias_initializer=nn.init.zeros_,
        lstm_kernel_initializer_kwargs={},
    )
    built = []
    # (DefaultModelConfig's vf_share_layers is True, PPO's False.)
    for model in (_model(fcnet_hiddens=[16], vf_share_layers=True), _model(**given)):
        torch.manual_seed(0)
        built.append(_net(model).state_dict())
    plain, same = built
    assert plain.keys() == same.keys()
    assert all(torch.equal(plain[name], same[name]) for name in plain)


@pytest.mark.parametrize(
    ("model", "field", "problem"),
    [
        ({"fcnet_kernel_initializer": "glorot_uniform_"}, "fcnet_kernel_initializer", "glorot"),
        ({"conv_bias_initializer": "no.such.module:init"}, "conv_bias_initializer", "no.such"),
        ({"lstm_bias_initializer": 3}, "lstm_bias_initializer", "not an initializer"),
    ],
)
def test_an_unknown_initializer_is_refused_with_the_allowed_names(
    model: dict[str, Any], field: str, problem: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        PPOConfig().training(model=cast(ModelConfigDict, model))
    (issue,) = caught.value.issues
    assert issue.field == f"model.{field}" and problem in issue.problem
    assert "xavier_uniform_" in issue.allowed and "orthogonal_" in issue.allowed
    # A model dict that reaches the catalog unvalidated is refused there the same way.
    with pytest.raises(ConfigError) as caught:
        _net({**_model(), "head_fcnet_bias_initializer": "glorot_"})
    (issue,) = caught.value.issues
    assert issue.field == "model.head_fcnet_bias_initializer" and "zeros_" in issue.allowed


def test_contradicting_names_and_arguments_of_no_initializer_are_refused() -> None:
    with pytest.raises(ConfigError) as caught:
        PPOConfig().training(
            model={"fcnet_weights_initializer": "zeros_", "fcnet_kernel_initializer": "ones_"}
        ).validate()
    (issue,) = caught.value.issues
    assert issue.field == "model.fcnet_weights_initializer"
    assert "model.fcnet_kernel_initializer='ones_'" in issue.problem
    # One value under both names is one setting.
    PPOConfig().training(
        model={"fcnet_weights_initializer": "zeros_", "fcnet_kernel_initializer": "zeros_"}
    ).validate()
    with pytest.raises(ConfigError) as caught:
        PPOConfig().rl_module(
            model_config=DefaultModelConfig(head_fcnet_kernel_initializer_kwargs={"gain": 0.01})
        ).validate()
    (issue,) = caught.value.issues
    assert issue.field == "model.head_fcnet_kernel_initializer_kwargs"
    assert "head_fcnet_kernel_initializer, which is None" in issue.problem


def test_the_initializers_of_layers_rlconf_lacks_are_still_refused() -> None:
    for key in ("post_fcnet_weights_initializer", "conv_transpose_kernel_initializer"):
        with pytest.raises(ConfigError, match="don't have"):
            PPOConfig().training(model=cast(ModelConfigDict, {key: "xavier_uniform_"}))


# ------------------------------------------------------------------ head layers by algorithm


def _sizes(layers: nn.Module) -> list[tuple[int, int]]:
    return [(layer.in_features, layer.out_features) for layer in _linears(layers)]


@pytest.mark.parametrize(
    ("config_class", "algorithm"),
    [
        (PPOConfig, PPO),
        (APPOConfig, APPO),
        (IMPALAConfig, IMPALA),
        (A2CConfig, A2C),
        (PGConfig, PG),
    ],
    ids=["PPO", "APPO", "IMPALA", "A2C", "PG"],
)
@pytest.mark.parametrize("share", [True, False], ids=["shared", "own-value-trunk"])
def test_the_policy_and_value_outputs_get_the_head_layers(
    config_class: type[AlgorithmConfig], algorithm: Any, share: bool
) -> None:
    config = config_class().rl_module(
        model_config=DefaultModelConfig(
            fcnet_hiddens=[32],
            head_fcnet_hiddens=[16, 8],
            head_fcnet_activation="tanh",
            vf_share_layers=share,
        )
    )
    module: RLModule = algorithm.module_class(OBS, Discrete(3), config.freeze())
    net: Any = cast(Any, module).model
    assert _sizes(net.trunk) == [(4, 32)]
    assert _sizes(net.logits) == [(32, 16), (16, 8), (8, 3)]
    value = _sizes(net.value_branch)
    assert value == ([] if share else [(4, 32)]) + [(32, 16), (16, 8), (8, 1)]
    assert (
        sum(isinstance(layer, nn.Tanh) or "Tanh" in type(layer).__name__ for layer in net.logits)
        == 2
    )
    # None is linear: no activation between the head layers.
    linear = _net(_model(fcnet_hiddens=[32], head_fcnet_hiddens=[16], head_fcnet_activation=None))
    assert [type(layer) for layer in linear.logits] == [nn.Linear, nn.Linear]


def test_sacs_policy_and_q_networks_get_the_head_layers() -> None:
    config = SACConfig().rl_module(
        model_config=DefaultModelConfig(
            fcnet_hiddens=[256, 256], fcnet_activation="relu", head_fcnet_hiddens=[32]
        )
    )
    module = SACModule(Box(-1.0, 1.0, (3,)), Box(-1.0, 1.0, (2,)), config.freeze())
    policy: Any = module.model
    assert _sizes(policy.trunk) == [(3, 256), (256, 256)]
    assert _sizes(policy.logits) == [(256, 32), (32, 4)]
    for q_net in cast(Any, module.q_nets):
        assert _sizes(q_net.trunk)[0] == (3 + 2, 256)
        assert _sizes(q_net.logits) == [(256, 32), (32, 1)]
    # Set for both networks in their own configs, the model's value would act nowhere.
    shadowed = SACConfig().training(
        model={"head_fcnet_hiddens": [32]},
        policy_model_config={"head_fcnet_hiddens": [64]},
        q_model_config={"head_fcnet_hiddens": [64]},
    )
    with pytest.raises(ConfigError, match="policy_model_config and q_model_config"):
        SACModule(Box(-1.0, 1.0, (3,)), Box(-1.0, 1.0, (2,)), shadowed.freeze())


def _q_module(config: DQNConfig) -> Any:
    return DQN.module_class(OBS, Discrete(2), config.freeze())


def test_dqns_q_head_is_head_fcnet_hiddens_or_hiddens() -> None:
    given = _q_module(
        DQNConfig().rl_module(
            model_config=DefaultModelConfig(
                fcnet_hiddens=[64], head_fcnet_hiddens=[32, 16], head_fcnet_activation="elu"
            )
        )
    )
    assert _sizes(given.advantage) == [(64, 32), (32, 16), (16, 2)]
    assert _sizes(given.value) == [(64, 32), (32, 16), (16, 1)]
    assert sum(isinstance(layer, nn.ELU) for layer in given.advantage) == 2
    # The network below the head has no head layers of its own.
    assert type(given.model.logits) is nn.Linear
    # Not set: hiddens, with ReLU.
    plain = _q_module(DQNConfig().training(hiddens=[24], model={"fcnet_hiddens": [64]}))
    assert _sizes(plain.advantage) == [(64, 24), (24, 2)]
    assert isinstance(plain.advantage[1], nn.ReLU)
    # RLlib's DefaultModelConfig() has no head layers: each stream is one linear layer.
    bare = _q_module(DQNConfig().rl_module(model_config=DefaultModelConfig(fcnet_hiddens=[64])))
    assert _sizes(bare.advantage) == [(64, 2)]
    # One value under both names is one setting; different values are refused, naming both.
    DQNConfig().training(hiddens=[32]).rl_module(
        model_config={"head_fcnet_hiddens": [32]}
    ).validate()
    with pytest.raises(ConfigError) as caught:
        DQNConfig().training(hiddens=[64]).rl_module(
            model_config={"head_fcnet_hiddens": [32]}
        ).validate()
    (issue,) = caught.value.issues
    assert issue.field == "hiddens" and "model.head_fcnet_hiddens=[32]" in issue.problem


def test_dqns_head_initializers_start_the_q_head() -> None:
    module = _q_module(
        DQNConfig().rl_module(
            model_config=DefaultModelConfig(
                fcnet_hiddens=[16],
                head_fcnet_hiddens=[8],
                head_fcnet_kernel_initializer="zeros_",
                fcnet_bias_initializer="ones_",
            )
        )
    )
    for layer in _linears(module.advantage) + _linears(module.value):
        assert torch.all(layer.weight == 0.0) and torch.all(layer.bias == 0.0)
    # The network below the head, its output layer included, takes the fcnet initializers.
    for layer in _linears(module.model):
        assert torch.all(layer.bias == 1.0) and not torch.all(layer.weight == 0.0)


def test_ddpg_refuses_head_layers_its_actor_and_critics_dont_have() -> None:
    config = DDPGConfig().training(
        actor_hiddens=[16], critic_hiddens=[16], model={"head_fcnet_hiddens": [8]}
    )
    with pytest.raises(ConfigError, match="actor_hiddens and critic_hiddens") as caught:
        DDPG.module_class(OBS, Box(-1.0, 1.0, (2,)), config.freeze())
    assert caught.value.issues[0].field == "model.head_fcnet_hiddens"
    config = DDPGConfig().training(model={"fcnet_kernel_initializer": "zeros_"})
    with pytest.raises(ConfigError, match="use_state_preprocessor is False"):
        DDPG.module_class(OBS, Box(-1.0, 1.0, (2,)), config.freeze())


def test_head_layers_are_refused_beside_no_final_linear() -> None:
    with pytest.raises(ConfigError, match="no_final_linear") as caught:
        _net(_model(no_final_linear=True, head_fcnet_hiddens=[8]))
    assert caught.value.issues[0].field == "model.head_fcnet_hiddens"
