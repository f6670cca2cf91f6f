"""Image observations get conv layers: the reference's default stack for their size ("same"
padding, the last layer "valid" bringing the map to 1x1, flattened into the heads), the
stack of ``conv_filters``, or a ConfigError naming the shape and what to set - never an MLP
over pixels."""

from __future__ import annotations

from typing import Any, cast

import gymnasium as gym
import numpy as np
import pytest
import torch
from torch import nn

from rlconf import ConfigError, PPOConfig
from rlconf.model_config import ModelConfigDict
from runtime.core.conv_filters import DEFAULT_CONV_FILTERS, conv_layers
from runtime.core.model_catalog import ModelCatalog
from runtime.core.vision_network import VisionNetwork
from runtime.env.preprocessors import get_preprocessor


class ImageEnv(gym.Env[Any, Any]):
    """HxWxC uint8 frames (``env_config["shape"]``, 84x84x3 by default) that are brighter when
    action 1 pays; 8 steps an episode."""

    def __init__(self, config: dict[str, Any] | None = None) -> None:
        shape = tuple((config or {}).get("shape", (84, 84, 3)))
        self.observation_space = gym.spaces.Box(0, 255, shape, np.uint8)
        self.action_space = gym.spaces.Discrete(2)
        self.steps = 0
        self.bright = False

    def _obs(self) -> Any:
        return np.full(self.observation_space.shape, 200 if self.bright else 20, np.uint8)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        self.steps, self.bright = 0, bool(self.np_random.integers(2))
        return self._obs(), {}

    def step(self, action: int) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        reward = 1.0 if int(action) == int(self.bright) else 0.0
        self.steps += 1
        self.bright = bool(self.np_random.integers(2))
        return self._obs(), reward, False, self.steps >= 8, {}


def _model(shape: tuple[int, ...], outputs: int = 6, **model: Any) -> VisionNetwork:
    config = dict(PPOConfig().training(model=cast(ModelConfigDict, model))["model"])
    space = gym.spaces.Box(0.0, 255.0, shape, np.float32)
    net = ModelCatalog.get_model(space, gym.spaces.Discrete(outputs), outputs, config)
    assert isinstance(net, VisionNetwork)
    return net


def _convs(net: VisionNetwork) -> list[tuple[int, int, tuple[int, ...], tuple[int, ...]]]:
    return [
        (m.in_channels, m.out_channels, tuple(m.kernel_size), tuple(m.stride))
        for m in net.trunk.modules()
        if isinstance(m, nn.Conv2d)
    ]


def _params(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


def test_default_stacks_bring_84x84_and_42x42_images_to_a_1x1_map() -> None:
    # "same" padding keeps ceil(size / stride); the last layer is "valid"
    layers = conv_layers((84, 84, 3), DEFAULT_CONV_FILTERS[(84, 84)])
    assert [(layer.in_size, layer.out_size) for layer in layers] == [
        ((84, 84), (21, 21)),
        ((21, 21), (11, 11)),
        ((11, 11), (1, 1)),
    ]
    assert [layer.padding for layer in layers] == [(2, 2, 2, 2), (1, 2, 1, 2), (0, 0, 0, 0)]
    layers = conv_layers((42, 42, 1), DEFAULT_CONV_FILTERS[(42, 42)])
    assert [layer.out_size for layer in layers] == [(21, 21), (11, 11), (1, 1)]
    # every default stack ends in a 1x1 map
    for (height, width), filters in DEFAULT_CONV_FILTERS.items():
        assert conv_layers((height, width, 3), filters)[-1].out_size == (1, 1)


@pytest.mark.parametrize(
    ("shape", "conv_params"),
    [
        # 3*16*8*8+16, 16*32*4*4+32, 32*256*11*11+256
        ((84, 84, 3), 3_088 + 8_224 + 991_488),
        # 1*16*4*4+16, 16*32*4*4+32, 32*256*11*11+256
        ((42, 42, 1), 272 + 8_224 + 991_488),
    ],
)
def test_default_stacks_give_256_features_and_the_reference_parameter_counts(
    shape: tuple[int, int, int], conv_params: int
) -> None:
    net = _model(shape, vf_share_layers=True)
    filters = DEFAULT_CONV_FILTERS[shape[:2]]
    assert _convs(net) == [
        (in_c, out_c, tuple(k), (s, s))
        for in_c, (out_c, k, s) in zip((shape[2], 16, 32), filters, strict=True)
    ]
    assert _params(net.trunk) == conv_params
    # the flattened 1x1x256 map feeds the policy output (6) and the value output (1)
    assert _params(net) == conv_params + (256 * 6 + 6) + (256 + 1)
    logits, _ = net({"obs": torch.zeros(5, *shape)}, [], None)
    assert logits.shape == (5, 6) and net.value_function().shape == (5,)
    # PPO's default, vf_share_layers=False: the value function has a conv stack of its own
    separate = _model(shape)
    assert _params(separate) == 2 * conv_params + (256 * 6 + 6) + (256 + 1)
    values = separate.values({"obs": torch.zeros(5, *shape)})
    assert values.shape == (5,)


def test_images_stay_images_for_the_conv_layers() -> None:
    space = gym.spaces.Box(0, 255, (42, 42, 4), np.uint8)
    prep = get_preprocessor(space, {})
    assert prep.shape == (42, 42, 4)
    rows = prep.transform_many([np.full((42, 42, 4), 7, np.uint8)])
    # uint8 frames stay uint8 (the conv stack casts them: tests/test_uint8_frames.py)
    assert rows.shape == (1, 42, 42, 4) and rows.dtype == np.uint8 and rows.max() == 7


def test_ppo_builds_a_conv_model_for_84x84_images_and_trains() -> None:
    algo = (
        PPOConfig()
        .environment(ImageEnv)
        .rollouts(num_workers=0, rollout_fragment_length=32)
        .training(train_batch_size=32, sgd_minibatch_size=16, num_sgd_iter=1)
        .debugging(seed=0)
        .build()
    )
    try:
        model = algo.get_policy().model
        assert isinstance(model, VisionNetwork)
        assert _convs(model) == [
            (3, 16, (8, 8), (4, 4)),
            (16, 32, (4, 4), (2, 2)),
            (32, 256, (11, 11), (1, 1)),
        ]
        assert not any(isinstance(m, nn.Linear) and m.in_features > 256 for m in model.modules()), (
            "an MLP over pixels"
        )
        result = algo.train()
        assert result["timesteps_total"] == 32
        assert np.isfinite(result["info"]["learner"]["default_policy"]["learner_stats"]["vf_loss"])
    finally:
        algo.stop()


def test_an_image_size_without_a_default_stack_is_refused_at_build() -> None:
    config = (
        PPOConfig().environment(ImageEnv, env_config={"shape": (30, 40, 3)}).rollouts(num_workers=0)
    )
    with pytest.raises(ConfigError) as caught:
        config.build()
    (issue,) = caught.value.issues
    assert issue.field == "model.conv_filters"
    assert "(30, 40, 3)" in issue.problem and "no default conv stack" in issue.problem
    assert "84x84" in issue.problem
    assert "model.conv_filters for 30x40 images" in issue.allowed
    assert "model.custom_model" in issue.allowed


def test_conv_filters_and_conv_activation_act() -> None:
    filters = [[8, [5, 5], 3], [16, [3, 3], [2, 1]], [32, 3, 1]]
    net = _model((30, 40, 3), conv_filters=filters, conv_activation="elu", vf_share_layers=True)
    assert _convs(net) == [
        (3, 8, (5, 5), (3, 3)),
        (8, 16, (3, 3), (2, 1)),
        (16, 32, (3, 3), (1, 1)),
    ]
    assert any(isinstance(m, nn.ELU) for m in net.trunk) and not any(
        isinstance(m, nn.ReLU) for m in net.trunk
    )
    # 30x40 -> same (10, 14) -> same (5, 14) -> valid (3, 12): 32*3*12 features, flattened
    layers = conv_layers((30, 40, 3), filters)
    assert [layer.out_size for layer in layers] == [(10, 14), (5, 14), (3, 12)]
    assert net.logits.in_features == 32 * 3 * 12
    # also on a size that has a default stack
    assert _convs(_model((84, 84, 3), conv_filters=[[4, 84, 1]]))[0] == (3, 4, (84, 84), (1, 1))


@pytest.mark.parametrize(
    ("filters", "field", "problem"),
    [
        ([[8, [5, 5], 3], [16, [50, 50], 1]], "model.conv_filters", "leaves no output"),
        ([[8, [5, 5]]], "model.conv_filters[0]", "is not a conv layer"),
        ([[8, [5, 5], 0]], "model.conv_filters[0]", "is not a conv layer"),
    ],
)
def test_conv_filters_that_make_no_stack_are_refused(
    filters: list[Any], field: str, problem: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        _model((30, 40, 3), conv_filters=filters)
    (issue,) = caught.value.issues
    assert issue.field == field and problem in issue.problem


def test_post_fcnet_hiddens_no_final_linear_and_free_log_std_act_on_images() -> None:
    post = _model((42, 42, 1), post_fcnet_hiddens=[64], post_fcnet_activation="tanh")
    assert [m.out_features for m in post.trunk if isinstance(m, nn.Linear)] == [64]
    assert post.logits.in_features == 64
    # no final linear: the last conv layer's channels are the outputs (a 1x1 map)...
    bare = _model((42, 42, 1), no_final_linear=True, vf_share_layers=True)
    assert isinstance(bare.logits, nn.Identity) and _convs(bare)[-1][1] == 6
    assert bare({"obs": torch.zeros(2, 42, 42, 1)}, [], None)[0].shape == (2, 6)
    # ... or the last post_fcnet layer's size
    last_post = _model((42, 42, 1), no_final_linear=True, post_fcnet_hiddens=[64, 32])
    assert [m.out_features for m in last_post.trunk if isinstance(m, nn.Linear)] == [64, 6]
    with pytest.raises(ConfigError, match="needs a 1x1 map"):
        _model((30, 40, 3), conv_filters=[[8, 3, 2]], no_final_linear=True)
    free = _model((42, 42, 1), outputs=4, free_log_std=True)
    out, _ = free({"obs": torch.zeros(2, 42, 42, 1)}, [], None)
    assert free.logits.out_features == 2 and out.shape == (2, 4)
