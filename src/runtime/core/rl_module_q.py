"""The module adapters of the Q-learning algorithms (``runtime.core.rl_module_adapter`` picks
them): a user's ``TorchRLModule`` behind DQN's ``QModule`` and SAC's ``SACModule``.

DQN: the Q-values per action come from ``compute_q_values(batch)`` (``QNetAPI``) for acting
and learning alike, else from the ``qf_preds`` output of the pass (``forward_exploration``,
``forward_inference``, ``forward_train``). The target network is a copy of the module.

SAC: the policy is the module's ``action_dist_inputs`` (``forward_train`` of the learner's
observations; the acting passes while acting), a squashed Gaussian over Box actions or a
categorical over Discrete ones, as SAC's own; the critic is ``compute_q_values(batch)``:
``qf_preds`` (and with ``twin_q``, ``qf_twin_preds``) of ``batch["obs"]`` and
``batch["actions"]`` (Box) or of every action (Discrete). The actor's and the critic's
parameters are those each output reaches (found once, by differentiating both on zero
observations): they must be apart, as SAC steps them with optimizers of their own. The target
critic is a copy of the module; ``log_alpha`` is the adapter's.
"""

from __future__ import annotations

import functools
from typing import Any, cast

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from rlconf.columns import Columns
from rlconf.errors import ConfigError
from runtime.algorithms.dqn.module import Q_VALUES, QModule, require_discrete_action_space
from runtime.algorithms.sac.module import (
    SACModule,
    SACModuleSettings,
    _bounded_box,
    _scalar_bounds,
)
from runtime.core.distributions import Categorical, SquashedGaussian
from runtime.core.model_catalog import ModelCatalog
from runtime.core.module import RLModule
from runtime.core.rl_module_calls import UserModuleCalls
from runtime.core.sample_batch import SampleBatch as SB
from runtime.core.settings import settings_of

Tensors = dict[str, torch.Tensor]
_Q_NEEDS = f"{Columns.QF_PREDS} (or a compute_q_values() method, QNetAPI)"


def _q_heads(module: UserModuleCalls, batch: Tensors, twin: bool) -> tuple[list[Any], Any]:
    """``compute_q_values``'s estimates (one, or two with ``twin``) and the batch it got."""
    given = module.user_batch(batch)
    out = cast(Any, module.user_module).compute_q_values(given)
    if isinstance(out, torch.Tensor):
        out = {Columns.QF_PREDS: out}
    needs = [Columns.QF_PREDS, Columns.QF_TWIN_PREDS] if twin else [Columns.QF_PREDS]
    module.require(out, "compute_q_values", needs)
    return [out[key] for key in needs], given


def _shape_error(module: UserModuleCalls, method: str, what: str, shape: Any, allowed: str) -> None:
    raise ConfigError.single(
        f"{type(module.user_module).__name__}.{method}()",
        "rl_module_spec.module_class",
        f"returned {what} of shape {tuple(shape)} for 2 rows",
        value=type(module.user_module).__name__,
        has_value=True,
        allowed=allowed,
    )


class CustomQModule(UserModuleCalls, QModule):
    """DQN's Q-network over a user's module."""

    def __init__(
        self, observation_space: gym.Space[Any], action_space: gym.Space[Any], config: Any
    ) -> None:
        RLModule.__init__(self, observation_space, action_space, config)
        self.num_actions = int(require_discrete_action_space(action_space).n)
        # Over the Q-values, as the built-in Q-network's (a custom_action_dist replaces it).
        self.dist_class, _ = ModelCatalog.get_action_dist(action_space, self.model_config)
        self.num_atoms = 1
        self.dueling = False
        self.value = None
        self.build_user_module(observation_space, action_space, config)
        self._q_api = callable(getattr(self.user_module, "compute_q_values", None))
        with self.probing() as batch:
            for method in ("forward_exploration", "forward_inference"):
                q = self._q(method, batch)
                if tuple(q.shape) != (2, self.num_actions):
                    method = "compute_q_values" if self._q_api else method
                    _shape_error(self, method, Columns.QF_PREDS, q.shape, "(B, num_actions)")

    def _q(self, method: str, batch: Tensors) -> torch.Tensor:
        if self._q_api:
            (q,), given = _q_heads(self, batch, twin=False)
        else:
            out, given = self.user_call(method, batch, [_Q_NEEDS])
            q = out[Columns.QF_PREDS]
        return self.rows(q, given)

    def q_values(self, obs: torch.Tensor) -> torch.Tensor:
        return self._q("forward_train", {SB.OBS: obs})

    def _outputs(self, method: str, batch: Tensors) -> Tensors:
        q = self._q(method, batch)
        return {Q_VALUES: q, SB.ACTION_DIST_INPUTS: q}

    def forward_train(self, batch: Tensors) -> Tensors:
        return self._outputs("forward_train", batch)

    def forward_exploration(self, batch: Tensors) -> Tensors:
        return self._outputs("forward_exploration", batch)

    def forward_inference(self, batch: Tensors) -> Tensors:
        return self._outputs("forward_inference", batch)


class CustomSACModule(UserModuleCalls, SACModule):
    """SAC's policy and Q-networks over a user's module."""

    def __init__(
        self, observation_space: gym.Space[Any], action_space: gym.Space[Any], config: Any
    ) -> None:
        RLModule.__init__(self, observation_space, action_space, config)
        settings = settings_of(SACModuleSettings, config, type(self).__name__)
        if self.model_config.get("custom_action_dist") is not None:
            raise ConfigError.single(
                "SAC (build)",
                "model.custom_action_dist",
                "is not supported by SAC: its policy is a squashed Gaussian (Box actions) or a "
                "categorical (Discrete actions), whose log-probabilities its losses need",
                value=self.model_config["custom_action_dist"],
                has_value=True,
                allowed="None",
            )
        self.discrete = isinstance(action_space, gym.spaces.Discrete)
        if isinstance(action_space, gym.spaces.Discrete):
            self.action_dim = int(action_space.n)
            self.dist_class = Categorical
            inputs = self.action_dim
        else:
            box = _bounded_box(action_space)
            self.action_dim = int(np.prod(box.shape))
            low, high = (-1.0, 1.0) if settings.normalize_actions else _scalar_bounds(box)
            self.dist_class = functools.partial(SquashedGaussian, low=low, high=high)
            inputs = 2 * self.action_dim
        self.twin_q = bool(settings.twin_q)
        self.build_user_module(observation_space, action_space, config)
        if not callable(getattr(self.user_module, "compute_q_values", None)):
            raise self.missing_keys({}, "compute_q_values", [_Q_NEEDS])
        self.log_alpha = nn.Parameter(torch.tensor(float(np.log(settings.initial_alpha))))
        #: The user module's parameters of the actor and of the critic (found on first use).
        self._split: tuple[list[str], list[str]] | None = None
        q_shape = (2, self.action_dim) if self.discrete else (2,)
        with self.probing() as batch:
            for method in ("forward_exploration", "forward_inference"):
                out, given = self.user_call(method, batch, [SB.ACTION_DIST_INPUTS])
                shape = self.rows(out[SB.ACTION_DIST_INPUTS], given).shape
                if tuple(shape) != (2, inputs):
                    _shape_error(self, method, SB.ACTION_DIST_INPUTS, shape, f"(B, {inputs})")
            q = self.q_values(batch[SB.OBS], self._zero_actions(batch[SB.OBS]))
            if tuple(q.shape[1:]) != q_shape:
                wanted = "(B, n)" if self.discrete else "(B,)"
                _shape_error(self, "compute_q_values", Columns.QF_PREDS, q.shape[1:], wanted)

    def _zero_actions(self, obs: torch.Tensor) -> torch.Tensor | None:
        if self.discrete:
            return None
        return torch.zeros(len(obs), self.action_dim, device=obs.device)

    # ------------------------------------------------------------------ parameters by optimizer

    def _parameter_split(self) -> tuple[list[str], list[str]]:
        """The names of the user module's parameters the policy reaches and those the critic
        reaches (a ``ConfigError`` where one parameter is in both)."""
        if self._split is not None:
            return self._split
        named = [(n, p) for n, p in self.user_module.named_parameters() if p.requires_grad]
        params = [p for _, p in named]
        with self.probing() as batch, torch.enable_grad():
            obs = batch[SB.OBS]
            actor = _reached(self.policy_inputs(obs), params)
            critic = _reached(self.q_values(obs, self._zero_actions(obs)), params)
        both = [named[i][0] for i in sorted(actor & critic)]
        if both or not critic:
            name = type(self.user_module).__name__
            raise ConfigError.single(
                f"{name} (SAC)",
                "rl_module_spec.module_class",
                f"has parameters both its policy and its Q-values reach ({both})"
                if both
                else "has Q-values (compute_q_values) that reach no parameter",
                value=name,
                has_value=True,
                allowed="a policy and Q-networks with parameters of their own (SAC steps "
                "them with an optimizer each)",
            )
        self._split = (
            [named[i][0] for i in sorted(actor)],
            [named[i][0] for i in sorted(critic)],
        )
        return self._split

    def _user_parameters(self, names: list[str]) -> list[nn.Parameter]:
        by_name = dict(self.user_module.named_parameters())
        return [by_name[name] for name in names]

    def policy_parameters(self) -> list[nn.Parameter]:
        return self._user_parameters(self._parameter_split()[0])

    def q_parameters(self) -> list[nn.Parameter]:
        return self._user_parameters(self._parameter_split()[1])

    # ------------------------------------------------------------------ forward passes

    def policy_inputs(self, obs: torch.Tensor) -> torch.Tensor:
        out, given = self.user_call("forward_train", {SB.OBS: obs}, [SB.ACTION_DIST_INPUTS])
        inputs: torch.Tensor = self.rows(out[SB.ACTION_DIST_INPUTS], given)
        return inputs

    def q_values(self, obs: torch.Tensor, actions: torch.Tensor | None = None) -> torch.Tensor:
        batch = {SB.OBS: obs}
        if not self.discrete:
            assert actions is not None
            batch[SB.ACTIONS] = actions
        heads, given = _q_heads(self, batch, self.twin_q)
        values = [self.rows(head, given) for head in heads]
        if not self.discrete:
            values = [v.reshape(len(obs)) if v.numel() == len(obs) else v for v in values]
        return torch.stack(values)

    def _acting(self, method: str, batch: Tensors) -> Tensors:
        out, given = self.user_call(method, batch, [SB.ACTION_DIST_INPUTS])
        return {SB.ACTION_DIST_INPUTS: self.rows(out[SB.ACTION_DIST_INPUTS], given)}

    def forward_train(self, batch: Tensors) -> Tensors:
        return {SB.ACTION_DIST_INPUTS: self.policy_inputs(batch[SB.OBS])}

    def forward_exploration(self, batch: Tensors) -> Tensors:
        return self._acting("forward_exploration", batch)

    def forward_inference(self, batch: Tensors) -> Tensors:
        return self._acting("forward_inference", batch)


def _reached(output: torch.Tensor, params: list[nn.Parameter]) -> set[int]:
    """The indices of ``params`` that ``output`` depends on."""
    if not output.requires_grad or not params:
        return set()
    grads = torch.autograd.grad(output.sum(), params, allow_unused=True)
    return {i for i, grad in enumerate(grads) if grad is not None}
