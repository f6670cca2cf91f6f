"""``GroupedActing``: the actions of several policies of one architecture in one pass.

A multi-agent sampler acts once per policy per env step, each pass over the few rows of that
policy's agents (16 per policy in a multi-agent CartPole of 8 agents x 8 sub-envs split
between two policies). Measured in the sampler, a pass's fixed cost (some 25 torch calls,
its weights and code fetched again after the envs stepped) is most of its time at that size,
so two policies cost nearly twice one. Policies whose networks have the same layers act here
in one pass: each layer of all of them as one batched matrix product (``torch.baddbmm`` over
their weights stacked, kept until one of them changes), and their actions drawn from one
distribution over all rows (the rows that pad a policy with fewer agents to the widest act
too, and are dropped: cheaper than gathering the real rows first).

What can act here (``GroupedActing.member``) is what ``runtime.core.lean_acting`` computes
directly: the built-in fully connected network (linear layers with biases and elementwise
activations, no free log-std) acting with ``StochasticSampling``, and no value in the pass (a
separate value network, valued per fragment, or no critic). The rows' numbers are those of the
policy's own pass to float rounding; the random draws are shared, so actions differ from
acting policy by policy (as they would with the sub-envs in another order).
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import numpy.typing as npt
import torch
from torch import nn

from runtime.core.exploration.stochastic_sampling import StochasticSampling
from runtime.core.layer_calls import run_layers
from runtime.core.lean_acting import plain_trunk_model
from runtime.core.models import FullyConnectedNetwork
from runtime.core.module import ActorCriticModule
from runtime.core.sample_batch import SampleBatch
from runtime.core.tanh import Tanh
from runtime.core.torch_private import no_global_hooks, tensor_versions, unhooked

if TYPE_CHECKING:
    from runtime.core.policy import TorchPolicy

Array = npt.NDArray[Any]

#: Layers applied to each element alone: the same on a policy's rows and on the stacked rows
#: of several policies.
_ELEMENTWISE = (Tanh, nn.Tanh, nn.ReLU, nn.SiLU, nn.ELU)


def _layers(policy: TorchPolicy) -> list[nn.Module] | None:
    """The policy network's layers, input to logits, when they can be stacked: linear layers
    and elementwise activations, none hooked; else None."""
    model = policy.module.model
    if type(model) is not FullyConnectedNetwork or not plain_trunk_model(model):
        return None
    if type(model.log_std) is not nn.Identity or type(model.logits) is not nn.Linear:
        return None
    if type(model.trunk) is not nn.Sequential or not unhooked(model):
        return None
    layers = [*model.trunk, model.logits]
    for layer in (model.trunk, model.log_std, *layers):
        if not unhooked(layer):
            return None
    for layer in layers:
        if type(layer) is nn.Linear:
            if getattr(layer, "bias", None) is None:  # nn.Linear(bias=False)
                return None
        elif type(layer) not in _ELEMENTWISE:
            return None
    return layers


def _signature(layer: nn.Module) -> tuple[Any, ...]:
    if type(layer) is nn.Linear:
        return ("linear", layer.in_features, layer.out_features)
    return (type(layer), getattr(layer, "alpha", None), getattr(layer, "inplace", None))


def _group_of(
    policy: TorchPolicy, explore: bool | None, value_preds: bool
) -> tuple[tuple[Any, ...], list[nn.Module]] | None:
    """What policies acting in one pass must share (their layers' shapes, activations,
    distribution, device and ``explore``, None: the policy's own setting) and the policy's
    layers, or None when ``policy`` can't act in one (see the module's docstring)."""
    module = policy.module
    exploration = policy.exploration
    explore = policy._explore if explore is None else explore
    timestep = policy.global_timestep
    if (
        type(module) is not ActorCriticModule
        or module.is_recurrent
        or type(exploration) is not StochasticSampling
        or policy.dist_class is None
        or (explore and timestep < exploration.random_timesteps)
        or (value_preds and module.has_critic)
        or not no_global_hooks()
    ):
        return None
    layers = _layers(policy)
    if layers is None:
        return None
    key = (policy.dist_class, explore, policy.device, tuple(map(_signature, layers)))
    return key, layers


class _Stacked:
    """The weights of a group's policies stacked per layer (``[P, in, out]`` and ``[P, 1,
    out]``), made again when one of them changed (``tensor_versions``: in place, or a storage
    swapped in). The parameters are looked up once for the policies' layer lists (``member``'s,
    kept per fragment), not on every step: reading them through ``nn.Module`` attributes cost a
    tenth of a step's pass. A parameter object replaced on a layer is read at the next
    fragment."""

    __slots__ = ("layers", "params", "source", "versions", "weights")

    def __init__(self) -> None:
        self.versions: tuple[int, ...] | None = None
        self.weights: list[tuple[torch.Tensor, torch.Tensor] | None] = []
        self.layers: list[nn.Module] = []
        self.source: list[list[nn.Module]] = []
        self.params: list[torch.Tensor] = []

    def update(self, per_policy: list[list[nn.Module]]) -> None:
        # Lists of the same layer objects (modules compare by identity); a reloaded policy's
        # are new objects.
        if per_policy != self.source:
            self.source = per_policy
            self.params = [
                p
                for layers in per_policy
                for layer in layers
                if type(layer) is nn.Linear
                for p in (layer.weight, layer.bias)
            ]
            self.versions = None
        versions = tensor_versions(self.params)
        if versions is not None and versions == self.versions and self.weights:
            return
        self.layers = per_policy[0]
        self.weights = []
        for k, layer in enumerate(per_policy[0]):
            if type(layer) is not nn.Linear:
                self.weights.append(None)
                continue
            columns = [cast(nn.Linear, layers[k]) for layers in per_policy]
            weight = torch.stack([lin.weight.detach().t() for lin in columns]).contiguous()
            bias = torch.stack([lin.bias.detach() for lin in columns]).unsqueeze(1)
            self.weights.append((weight, bias))
        self.versions = versions


class GroupedActing:
    """Acts for groups of policies in one pass each. ``member`` tells whether a policy can act
    in a group, and which (checked once per policy per fragment: the checks cost more than a
    step's pass saves); ``act`` runs a step's pass of a group's policies that have rows. Keeps
    each group's stacked weights."""

    def __init__(self) -> None:
        self._stacked: dict[tuple[str, ...], _Stacked] = {}
        #: (policy id, explore) -> the policy object checked (weakly: an evicted policy is not
        #: kept alive here), and its group key and layers (None: it acts alone).
        self._members: dict[
            tuple[str, bool | None],
            tuple[weakref.ref[TorchPolicy], tuple[tuple[Any, ...], list[nn.Module]] | None],
        ] = {}

    def forget(self) -> None:
        """Drop what was found and the stacked weights (policies were added or removed)."""
        self._stacked.clear()
        self._members.clear()

    def replan(self) -> None:
        """Check the policies again (a new fragment: hooks, exploration timesteps or the
        policies may have changed), and drop the stacked weights (the groups acting together
        may change; stacking again costs little once per fragment)."""
        self._members.clear()
        self._stacked.clear()

    def member(
        self, policy_id: str, policy: TorchPolicy, explore: bool | None, value_preds: bool
    ) -> tuple[tuple[Any, ...], list[nn.Module]] | None:
        """``policy``'s group key and layers, or None when it acts alone; ``value_preds``:
        whether the sampler wants values from the pass. Found once per ``replan`` (again for a
        policy object that replaced the one checked, as a reloaded policy does)."""
        entry = self._members.get((policy_id, explore))
        if entry is not None and entry[0]() is policy:
            return entry[1]
        found = _group_of(policy, explore, value_preds)
        self._members[(policy_id, explore)] = (weakref.ref(policy), found)
        return found

    def act(
        self,
        policies: Sequence[TorchPolicy],
        layers: Sequence[list[nn.Module]],
        obs_batches: Sequence[Array],
        key: tuple[str, ...],
        explore: bool | None,
    ) -> list[tuple[Array, dict[str, Array]]]:
        """Each policy's ``(actions, extra)`` (``action_logp``, ``action_dist_inputs``) for
        its preprocessed observations, as ``compute_actions(..., value_preds=False)`` would
        give them; the policies are (some of) one group, ``layers`` theirs, ``key`` names
        them for their stacked weights."""
        explore = policies[0]._explore if explore is None else explore
        for policy in policies:
            if policy._weights_stale:
                policy.pull_weights()
        stacked = self._stacked.get(key)
        if stacked is None:
            stacked = self._stacked[key] = _Stacked()
        stacked.update(list(layers))
        rows = [len(obs) for obs in obs_batches]
        width = max(rows)
        features = math.prod(obs_batches[0].shape[1:])
        padded = np.zeros((len(rows), width, features), dtype=np.float32)
        for k, obs in enumerate(obs_batches):
            padded[k, : rows[k]] = obs.reshape(rows[k], features)
        device = policies[0].device
        dist_class = policies[0].dist_class
        assert dist_class is not None
        with torch.inference_mode():
            x = torch.from_numpy(padded)
            if device.type != "cpu":
                x = x.to(device)
            for layer, weights in zip(stacked.layers, stacked.weights, strict=True):
                if weights is None:
                    x = run_layers(layer, x)
                else:
                    x = torch.baddbmm(weights[1], x, weights[0])
            # The padding rows act too (their actions are dropped below): cheaper than
            # gathering the real rows first.
            dist_inputs = x.reshape(len(rows) * width, -1)
            dist = dist_class(dist_inputs)
            actions = dist.sample() if explore else dist.deterministic_sample()
            logp = dist.logp(actions).cpu().numpy()
            actions_np = actions.cpu().numpy()
            inputs_np = dist_inputs.cpu().numpy()
        for policy in policies:
            policy.exploration.env_indices = None
        out = []
        for k, n in enumerate(rows):
            start = k * width
            end = start + n
            extra = {
                SampleBatch.ACTION_LOGP: logp[start:end],
                SampleBatch.ACTION_DIST_INPUTS: inputs_np[start:end],
            }
            out.append((actions_np[start:end], extra))
        return out
