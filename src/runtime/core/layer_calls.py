"""``run_layers`` and ``run_model``: calling a network's layers without ``nn.Module.__call__``.

Where no hook is registered (on the module or globally) and nothing is being traced,
``nn.Module.__call__`` only calls ``forward``, after about a microsecond of checks. The policies'
networks are small and called per step (acting) and per minibatch (learning), through nested
modules: a Q-network's pass is ten module calls, and a DQN gradient step two passes. So the
built-in networks call their layers' ``forward`` directly when nothing is hooked: the same
operations on the same tensors, hence the same numbers, gradients included. A hooked module, a
global hook or tracing (``torch_private.no_global_hooks``) makes them call as modules again.
"""

from __future__ import annotations

from typing import Any, cast

import torch
import torch.nn.functional as F
from torch import nn

from runtime.core.torch_private import no_global_hooks, unhooked

__all__ = ["call_layers", "no_global_hooks", "run_layers", "run_model"]


def run_layers(module: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """``module(x)`` for a module of one input: where nothing is hooked, a ``Sequential``'s
    layers in turn, a ``Linear`` as ``F.linear`` and any other layer's ``forward`` called
    directly (what ``nn.Module.__call__`` does then, without its cost); a hooked module is
    called as a module. Assumes ``no_global_hooks()``."""
    if not unhooked(module):
        return module(x)  # type: ignore[no-any-return]
    kind = type(module)
    if kind is nn.Sequential:
        for layer in cast(nn.Sequential, module):
            x = run_layers(layer, x)
        return x
    if kind is nn.Linear:
        linear = cast(nn.Linear, module)
        return F.linear(x, linear.weight, linear.bias)
    if kind is nn.Identity:
        return x
    return module.forward(x)  # type: ignore[no-any-return]


def call_layers(module: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """``module(x)``: ``run_layers`` where nothing is hooked globally or traced, else the module
    called as a module."""
    return run_layers(module, x) if no_global_hooks() else module(x)


def run_model(model: nn.Module, *args: Any) -> Any:
    """``model(*args)``, calling ``model.forward`` directly where nothing is hooked (globally or
    on ``model``) and nothing is traced."""
    if no_global_hooks() and unhooked(model):
        return model.forward(*args)
    return model(*args)
