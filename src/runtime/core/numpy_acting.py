"""``numpy_actions``: acting with a built-in fully connected network on numpy.

A sampler acts once per env step on a few rows (8 in the tuned PPO). At that size each torch
operation costs its fixed dispatch (several microseconds, under every CPU kernel set) and the
arithmetic is nothing: the tuned CartPole's policy and value passes, sampling and
log-likelihoods take about 57 us as torch operations and 22 us as numpy's. So for a
``FullyConnectedNetwork`` (linear layers with tanh or ReLU, no free log-std) on CPU in float32,
with a ``Categorical`` or ``DiagGaussian`` distribution, acting runs on numpy arrays that share
the parameters' memory (``Tensor.numpy()``): every optimizer step and weight load is seen
without a copy.

The random draws still come from torch's generator, one call per act drawing the numbers the
torch path draws (the uniforms of its Gumbel-max sampling, the normals of a Gaussian), so seeds
act as before and the actions are the torch path's; log-likelihoods, distribution inputs and
values are the same to float32 rounding (numpy sums in another order).

A plan of the network's arrays is kept for each model (outside it: a pickled, saved or copied
model carries none) and checked on every call: the modules and parameters it was made from must
still be in place, with the same storage, and unhooked. Anything else returns None and torch
acts (``runtime.core.lean_acting``).
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable
from operator import is_
from typing import Any, cast

import numpy as np
import numpy.typing as npt
import torch
from torch import nn

from runtime.core import distributions, torch_private
from runtime.core.models import FullyConnectedNetwork
from runtime.core.sample_batch import SampleBatch
from runtime.core.tanh import Tanh

Array = npt.NDArray[Any]

#: False: acting always runs on torch (the tests compare both paths that way).
use_numpy = True

_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)
#: The plan of each model (None: it has none).
_PLANS: weakref.WeakKeyDictionary[nn.Module, _Plan | None] = weakref.WeakKeyDictionary()


#: The activations a plan runs, by layer type.
_ACTIVATIONS: dict[type[nn.Module], Callable[[Array], Array]] = {
    Tanh: np.tanh,
    nn.Tanh: np.tanh,
    nn.ReLU: lambda x: np.maximum(x, 0.0),
}

#: One layer: ``x @ weight_t + bias`` (either may be None: an activation alone), then the
#: activation (None: none).
Step = tuple[Array | None, Array | None, Callable[[Array], Array] | None]


class _Plan:
    """The arrays of one ``FullyConnectedNetwork`` and what must hold for them to be current:
    every module and parameter still in its place, each parameter on the storage it had
    (``param.data = ...`` keeps the parameter and swaps its memory), and no hook."""

    def __init__(self) -> None:
        self.trunk: list[Step] = []
        self.logits: list[Step] = []
        self.value: list[Step] = []
        self._slots: list[tuple[dict[str, Any], str]] = []
        self._held: list[Any] = []
        self._params: list[torch.Tensor] = []
        self._addresses: list[int] = []
        self._hooks: list[dict[Any, Any]] = []

    def add(self, steps: list[Step], parent: nn.Module, name: str) -> bool:
        """Append the steps of ``parent.<name>`` (a layer or a ``Sequential`` of layers);
        False when a layer is not one a plan runs."""
        registries = torch_private.module_registries(parent)
        module = None if registries is None else registries[0].get(name)
        own = None if module is None else torch_private.module_registries(module)
        if registries is None or module is None or own is None:
            return False
        self._slots.append((registries[0], name))
        self._held.append(module)
        self._hooks += own[2]
        kind = type(module)
        if kind is nn.Sequential:
            return all(self.add(steps, module, child) for child in list(own[0]))
        if kind is nn.Identity:
            return True
        if kind in _ACTIVATIONS:
            act = _ACTIVATIONS[kind]
            if steps and steps[-1][2] is None and steps[-1][0] is not None:
                steps[-1] = (steps[-1][0], steps[-1][1], act)
            else:
                steps.append((None, None, act))
            return True
        if kind is not nn.Linear:
            return False
        arrays: list[Array | None] = []
        for pname in ("weight", "bias"):
            param = own[1].get(pname)
            if param is None:
                arrays.append(None)
                continue
            if param.dtype != torch.float32 or param.device.type != "cpu":
                return False
            self._slots.append((own[1], pname))
            self._held.append(param)
            self._params.append(param)
            self._addresses.append(param.data_ptr())
            arrays.append(param.detach().numpy())
        weight, bias = arrays
        if weight is None:
            return False
        steps.append((weight.T, bias, None))
        return True

    def current(self) -> bool:
        return (
            all(map(is_, [slots.get(name) for slots, name in self._slots], self._held))
            and [param.data_ptr() for param in self._params] == self._addresses
            and not any(self._hooks)
        )


def _make_plan(model: FullyConnectedNetwork) -> _Plan | None:
    plan = _Plan()
    registries = torch_private.module_registries(model)
    made = (
        registries is not None
        and plan.add(plan.trunk, model, "trunk")
        and plan.add(plan.logits, model, "logits")
        and type(registries[0].get("log_std")) is nn.Identity
        and plan.add(plan.value, model, "value_branch")
    )
    return plan if made else None


def _plan_of(model: nn.Module) -> _Plan | None:
    if type(model) is not FullyConnectedNetwork:
        return None
    plan = _PLANS.get(model)
    if plan is not None and plan.current():
        return plan
    plan = _make_plan(model)
    if plan is not None and not plan.current():  # a hooked layer: torch calls it
        plan = None
    _PLANS[model] = plan
    return plan


def _run(steps: list[Step], x: Array) -> Array:
    for weight_t, bias, act in steps:
        if weight_t is not None:
            x = x @ weight_t
        if bias is not None:
            x += bias
        if act is not None:
            x = act(x)
    return x


def numpy_actions(
    model: nn.Module, dist_class: Any, obs_batch: Array, explore: bool, value_preds: bool
) -> tuple[Array, dict[str, Array]] | None:
    """The actions and extra outputs (``action_logp``, ``action_dist_inputs``, ``vf_preds``
    when asked) of a ``FullyConnectedNetwork`` with a ``Categorical`` or ``DiagGaussian``
    distribution, sampling from torch's generator; None where torch must act."""
    if not use_numpy or dist_class not in (distributions.Categorical, distributions.DiagGaussian):
        return None
    plan = _plan_of(model)
    if plan is None:
        return None
    obs = np.asarray(obs_batch, dtype=np.float32)
    obs = obs.reshape(len(obs), -1)
    features = _run(plan.trunk, obs)
    inputs = _run(plan.logits, features)
    fcnet = cast(FullyConnectedNetwork, model)
    branch_input = features if fcnet.vf_share_layers else obs
    # What TrunkModel.forward leaves for value_function().
    fcnet.__dict__["_features"] = torch.from_numpy(branch_input)
    if dist_class is distributions.Categorical:
        actions, logp = _categorical(inputs, explore)
    else:
        actions, logp = _diag_gaussian(inputs, explore)
    extra = {SampleBatch.ACTION_LOGP: logp, SampleBatch.ACTION_DIST_INPUTS: inputs}
    if value_preds:
        extra[SampleBatch.VF_PREDS] = _run(plan.value, branch_input)[:, 0]
    return actions, extra


def _categorical(logits: Array, explore: bool) -> tuple[Array, Array]:
    shifted = logits - logits.max(axis=-1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    if explore:
        # Categorical.sample's Gumbel-max, on the uniforms it would draw.
        uniform = np.maximum(torch.rand(logits.shape, dtype=torch.float32).numpy(), 1e-20)
        actions = (log_probs - np.log(-np.log(uniform))).argmax(axis=-1)
    else:
        actions = logits.argmax(axis=-1)
    logp = log_probs[_rows(len(actions)), actions]
    return actions, logp


def _rows(count: int) -> Array:
    """``np.arange(count)``, made once per count (indexing a row's column)."""
    rows = _ROWS.get(count)
    if rows is None:
        rows = _ROWS[count] = np.arange(count)
        rows.flags.writeable = False
    return rows


_ROWS: dict[int, Array] = {}


def _diag_gaussian(inputs: Array, explore: bool) -> tuple[Array, Array]:
    mean, log_std = np.split(inputs, 2, axis=-1)
    if not explore:
        return mean.copy(), (-log_std - _HALF_LOG_2PI).sum(axis=-1)
    std = np.exp(log_std)
    actions = mean + std * torch.randn(mean.shape, dtype=torch.float32).numpy()
    z = (actions - mean) / std
    return actions, (-0.5 * z * z - log_std - _HALF_LOG_2PI).sum(axis=-1)
