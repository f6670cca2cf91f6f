"""What a memory model (LSTM, attention) reads before its memory: the features of one
observation, from the network the catalog would build for it without its output layers (the
reference wraps that network the same way), and the encoding of the previous action it may be
fed with."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from runtime.core.conv_filters import conv_filters_for, conv_layers
from runtime.core.layer_init import layer_inits
from runtime.core.models import mlp, uses_layernorm
from runtime.core.vision_network import conv_stack

Encoder = Callable[[torch.Tensor], torch.Tensor]


def feature_trunk(
    obs_space: gym.Space[Any], model_config: dict[str, Any], with_post_fcnet: bool = True
) -> tuple[nn.Module, int, str]:
    """``(trunk, feature size, input key)``: the conv stack and ``post_fcnet_hiddens`` of an
    HxWxC image (read from ``obs``), else the ``fcnet_hiddens`` and ``post_fcnet_hiddens`` MLP
    (read from ``obs_flat``); ``with_post_fcnet=False`` leaves the post_fcnet layers out (a
    model that puts them after its memory)."""
    shape = tuple(int(d) for d in obs_space.shape or (1,))
    post = [int(size) for size in model_config["post_fcnet_hiddens"]] if with_post_fcnet else []
    inits = layer_inits(model_config)
    if isinstance(obs_space, gym.spaces.Box) and len(shape) == 3:
        uses_layernorm(model_config, images=True)
        layers = conv_layers(shape, conv_filters_for(shape, model_config))
        convs, flat = conv_stack(
            shape[-1], layers, model_config["conv_activation"], None, inits.conv
        )
        head, last = mlp(flat, post, model_config["post_fcnet_activation"], init=inits.fcnet)
        return nn.Sequential(*convs, *head), last, "obs"
    hiddens = list(model_config["fcnet_hiddens"]) + post
    trunk, last = mlp(
        int(np.prod(shape)),
        hiddens,
        model_config["fcnet_activation"],
        uses_layernorm(model_config),
        inits.fcnet,
    )
    return trunk, last, "obs_flat"


def action_encoder(action_space: gym.Space[Any]) -> tuple[int, Encoder]:
    """``(size, encode)``: a batch of actions as the model input of that size - one-hot for
    ``Discrete`` (and each part of a ``MultiDiscrete``), the flattened floats of a ``Box``."""
    if isinstance(action_space, gym.spaces.Discrete):
        n = int(action_space.n)

        def one_hot(actions: torch.Tensor) -> torch.Tensor:
            return nn.functional.one_hot(actions.long().reshape(-1), n).float()

        return n, one_hot
    if isinstance(action_space, gym.spaces.MultiDiscrete):
        sizes = [int(k) for k in np.asarray(action_space.nvec).ravel()]

        def one_hots(actions: torch.Tensor) -> torch.Tensor:
            parts = actions.long().reshape(len(actions), -1).unbind(-1)
            return torch.cat(
                [nn.functional.one_hot(p, k).float() for p, k in zip(parts, sizes, strict=True)],
                dim=-1,
            )

        return sum(sizes), one_hots
    if isinstance(action_space, gym.spaces.Box):
        size = int(np.prod(action_space.shape))

        def flat(actions: torch.Tensor) -> torch.Tensor:
            return actions.float().reshape(len(actions), size)

        return size, flat
    raise ValueError(
        f"no previous-action input for a {type(action_space).__name__} action space; "
        "supported: Discrete, MultiDiscrete, Box"
    )


def add_time_dimension(rows: torch.Tensor, seq_lens: torch.Tensor) -> torch.Tensor:
    """``(B*T, ...)`` rows of ``B`` zero-padded sequences -> ``(B, T, ...)``."""
    batch = len(seq_lens)
    return rows.reshape(batch, rows.shape[0] // batch, *rows.shape[1:])
