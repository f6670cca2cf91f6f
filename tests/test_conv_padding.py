"""``model.conv_filters`` with a padding per filter: ``[out_channels, kernel, stride, padding]``
(RLlib's new API stack's form), "same" or "valid" exactly as given, beside the 3-element form
that pads "same" but the last layer. All "valid" is the Nature CNN as SB3 and CleanRL build it.
"""

from __future__ import annotations

import importlib.util
from typing import Any, cast

import gymnasium as gym
import numpy as np
import pytest
import torch
from torch import nn

from rlconf import ConfigError, PPOConfig
from rlconf.conv_filter_spec import ConvFilter
from rlconf.model_config import ModelConfigDict
from runtime.core.conv_filters import conv_layers
from runtime.core.model_catalog import ModelCatalog
from runtime.core.vision_network import VisionNetwork
from tests.fake_atari import FakeAtariEnv

NATURE = [[32, [8, 8], 4, "valid"], [64, [4, 4], 2, "valid"], [64, [3, 3], 1, "valid"]]


def _model(shape: tuple[int, ...], outputs: int = 4, **model: Any) -> VisionNetwork:
    config = dict(PPOConfig().training(model=cast(ModelConfigDict, model))["model"])
    space = gym.spaces.Box(0, 255, shape, np.uint8)
    net = ModelCatalog.get_model(space, gym.spaces.Discrete(outputs), outputs, config)
    assert isinstance(net, VisionNetwork)
    return net


def _params(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


def _nature_cnn() -> nn.Sequential:
    """SB3's ``NatureCNN`` (CleanRL's ``ppo_atari`` network): "valid" convolutions, 512 ReLU."""
    return nn.Sequential(
        nn.Conv2d(4, 32, 8, 4),
        nn.ReLU(),
        nn.Conv2d(32, 64, 4, 2),
        nn.ReLU(),
        nn.Conv2d(64, 64, 3, 1),
        nn.ReLU(),
        nn.Flatten(),
        nn.Linear(3136, 512),
        nn.ReLU(),
    )


def test_valid_filters_make_the_nature_cnn_of_sb3_and_cleanrl() -> None:
    layers = conv_layers((84, 84, 4), NATURE)
    assert [layer.out_size for layer in layers] == [(20, 20), (9, 9), (7, 7)]
    assert all(layer.padding == (0, 0, 0, 0) for layer in layers)
    # the same filters without their padding keep the reference's: "same" but the last
    layers = conv_layers((84, 84, 4), [entry[:3] for entry in NATURE])
    assert [layer.out_size for layer in layers] == [(21, 21), (11, 11), (9, 9)]
    assert [any(layer.padding) for layer in layers] == [True, True, False]
    net = _model((84, 84, 4), conv_filters=NATURE, post_fcnet_hiddens=[512], vf_share_layers=True)
    assert not any(isinstance(m, nn.ZeroPad2d) for m in net.modules())
    dense = [m for m in net.trunk if isinstance(m, nn.Linear)]
    assert [(m.in_features, m.out_features) for m in dense] == [(64 * 7 * 7, 512)]
    # the hand-built network with a policy (4 actions) and a value layer on its features
    reference = _nature_cnn()
    assert _params(net) == _params(reference) + (512 * 4 + 4) + (512 + 1) == 1_686_693
    # the same weights give the same features: the same layers, flattened in the same order
    ours = [m for m in net.trunk if isinstance(m, nn.Conv2d | nn.Linear)]
    theirs = [m for m in reference if isinstance(m, nn.Conv2d | nn.Linear)]
    for mine, other in zip(ours, theirs, strict=True):
        other.load_state_dict(mine.state_dict())
    frames = torch.randint(0, 256, (3, 84, 84, 4), dtype=torch.uint8)
    with torch.no_grad():
        net({"obs": frames}, [], None)
        expected = reference(frames.permute(0, 3, 1, 2).float())
    assert net._features is not None
    torch.testing.assert_close(net._features, expected)


def test_the_value_networks_own_conv_stack_pads_as_the_filters_say() -> None:
    shared = _model((84, 84, 4), conv_filters=NATURE, vf_share_layers=True)
    separate = _model((84, 84, 4), conv_filters=NATURE, vf_share_layers=False)
    assert not any(isinstance(m, nn.ZeroPad2d) for m in separate.value_branch.modules())
    value_out = [m for m in separate.value_branch.modules() if isinstance(m, nn.Linear)]
    assert [m.in_features for m in value_out] == [3136]
    conv_params = _params(shared.trunk)
    assert _params(separate.value_branch) == conv_params + 3136 + 1
    assert separate.values({"obs": torch.zeros(2, 84, 84, 4)}).shape == (2,)


def test_mixed_filters_pad_each_layer_as_given_or_by_its_position() -> None:
    # 30x40: same (15, 20), valid (13, 18), then a 3-element last layer: valid (11, 16)
    filters: list[Any] = [[8, 4, 2, "same"], [16, 3, 1, "valid"], [16, 3, 1]]
    layers = conv_layers((30, 40, 3), filters)
    assert [layer.out_size for layer in layers] == [(15, 20), (13, 18), (11, 16)]
    assert [any(layer.padding) for layer in layers] == [True, False, False]
    net = _model((30, 40, 3), conv_filters=filters, vf_share_layers=True)
    assert net.logits.in_features == 16 * 11 * 16
    # a 3-element layer before the last stays "same"; a last layer may say "same"
    layers = conv_layers((30, 40, 3), [[8, 3, 2], [16, [3, 5], 1, "same"]])
    assert [layer.out_size for layer in layers] == [(15, 20), (15, 20)]
    # (left, right, top, bottom): the odd pixel after, as TensorFlow pads
    assert layers[0].padding == (0, 1, 0, 1) and layers[1].padding == (2, 2, 1, 1)
    out, _ = _model((30, 40, 3), conv_filters=[[8, 3, 2], [16, [3, 5], 1, "same"]])(
        {"obs": torch.zeros(2, 30, 40, 3)}, [], None
    )
    assert out.shape == (2, 4)


def test_no_final_linear_checks_the_map_the_last_layer_really_leaves() -> None:
    # the 42x42 default stack ends in a 1x1 map; padded "same", its last layer leaves 11x11
    stack: list[Any] = [[16, [4, 4], 2], [32, [4, 4], 2], [256, [11, 11], 1]]
    valid = _model(
        (42, 42, 1), conv_filters=[*stack[:2], [*stack[2], "valid"]], no_final_linear=True
    )
    assert isinstance(valid.logits, nn.Identity)
    assert valid({"obs": torch.zeros(2, 42, 42, 1)}, [], None)[0].shape == (2, 4)
    with pytest.raises(ConfigError, match="needs a 1x1 map") as caught:
        _model((42, 42, 1), conv_filters=[*stack[:2], [*stack[2], "same"]], no_final_linear=True)
    assert "leave a 11x11 map" in caught.value.issues[0].problem


def test_a_valid_layer_before_the_last_that_leaves_no_map_is_refused_naming_it() -> None:
    with pytest.raises(ConfigError) as caught:
        _model((30, 40, 3), conv_filters=[[8, 32, 1, "valid"], [4, 3, 1]])
    (issue,) = caught.value.issues
    assert issue.field == "model.conv_filters" and "leaves no output" in issue.problem
    assert "layer 0's kernel [32, 32]" in issue.problem and "30x40" in issue.problem


@pytest.mark.parametrize(
    ("filters", "problem"),
    [
        ([[8, 4, 2], [16, 3, 1, "full"]], "padding 'full' is neither of 'same', 'valid'"),
        ([[8, 4, 2], [16, 3, 1, 1]], "padding 1 is neither"),
        ([[8, 4, 2], [16, "valid", 1]], "element 1 is the text 'valid'"),
    ],
)
def test_a_bad_padding_is_refused_by_the_config_naming_the_filter(
    filters: list[Any], problem: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        PPOConfig().training(model={"conv_filters": filters})
    (issue,) = caught.value.issues
    assert issue.field == "model.conv_filters.1" and issue.value == filters[1]
    assert problem in issue.problem
    assert "padding 'same' or 'valid'" in issue.allowed


def test_the_runtime_refuses_a_bad_padding_of_a_model_dict_given_directly() -> None:
    with pytest.raises(ConfigError) as caught:
        conv_layers((30, 40, 3), [[8, 3, 2, "full"]])
    (issue,) = caught.value.issues
    assert issue.field == "model.conv_filters[0]" and issue.problem == "is not a conv layer"
    assert "'same' or 'valid'" in issue.allowed


@pytest.mark.skipif(
    importlib.util.find_spec("cv2") is None,
    reason="needs opencv, which resizes the frames: pip install 'rlconf[atari]'",
)
def test_ppo_trains_on_a_fake_atari_env_with_valid_filters() -> None:
    # 42x42x4 frames: 42 -> 20 -> 9 -> 7
    filters: list[ConvFilter] = [[16, 4, 2, "valid"], [32, 4, 2, "valid"], [32, 3, 1, "valid"]]
    algo = (
        PPOConfig()
        .environment(FakeAtariEnv, clip_rewards=True)
        .rollouts(num_workers=0, rollout_fragment_length=32)
        .training(
            train_batch_size=32,
            sgd_minibatch_size=16,
            num_sgd_iter=1,
            model={"dim": 42, "conv_filters": filters, "post_fcnet_hiddens": [32]},
        )
        .debugging(seed=0)
        .build()
    )
    try:
        model = algo.get_policy().model
        assert isinstance(model, VisionNetwork) and model.filters == filters
        dense = [m for m in model.trunk if isinstance(m, nn.Linear)]
        assert dense[0].in_features == 32 * 7 * 7
        assert not any(isinstance(m, nn.ZeroPad2d) for m in model.modules())
        before = [p.detach().clone() for p in model.parameters()]
        assert algo.train()["timesteps_total"] == 32
        after = list(algo.get_policy().model.parameters())
        assert any(not torch.equal(b, a) for b, a in zip(before, after, strict=True))
    finally:
        algo.stop()
