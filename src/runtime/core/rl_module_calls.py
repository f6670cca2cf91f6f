"""``UserModuleCalls``: how an adapter (``runtime.core.rl_module_adapter``) builds and calls a
user's ``TorchRLModule``: the module from its ``RLModuleSpec``, the batches it reads, the keys
its outputs must hold (a missing one is a ``ConfigError`` naming the module class, the method,
the keys it returned and those the algorithm needs), its values and its memory.

A module with memory keeps its state as a dict (``get_initial_state()``); the runtime keeps
states as ``state_in_k`` / ``state_out_k`` columns, one per tensor of the dict in the order
of its (nested) keys. It is called on ``(B, 1, ...)`` observations while acting (the outputs
taken at that one step) and on ``(S, T, ...)`` sequences with ``seq_lens`` while learning (the
outputs of the valid steps kept, sequence after sequence), as the runtime's own memory models.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from rlconf.errors import ConfigError
from rlconf.rl_module_spec import MultiRLModuleSpec, RLModuleSpec, resolved_class
from runtime.core.module import RLModule
from runtime.core.rl_module import TorchRLModule
from runtime.core.sample_batch import SampleBatch as SB
from runtime.core.settings import settings_of

Tensors = dict[str, torch.Tensor]
#: The RLlib module methods that choose an action distribution: the runtime's is that of the
#: action space (or ``model.custom_action_dist``), so a module that overrides one is refused.
_DIST_METHODS = (
    "get_inference_action_dist_cls",
    "get_exploration_action_dist_cls",
    "get_train_action_dist_cls",
)
STATE_IN, STATE_OUT, EMBEDDINGS = "state_in", "state_out", "embeddings"


@dataclass(frozen=True)
class CustomModuleSettings:
    rl_module_spec: Any
    model: Any


def policy_module_spec(config: Any, component: str) -> RLModuleSpec:
    """The ``RLModuleSpec`` (with a module class) a policy's config names."""
    spec = settings_of(CustomModuleSettings, config, component).rl_module_spec
    if isinstance(spec, MultiRLModuleSpec):
        single = spec.rl_module_specs
        if not isinstance(single, RLModuleSpec):
            raise ConfigError.single(
                component,
                "rl_module_spec",
                "is a MultiRLModuleSpec, which gives each policy id its spec; this policy was "
                "made outside a rollout worker, without its id: give it its RLModuleSpec",
                value=sorted(single),
                has_value=True,
            )
        spec = single
    assert isinstance(spec, RLModuleSpec) and spec.module_class is not None
    return spec


def state_paths(state: Mapping[str, Any], prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """The key path of every tensor of a (nested) state dict, in order."""
    paths: list[tuple[str, ...]] = []
    for key, value in state.items():
        if isinstance(value, Mapping):
            paths += state_paths(value, (*prefix, key))
        else:
            paths.append((*prefix, key))
    return paths


def _at(state: Mapping[str, Any], path: Sequence[str]) -> Any:
    for key in path:
        state = state[key]
    return state


def nested(tensors: Sequence[torch.Tensor], paths: Sequence[tuple[str, ...]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for tensor, path in zip(tensors, paths, strict=True):
        node = out
        for key in path[:-1]:
            node = node.setdefault(key, {})
        node[path[-1]] = tensor
    return out


class UserModuleCalls(RLModule):
    """The base of the adapters: the user's module is the submodule ``model`` (what
    ``policy.model`` and ``algo.get_module()`` return; its weights are the policy's under
    ``model.``), read through ``user_module``."""

    #: The algorithm (its config's ``algo_name``), named in errors.
    algorithm: str
    state_keys: list[tuple[str, ...]]
    state_size: int
    _takes_embeddings: bool

    @property
    def user_module(self) -> TorchRLModule:
        module = self._modules["model"]
        assert isinstance(module, TorchRLModule)
        return module

    def get_initial_state(self) -> list[torch.Tensor]:
        return self.user_state()

    def build_user_module(
        self, observation_space: gym.Space[Any], action_space: gym.Space[Any], config: Any
    ) -> None:
        """Build ``model`` from the policy's spec, on the policy's spaces."""
        component = type(self).__name__
        spec = policy_module_spec(config, component)
        module_class = spec.resolved_module_class()
        if not issubclass(module_class, TorchRLModule):
            raise ConfigError.single(
                component,
                "rl_module_spec.module_class",
                "is not a runtime.TorchRLModule subclass",
                value=module_class.__name__,
                has_value=True,
                allowed="a subclass of runtime.TorchRLModule",
            )
        for name in _DIST_METHODS:
            if hasattr(module_class, name):
                raise ConfigError.single(
                    component,
                    f"rl_module_spec.module_class.{name}",
                    "is defined, but the runtime's action distribution is the action space's "
                    "(Categorical over logits for Discrete actions, a diagonal Gaussian over "
                    "means and log-stds for Box ones; model.custom_action_dist for your own)",
                    value=module_class.__name__,
                    has_value=True,
                    allowed="a module without it",
                )
        for name, given, own in (
            ("observation_space", spec.observation_space, observation_space),
            ("action_space", spec.action_space, action_space),
        ):
            if given is not None and given != own:
                raise ConfigError.single(
                    component,
                    f"rl_module_spec.{name}",
                    f"differs from the policy's {own} (the module sees the observations as the "
                    "worker's preprocessor makes them); give the policy's spaces in its "
                    "PolicySpec, or leave the spec's None",
                    value=given,
                    has_value=True,
                    allowed=repr(own),
                )
        settings = settings_of(CustomModuleSettings, config, component)
        given_config = spec.model_dict()
        model_config = dict(settings.model) if given_config is None else given_config
        catalog = spec.catalog_class
        if catalog is not None:
            catalog = resolved_class(catalog, "catalog_class")
        module = module_class(
            observation_space=observation_space,
            action_space=action_space,
            inference_only=False,
            learner_only=False,
            model_config=model_config,
            catalog_class=catalog,
        )
        self.add_module("model", module)
        self.algorithm = str(getattr(config, "algo_name", None) or type(config).__name__)
        initial = module.get_initial_state()
        self.state_keys = state_paths(initial) if initial else []
        self.state_size = len(self.state_keys)
        self.is_recurrent = self.state_size > 0
        # A module with memory trains on sequences of its own model_config's max_seq_len.
        if "max_seq_len" in model_config:
            self.model_config["max_seq_len"] = int(model_config["max_seq_len"])
        values = getattr(module, "compute_values", None)
        self._takes_embeddings = values is not None and _takes(values, "embeddings")

    # ------------------------------------------------------------------ calls

    def user_state(self) -> list[torch.Tensor]:
        """``get_initial_state()`` as the runtime's list of state tensors."""
        initial = self.user_module.get_initial_state()
        return [torch.as_tensor(_at(initial, path)) for path in self.state_keys]

    def user_call(self, method: str, batch: Tensors, needs: Sequence[str]) -> tuple[Any, Any]:
        """``(outputs, the batch the module got)`` of ``model.<method>(batch)``, with ``needs``
        checked; a module with memory gets its ``(B, T, ...)`` layout."""
        given = self.user_batch(batch)
        out = getattr(self.user_module, method)(given)
        self.require(out, method, needs)
        return out, given

    def user_batch(self, batch: Tensors) -> dict[str, Any]:
        if not self.is_recurrent:
            return batch
        state = nested([batch[SB.state_in(k)] for k in range(self.state_size)], self.state_keys)
        if SB.SEQ_LENS in batch:
            given: dict[str, Any] = {SB.OBS: batch[SB.OBS], SB.SEQ_LENS: batch[SB.SEQ_LENS]}
            for key in (SB.PREV_ACTIONS, SB.PREV_REWARDS):
                if key in batch:
                    given[key] = batch[key]
        else:
            given = {SB.OBS: batch[SB.OBS].unsqueeze(1)}
        given[STATE_IN] = state
        return given

    def rows(self, value: torch.Tensor, given: Mapping[str, Any]) -> torch.Tensor:
        """An output of a module with memory as one row per step: the valid steps of
        ``(S, T, ...)`` sequences, or the one step of ``(B, 1, ...)`` acting."""
        if not self.is_recurrent:
            return value
        obs = given[SB.OBS]
        seq_lens = given.get(SB.SEQ_LENS)
        batch, steps = obs.shape[0], obs.shape[1]
        if tuple(value.shape[:2]) != (batch, steps):
            if value.shape[0] == batch * steps or (seq_lens is None and value.shape[0] == batch):
                return value if seq_lens is None else value[_valid(seq_lens, steps).reshape(-1)]
            raise ValueError(
                f"{type(self.user_module).__name__}: an output of shape {tuple(value.shape)} for "
                f"observations of shape {tuple(obs.shape)}; a module with memory returns "
                "(B, T, ...) outputs"
            )
        if seq_lens is None:
            return value[:, 0]
        return value[_valid(seq_lens, steps)]

    def state_out(self, out: Mapping[str, Any], method: str) -> Tensors:
        """The ``state_out_k`` columns of a module with memory's acting outputs."""
        self.require(out, method, [STATE_OUT])
        state = out[STATE_OUT]
        return {SB.state_out(k): _at(state, path) for k, path in enumerate(self.state_keys)}

    def user_values(
        self, given: Mapping[str, Any], out: Mapping[str, Any], method: str
    ) -> torch.Tensor:
        """V(s) per row: ``compute_values`` (given the pass's embeddings where it takes them),
        else the pass's ``vf_preds``."""
        compute = getattr(self.user_module, "compute_values", None)
        if compute is not None:
            if self._takes_embeddings:
                values = compute(given, embeddings=out.get(EMBEDDINGS))
            else:
                values = compute(given)
        elif SB.VF_PREDS in out:
            values = out[SB.VF_PREDS]
        else:
            needs = [f"{SB.ACTION_DIST_INPUTS}", f"{SB.VF_PREDS} (or a compute_values() method)"]
            raise self.missing_keys(out, method, needs)
        return _flat_values(self.rows(values, given))

    def require(self, out: Any, method: str, needs: Sequence[str]) -> None:
        """A ``ConfigError`` when ``out`` lacks one of ``needs`` (a key, then words)."""
        if not isinstance(out, Mapping) or any(k.split(" ")[0] not in out for k in needs):
            raise self.missing_keys(out, method, needs)

    def missing_keys(self, out: Any, method: str, needs: Sequence[str]) -> ConfigError:
        """What ``require`` raises: the module class, the method, the keys ``out`` has and
        those ``needs`` names."""
        keys = sorted(out) if isinstance(out, Mapping) else None
        missing = [k for k in needs if keys is None or k.split(" ")[0] not in out]
        returned = f"the keys {keys}" if keys is not None else f"a {type(out).__name__}"
        name = type(self.user_module).__name__
        return ConfigError.single(
            f"{name}.{method}()",
            "rl_module_spec.module_class",
            f"{name}.{method}() returned {returned}; {self.algorithm} needs {list(needs)} "
            f"(missing: {missing})",
            has_value=False,
            allowed=f"a module whose {method}() returns a dict with {list(needs)}",
        )

    @contextlib.contextmanager
    def probing(self) -> Iterator[Tensors]:
        """A two-row batch of zero observations (and the initial state) to check the module's
        outputs with, at build: without gradients, in eval mode (no batch statistics change)
        and on a forked torch RNG (the draws of a run stay the same)."""
        space = self.user_module.observation_space
        shape = tuple(getattr(space, "shape", None) or ())
        dtype = getattr(space, "dtype", None) or np.float32
        batch: Tensors = {SB.OBS: torch.from_numpy(np.zeros((2, *shape), dtype=dtype))}
        for k, state in enumerate(self.user_state()):
            batch[SB.state_in(k)] = state.unsqueeze(0).repeat(2, *([1] * state.dim()))
        device = next((p.device for p in self.user_module.parameters()), torch.device("cpu"))
        batch = {k: v.to(device) for k, v in batch.items()}
        training = self.user_module.training
        self.user_module.eval()
        try:
            with torch.random.fork_rng(devices=[]), torch.no_grad():
                yield batch
        finally:
            self.user_module.train(training)


def _valid(seq_lens: torch.Tensor, steps: int) -> torch.Tensor:
    return torch.arange(steps, device=seq_lens.device)[None, :] < seq_lens[:, None]


def _flat_values(values: torch.Tensor) -> torch.Tensor:
    return values.squeeze(-1) if values.dim() == 2 and values.shape[-1] == 1 else values


def _takes(function: Any, keyword: str) -> bool:
    try:
        parameters = inspect.signature(function).parameters
    except (TypeError, ValueError):
        return False
    return keyword in parameters or any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()
    )
