"""The module adapter: a policy whose config names an ``RLModuleSpec`` acts and learns with the
user's ``TorchRLModule`` wrapped behind the module interface its algorithm trains.

``custom_module_class(base, config)`` picks the adapter for the algorithm's own module class:

- the policy-gradient family (PPO, A2C, PG: ``ActorCriticModule``; IMPALA and APPO, whose
  critic is always on): ``CustomActorCriticModule``, which needs ``action_dist_inputs`` and,
  with a critic, values (``compute_values``, ``ValueFunctionAPI``, or a ``vf_preds`` output);
  a module with memory trains on sequences where the algorithm does (PPO, A2C, PG);
- DQN (``QModule``): ``CustomQModule``, Q-values per action;
- SAC (``SACModule``): ``CustomSACModule``, the policy's ``action_dist_inputs`` and the
  Q-values of (obs, actions), twin with ``twin_q`` (``runtime.core.rl_module_q``).

Other algorithms (DDPG, TD3, MARWIL, BC) refuse a spec with the reason. Settings that shape
only the algorithm's own networks (DQN's ``hiddens`` and ``dueling``, SAC's
``q_model_config`` and ``policy_model_config``, ``model`` keys beside a spec with a
``model_config`` of its own) are refused when set to anything but their defaults.
``module_policy_config`` gives each policy its own spec of a ``MultiRLModuleSpec``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import gymnasium as gym
import torch

from rlconf.errors import ConfigError, FieldIssue, short_repr
from rlconf.rl_module_spec import MultiRLModuleSpec, RLModuleSpec
from runtime.core.model_catalog import ModelCatalog
from runtime.core.module import ActorCriticModule, ActorCriticSettings, RLModule
from runtime.core.rl_module_calls import UserModuleCalls
from runtime.core.sample_batch import SampleBatch as SB
from runtime.core.settings import settings_of

Tensors = dict[str, torch.Tensor]
_ABSENT: Any = object()
#: ``model`` keys that act whatever the module: the env's preprocessing, and the action
#: distribution the policy acts with.
_ACTING_MODEL_KEYS = frozenset(
    {"dim", "grayscale", "zero_mean", "framestack", "custom_action_dist"}
)
SUPPORTED = "PPO, APPO, IMPALA, A2C, PG, DQN and SAC"


@dataclass(frozen=True)
class ModuleSpecSetting:
    rl_module_spec: Any = None


@dataclass(frozen=True)
class OwnNetworkSettings:
    """The settings of an algorithm's own networks (those its config has)."""

    model: Any
    hiddens: Any = _ABSENT
    dueling: Any = _ABSENT
    num_atoms: Any = _ABSENT
    q_model_config: Any = _ABSENT
    policy_model_config: Any = _ABSENT


class CustomActorCriticModule(UserModuleCalls):
    """The policy-gradient family's module over a user's module."""

    #: IMPALA and APPO value every state (V-trace): a critic whatever ``use_critic``.
    always_critic: ClassVar[bool] = False

    def __init__(
        self, observation_space: gym.Space[Any], action_space: gym.Space[Any], config: Any
    ) -> None:
        super().__init__(observation_space, action_space, config)
        self.dist_class, self.num_inputs = ModelCatalog.get_action_dist(
            action_space, self.model_config
        )
        self.build_user_module(observation_space, action_space, config)
        critic = settings_of(ActorCriticSettings, config, type(self).__name__).use_critic
        self.has_critic = self.always_critic or bool(critic)
        acting = (("forward_exploration", self.has_critic), ("forward_inference", False))
        with self.probing() as batch:
            for method, values in acting:
                self._check_rows(self._outputs(method, batch, values), method, values)

    def _check_rows(self, out: Tensors, method: str, values: bool) -> None:
        shape = tuple(out[SB.ACTION_DIST_INPUTS].shape)
        if shape != (2, self.num_inputs):
            raise ConfigError.single(
                f"{type(self.user_module).__name__}.{method}()",
                "rl_module_spec.module_class",
                f"returned {SB.ACTION_DIST_INPUTS} of shape {shape} for 2 rows; the action "
                f"distribution of {self.action_space} takes {self.num_inputs} inputs per row",
                value=type(self.user_module).__name__,
                has_value=True,
                allowed=f"{SB.ACTION_DIST_INPUTS} of shape (B, {self.num_inputs})",
            )
        if values and tuple(out[SB.VF_PREDS].shape) != (2,):
            raise ConfigError.single(
                f"{type(self.user_module).__name__}.compute_values()",
                "rl_module_spec.module_class",
                f"returned values of shape {tuple(out[SB.VF_PREDS].shape)} for 2 rows",
                value=type(self.user_module).__name__,
                has_value=True,
                allowed="values of shape (B,) or (B, 1)",
            )

    def _outputs(self, method: str, batch: Tensors, values: bool) -> Tensors:
        out, given = self.user_call(method, batch, [SB.ACTION_DIST_INPUTS])
        result = {SB.ACTION_DIST_INPUTS: self.rows(out[SB.ACTION_DIST_INPUTS], given)}
        if values:
            result[SB.VF_PREDS] = self.user_values(given, out, method)
        if self.is_recurrent and SB.SEQ_LENS not in batch:
            result.update(self.state_out(out, method))
        return result

    def forward_train(self, batch: Tensors) -> Tensors:
        return self._outputs("forward_train", batch, self.has_critic)

    def forward_exploration(self, batch: Tensors) -> Tensors:
        return self._outputs("forward_exploration", batch, self.has_critic)

    def forward_inference(self, batch: Tensors) -> Tensors:
        return self._outputs("forward_inference", batch, False)

    def compute_values(self, batch: Tensors) -> torch.Tensor:
        compute = getattr(self.user_module, "compute_values", None)
        if compute is None:
            return self._outputs("forward_train", batch, True)[SB.VF_PREDS]
        given = self.user_batch(batch)
        return self.user_values(given, {}, "compute_values")


class CustomIMPALAModule(CustomActorCriticModule):
    always_critic = True


def _spec_of(config: Any, component: str) -> RLModuleSpec | MultiRLModuleSpec | None:
    spec: RLModuleSpec | MultiRLModuleSpec | None = settings_of(
        ModuleSpecSetting, config, component
    ).rl_module_spec
    if isinstance(spec, MultiRLModuleSpec) and isinstance(spec.rl_module_specs, RLModuleSpec):
        return spec.rl_module_specs
    return spec


def custom_module_class(base: type[RLModule], config: Any) -> type[RLModule]:
    """The adapter of the module class ``base`` for the spec ``config`` names; ``base`` itself
    when it names none (or one without a module class, whose ``model_config`` the rollout
    worker made the policy's model dict: ``module_policy_config``)."""
    component = f"{getattr(config, 'algo_name', None) or type(config).__name__} (build)"
    spec = _spec_of(config, component)
    if spec is None or (isinstance(base, type) and issubclass(base, UserModuleCalls)):
        return base
    if isinstance(spec, RLModuleSpec) and spec.module_class is None:
        if spec.model_config is not None:
            raise ConfigError.single(
                component,
                "rl_module_spec.model_config",
                "of a spec without module_class is the policy's model dict, which a rollout "
                "worker makes; this policy was made outside one: set it as model",
                value=spec.model_dict(),
                has_value=True,
            )
        return base
    # Imported here: the algorithms' modules import the core, which imports this module.
    from runtime.algorithms.dqn.module import QModule
    from runtime.algorithms.impala.module import IMPALAModule
    from runtime.algorithms.sac.module import SACModule
    from runtime.core.rl_module_q import CustomQModule, CustomSACModule

    adapter: type[RLModule]
    if issubclass(base, QModule):
        adapter = CustomQModule
    elif issubclass(base, SACModule):
        adapter = CustomSACModule
    elif issubclass(base, IMPALAModule):
        adapter = CustomIMPALAModule
    elif base is ActorCriticModule:
        adapter = CustomActorCriticModule
    else:
        raise ConfigError.single(
            component,
            "rl_module_spec",
            f"gives a module of your own, which {base.__name__}'s algorithm can't train: "
            f"custom RL modules train with {SUPPORTED}",
            has_value=False,
            allowed=f"None, or one of {SUPPORTED}",
        )
    if isinstance(spec, RLModuleSpec):
        refuse_own_network_settings(config, spec, component)
    return adapter


def refuse_own_network_settings(config: Any, spec: RLModuleSpec, component: str) -> None:
    """Settings of the algorithm's own networks, set beside a module of your own, act nowhere:
    refused unless at their defaults."""
    settings = settings_of(OwnNetworkSettings, config, component)
    defaults: dict[str, Any] = dict(type(config)._class_defaults())
    issues: list[FieldIssue] = []
    model, default_model = dict(settings.model), dict(defaults.get("model") or {})
    if model.get("custom_model") is not None:
        issues.append(
            FieldIssue(
                "model.custom_model",
                "is a network of your own beside rl_module_spec's module; give one of them",
                model["custom_model"],
                allowed="None",
            )
        )
    own = spec.model_dict()
    if own is not None:
        for key, value in model.items():
            acting = key in _ACTING_MODEL_KEYS or (key == "max_seq_len" and key not in own)
            if acting or key == "custom_model" or value == default_model.get(key, value):
                continue
            issues.append(
                FieldIssue(
                    f"model.{key}",
                    "shapes the algorithm's own networks; rl_module_spec's module gets its "
                    "spec's model_config instead: set it there",
                    value,
                    allowed=short_repr(default_model.get(key)),
                )
            )
    if settings.num_atoms is not _ABSENT and int(settings.num_atoms) > 1:
        issues.append(
            FieldIssue(
                "num_atoms",
                "> 1 learns distributions of returns, which the built-in Q-network only "
                "does: a module of your own gives Q-values (compute_q_values)",
                settings.num_atoms,
                allowed="1",
            )
        )
    for key in ("hiddens", "dueling", "q_model_config", "policy_model_config"):
        value = getattr(settings, key)
        if value is _ABSENT or key not in defaults or value == defaults[key]:
            continue
        issues.append(
            FieldIssue(
                key,
                f"shapes {component.split(' ')[0]}'s own networks, which rl_module_spec's module "
                "replaces",
                value,
                allowed=short_repr(defaults[key]),
            )
        )
    if issues:
        raise ConfigError(component, issues)


def module_policy_config(config: Any, policy_id: str) -> Any:
    """Policy ``policy_id``'s config: with its own spec of a ``MultiRLModuleSpec`` (None: the
    algorithm's networks), and for a spec without a module class, its ``model_config`` as
    the model dict of the algorithm's networks."""
    spec = _spec_of(config, f"policy {policy_id!r}")
    own = spec.spec_for(policy_id) if isinstance(spec, MultiRLModuleSpec) else spec
    if own is spec and (own is None or own.module_class is not None):
        return config
    overrides: dict[str, Any] = {"rl_module_spec": None}
    if own is not None and own.module_class is not None:
        overrides["rl_module_spec"] = own
    elif own is not None and own.model_config is not None:
        overrides["model"] = own.model_dict()
    merged = config.copy()
    merged.update_from_dict(overrides)
    return merged.freeze()
