"""How the built-in networks' layers start: the model dict's initializer keys
(``rlconf.layer_init_keys``) resolved to functions, and applied to each group's layers.

With every key None the layers start as they always have here: orthogonal weights scaled by
each layer's gain and zero biases for the dense and conv layers, torch's own start for the
LSTM. A function given is called as RLlib calls it, ``fn(tensor, **kwargs)``, on the weight and
on the bias of each layer of its group, in place of that start.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

import torch
from torch import nn

from rlconf.errors import ConfigError
from rlconf.importpath import ImportPathError, resolve
from rlconf.layer_init_keys import (
    ALLOWED,
    LAYER_GROUPS,
    given,
    init_function_name,
    initializer_key,
)

_WHERE = "ModelCatalog.get_model()"

Init = Callable[..., Any]


@dataclass(frozen=True)
class LayerInit:
    """The weight and bias initializers of one group of layers (None: the layers' own start)
    and the keyword arguments each is called with."""

    kernel: Init | None = None
    kernel_kwargs: Mapping[str, Any] = field(default_factory=dict)
    bias: Init | None = None
    bias_kwargs: Mapping[str, Any] = field(default_factory=dict)

    def start(self, layer: nn.Linear | nn.Conv2d, gain: float) -> None:
        """Start a linear or conv layer: the kernel initializer, else orthogonal weights with
        ``gain``; the bias initializer, else zeros."""
        if self.kernel is None:
            nn.init.orthogonal_(layer.weight, gain)
        else:
            _call(self.kernel, layer.weight, self.kernel_kwargs)
        if layer.bias is None:
            return
        if self.bias is None:
            nn.init.zeros_(layer.bias)
        else:
            _call(self.bias, layer.bias, self.bias_kwargs)

    def start_lstm(self, layer: nn.LSTM) -> None:
        """Start an LSTM's input and recurrent weights and its biases where an initializer is
        given (each stays at torch's own start otherwise)."""
        for name, param in layer.named_parameters():
            if name.startswith("weight") and self.kernel is not None:
                _call(self.kernel, param, self.kernel_kwargs)
            elif name.startswith("bias") and self.bias is not None:
                _call(self.bias, param, self.bias_kwargs)


#: Every key None.
DEFAULT_INIT = LayerInit()


def _call(function: Init, tensor: torch.Tensor, kwargs: Mapping[str, Any]) -> None:
    with torch.no_grad():
        function(tensor, **kwargs)


@dataclass(frozen=True)
class LayerInits:
    """The initializers of each group of a network's layers (``rlconf.layer_init_keys``)."""

    fcnet: LayerInit = DEFAULT_INIT
    conv: LayerInit = DEFAULT_INIT
    head: LayerInit = DEFAULT_INIT
    lstm: LayerInit = DEFAULT_INIT


def layer_inits(model_config: Mapping[str, Any]) -> LayerInits:
    """The initializers the model dict names, resolved (an unknown name is a ConfigError)."""
    groups = {group: _group_init(model_config, group) for group in LAYER_GROUPS}
    return LayerInits(
        fcnet=groups["fcnet"], conv=groups["conv"], head=groups["head_fcnet"], lstm=groups["lstm"]
    )


def _group_init(model_config: Mapping[str, Any], group: str) -> LayerInit:
    parts: dict[str, Any] = {}
    for part in ("kernel", "bias"):
        key = initializer_key(group, part)
        parts[part] = resolve_initializer(key, given(model_config, key))
        parts[f"{part}_kwargs"] = dict(given(model_config, f"{key}_kwargs") or {})
    if parts == {"kernel": None, "kernel_kwargs": {}, "bias": None, "bias_kwargs": {}}:
        return DEFAULT_INIT
    return LayerInit(**parts)


def resolve_initializer(key: str, value: Any) -> Init | None:
    """The function an initializer key names: None, a callable, a ``torch.nn.init`` name (the
    trailing ``_`` optional) or an import path; anything else is a ConfigError naming the key."""
    if value is None or callable(value):
        return cast(Init | None, value)
    if isinstance(value, str):
        name = init_function_name(value)
        if name is not None:
            function: Init = getattr(nn.init, name)
            return function
        if "." in value or ":" in value:
            try:
                found = resolve(value)
            except ImportPathError as exc:
                raise _refused(key, value, f"is not an initializer: {exc}") from None
            if callable(found):
                return cast(Init, found)
    raise _refused(key, value, "is not a torch.nn.init function, a function or an import path")


def _refused(key: str, value: Any, problem: str) -> ConfigError:
    return ConfigError.single(
        _WHERE, f"model.{key}", problem, value=value, has_value=True, allowed=ALLOWED
    )
