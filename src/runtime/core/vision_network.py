"""``VisionNetwork``: the model of HxWxC image observations - a conv stack (``conv_filters``,
or the reference's default stack for the image size), flattened into the policy and value
heads (``post_fcnet_hiddens``)."""

from __future__ import annotations

import math
from typing import Any

import gymnasium as gym
import torch
from torch import nn

from rlconf.errors import ConfigError
from runtime.core.conv_filters import ConvLayer, conv_filters_for, conv_layers
from runtime.core.layer_init import DEFAULT_INIT, LayerInit
from runtime.core.models import (
    TrunkModel,
    activation,
    heads_of,
    mlp,
    policy_outputs,
    uses_layernorm,
)

#: The value output's initial scale. Small, as the reference's: frames reach the conv layers
#: as 0..255 pixel values, whose features would start the values in the hundreds.
_VALUE_GAIN = 0.01


class VisionNetwork(TrunkModel):
    """Conv layers ("same" padding, the last "valid", unless a filter gives its own padding:
    ``runtime.core.conv_filters``), flattened, then the ``post_fcnet`` layers; a linear
    policy output and value output on top (the value function has a conv stack of its own
    unless ``vf_share_layers``).

    ``no_final_linear``, as the reference builds it: no output layer - the last conv layer
    has the outputs as channels (its map must be 1x1), or the last ``post_fcnet`` layer has
    the outputs as its size. ``free_log_std``: half the outputs, and a learned log-std.
    """

    obs_key = "obs"

    def __init__(
        self,
        obs_space: gym.Space[Any],
        action_space: gym.Space[Any],
        num_outputs: int,
        model_config: dict[str, Any],
        name: str,
    ) -> None:
        super().__init__(obs_space, action_space, num_outputs, model_config, name)
        shape = tuple(int(d) for d in obs_space.shape or ())
        if len(shape) != 3:
            raise ValueError(f"VisionNetwork needs HxWxC image observations, got {shape}")
        uses_layernorm(model_config, images=True)
        self.filters = conv_filters_for(shape, model_config)
        layers = conv_layers(shape, self.filters)
        conv_act = model_config["conv_activation"]
        post = [int(size) for size in model_config["post_fcnet_hiddens"]]
        post_act = model_config["post_fcnet_activation"]
        outputs, log_std = policy_outputs(num_outputs, model_config)
        no_final_linear = bool(model_config["no_final_linear"])
        last_channels = outputs if no_final_linear and not post else None
        if last_channels is not None and layers[-1].out_size != (1, 1):
            raise ConfigError.single(
                "ModelCatalog.get_model()",
                "model.no_final_linear",
                "makes the last conv layer the output layer, which needs a 1x1 map, but "
                f"model.conv_filters {self.filters} leave a {layers[-1].out_size[0]}x"
                f"{layers[-1].out_size[1]} map on images of shape {shape}",
                value=True,
                has_value=True,
                allowed="False, post_fcnet_hiddens (the last of them is the output layer "
                "then), or conv_filters that end in a 1x1 map",
            )
        heads = heads_of(model_config)
        heads.refuse_with_no_final_linear(model_config)
        inits = heads.inits
        convs, flat = conv_stack(shape[-1], layers, conv_act, last_channels, inits.conv)
        head_sizes = ([*post[:-1], outputs] if post else []) if no_final_linear else post
        head, last = mlp(flat, head_sizes, post_act, init=inits.fcnet)
        #: Conv layers, flattened, then the post_fcnet layers: what the value output shares.
        self.trunk = nn.Sequential(*convs, *head)
        self.logits: nn.Module = (
            nn.Identity() if no_final_linear else heads.output(last, outputs, 0.01)
        )
        self.log_std: nn.Module = log_std
        self.vf_share_layers = bool(model_config["vf_share_layers"])
        self.separate_value_network = not self.vf_share_layers
        if self.vf_share_layers:
            self.value_branch: nn.Module = heads.output(last, 1, _VALUE_GAIN)
        else:
            value_convs, value_flat = conv_stack(shape[-1], layers, conv_act, None, inits.conv)
            self.value_branch = nn.Sequential(
                *value_convs, *heads.layers(value_flat, 1, _VALUE_GAIN)
            )
        self._features: torch.Tensor | None = None


def conv_stack(
    channels: int,
    layers: list[ConvLayer],
    act: str,
    last_channels: int | None,
    init: LayerInit = DEFAULT_INIT,
) -> tuple[list[nn.Module], int]:
    """The modules of ``layers`` over a batch of HxWxC images, ending flattened, and the
    flattened size; ``last_channels`` replaces the last layer's channels; ``init``: the conv
    initializers of the model dict."""
    modules: list[nn.Module] = [_ChannelsFirst()]
    for index, layer in enumerate(layers):
        out_channels = layer.out_channels
        if last_channels is not None and index == len(layers) - 1:
            out_channels = last_channels
        if any(layer.padding):
            modules.append(nn.ZeroPad2d(layer.padding))
        conv = nn.Conv2d(channels, out_channels, layer.kernel, layer.stride)
        # As ``linear``: orthogonal weights scaled for the ReLU-like activations, zero biases.
        init.start(conv, math.sqrt(2))
        modules += [conv, *activation(act)]
        channels = out_channels
    modules.append(nn.Flatten())
    height, width = layers[-1].out_size
    return modules, channels * height * width


class _ChannelsFirst(nn.Module):
    """HxWxC observations -> float32 in the CxHxW layout torch's convolutions take. uint8
    frames come here as they are (``runtime.core.image_obs``) and become float32 first, with
    the same values (no scaling, as the reference's)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dtype != torch.float32:
            # Into a new tensor of standard strides, as numpy's float32 copy of the frames had:
            # a cast keeps the strides of a view (a frame[None] has stride 0 on its batch
            # axis), and torch's convolutions pick their kernel, and so their rounding, by
            # the layout.
            x = torch.empty(x.shape, dtype=torch.float32, device=x.device).copy_(x)
        return x.permute(0, 3, 1, 2)
