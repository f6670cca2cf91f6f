"""``model.conv_filters``: the reference's default conv stacks by image size, and the layer
geometry of a stack.

A stack is ``[[out_channels, kernel, stride], ...]`` ("same" padding for every layer but the
last, which is "valid", as the reference's VisionNetwork), and a filter may give its layer's
padding as a fourth element, ``[out_channels, kernel, stride, "same" | "valid"]`` (RLlib's
new API stack's form; all "valid" is the Nature CNN of SB3 and CleanRL). A kernel or stride
is an int or an ``[height, width]`` pair.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rlconf.conv_filter_spec import CONV_FILTER_TEXT, CONV_PADDINGS
from rlconf.errors import ConfigError

#: The reference's default stacks (its ``get_filter_config``), by the image's height x width.
#: Each brings its image to a 1x1 map.
DEFAULT_CONV_FILTERS: dict[tuple[int, int], list[list[Any]]] = {
    (480, 640): [[16, [24, 32], [14, 18]], [32, [6, 6], 4], [256, [9, 9], 1]],
    (240, 320): [[16, [12, 16], [7, 9]], [32, [6, 6], 4], [256, [9, 9], 1]],
    (96, 96): [[16, [8, 8], 4], [32, [4, 4], 2], [256, [11, 11], 2]],
    (84, 84): [[16, [8, 8], 4], [32, [4, 4], 2], [256, [11, 11], 1]],
    (42, 42): [[16, [4, 4], 2], [32, [4, 4], 2], [256, [11, 11], 1]],
    (10, 10): [[16, [5, 5], 2], [32, [5, 5], 2]],
}

_WHERE = "ModelCatalog.get_model()"
_SIZES = ", ".join(f"{h}x{w}" for h, w in DEFAULT_CONV_FILTERS)
_ENTRY = CONV_FILTER_TEXT


@dataclass(frozen=True)
class ConvLayer:
    """One layer of a stack: its geometry on an input map of ``in_size`` (height, width)."""

    out_channels: int
    kernel: tuple[int, int]
    stride: tuple[int, int]
    #: (left, right, top, bottom) zero padding; all 0 for a "valid" layer.
    padding: tuple[int, int, int, int]
    in_size: tuple[int, int]
    out_size: tuple[int, int]


def conv_filters_for(shape: Sequence[int], model_config: dict[str, Any]) -> list[Any]:
    """``model.conv_filters``, or the default stack for an HxWxC ``shape``; an image size
    with neither is a ConfigError naming the shape and what to set."""
    given = model_config["conv_filters"]
    if given is not None:
        if not given:
            raise ConfigError.single(
                _WHERE,
                "model.conv_filters",
                "is empty; a vision model needs at least one conv layer",
                value=given,
                has_value=True,
                allowed=f"a list of {_ENTRY}, or None for a default stack",
            )
        return list(given)
    height, width = int(shape[0]), int(shape[1])
    default = DEFAULT_CONV_FILTERS.get((height, width))
    if default is None:
        raise ConfigError.single(
            _WHERE,
            "model.conv_filters",
            f"is None, and image observations of shape {tuple(shape)} have no default conv "
            f"stack (the defaults are for {_SIZES} images)",
            value=None,
            has_value=True,
            allowed=f"model.conv_filters for {height}x{width} images (a list of {_ENTRY}), "
            "model.custom_model, or observations of a size with a default stack (model.dim "
            "sets the size Atari frames are resized to)",
        )
    return copy.deepcopy(default)  # the model's own, whatever a user does with it


def conv_layers(shape: Sequence[int], filters: Sequence[Any]) -> list[ConvLayer]:
    """The layers of ``filters`` over an HxWxC image, each padded as its filter's fourth
    element says, or else "same" (TensorFlow's: the output is ceil(input / stride)) for all
    but the last layer and "valid" for the last."""
    size = (int(shape[0]), int(shape[1]))
    layers = []
    for index, entry in enumerate(filters):
        out_channels, kernel, stride, given = _parse(index, entry)
        padding_mode = given or ("same" if index < len(filters) - 1 else "valid")
        if padding_mode == "same":
            padding, out_size = _same(size, kernel, stride)
        else:
            padding, out_size = (0, 0, 0, 0), _valid(size, kernel, stride)
            if min(out_size) < 1:
                raise ConfigError.single(
                    _WHERE,
                    "model.conv_filters",
                    f"leaves no output for images of shape {tuple(shape)}: layer {index}'s "
                    f"kernel {list(kernel)} (valid padding) is larger than the {size[0]}x"
                    f"{size[1]} map the layers before it leave",
                    value=list(filters),
                    has_value=True,
                    allowed="a stack whose 'valid' kernels fit the maps they get",
                )
        layers.append(ConvLayer(out_channels, kernel, stride, padding, size, out_size))
        size = out_size
    return layers


def _parse(index: int, entry: Any) -> tuple[int, tuple[int, int], tuple[int, int], str | None]:
    """A filter's channels, kernel and stride, and its padding (None: none given)."""
    try:
        out_channels, kernel, stride, *rest = entry
        pair_kernel, pair_stride = _pair(kernel), _pair(stride)
        if int(out_channels) < 1 or min(*pair_kernel, *pair_stride) < 1:
            raise ValueError
        if len(rest) > 1 or (rest and rest[0] not in CONV_PADDINGS):
            raise ValueError
    except (TypeError, ValueError):
        raise ConfigError.single(
            _WHERE,
            f"model.conv_filters[{index}]",
            "is not a conv layer",
            value=entry,
            has_value=True,
            allowed=_ENTRY,
        ) from None
    return int(out_channels), pair_kernel, pair_stride, str(rest[0]) if rest else None


def _pair(value: Any) -> tuple[int, int]:
    if isinstance(value, int) and not isinstance(value, bool):
        return value, value
    height, width = value
    if not (isinstance(height, int) and isinstance(width, int)):
        raise TypeError(value)
    return height, width


def _same(
    size: tuple[int, int], kernel: tuple[int, int], stride: tuple[int, int]
) -> tuple[tuple[int, int, int, int], tuple[int, int]]:
    out, pads = [], []
    for length, k, s in zip(size, kernel, stride, strict=True):
        out.append(math.ceil(length / s))
        total = max(0, (out[-1] - 1) * s + k - length)
        # The odd pixel goes after, as TensorFlow (and the reference) pad.
        pads.append((total // 2, total - total // 2))
    (top, bottom), (left, right) = pads
    return (left, right, top, bottom), (out[0], out[1])


def _valid(
    size: tuple[int, int], kernel: tuple[int, int], stride: tuple[int, int]
) -> tuple[int, int]:
    height, width = (
        (n - k) // s + 1 if n >= k else 0 for n, k, s in zip(size, kernel, stride, strict=True)
    )
    return height, width
