"""``TorchRLModule``: RLlib's new API stack contract for networks of your own, and the APIs a
module implements for what an algorithm needs besides acting: ``ValueFunctionAPI`` (values,
for PPO, APPO, IMPALA, A2C, PG) and ``QNetAPI`` (Q-values, for DQN and SAC).

Subclass it, build your layers in ``setup()`` and return a dict keyed by column name
(``rlconf.Columns``) from ``_forward`` (or from each of ``_forward_inference``,
``_forward_exploration`` and ``_forward_train``). Give it to an algorithm with
``rl_module(rl_module_spec=RLModuleSpec(module_class=..., model_config=...))``; the runtime
wraps it behind what each algorithm trains (``runtime.core.rl_module_adapter``), and
``algo.get_module(module_id)`` returns it with the trained weights.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
import torch
from torch import nn

from rlconf.default_model_config import DefaultModelConfig

Tensors = dict[str, Any]


class TorchRLModule(nn.Module):
    """A policy's networks as RLlib's new API stack writes them.

    The constructor keeps ``observation_space``, ``action_space``, ``inference_only``,
    ``learner_only`` and ``model_config`` (always a dict: a ``DefaultModelConfig`` as the dict
    of its fields) as attributes, makes ``catalog_class(observation_space=...,
    action_space=..., model_config_dict=...)`` the ``catalog`` attribute when one is given, and
    calls ``setup()``.

    A module with memory returns its state from ``get_initial_state()`` (a dict of tensors
    without a batch dimension); it then reads ``batch["state_in"]`` (the same dict, batched) and
    observations ``(B, T, ...)``, and returns ``"state_out"``.
    """

    framework: ClassVar[str] = "torch"

    def __init__(
        self,
        *,
        observation_space: Any = None,
        action_space: Any = None,
        inference_only: bool = False,
        learner_only: bool = False,
        model_config: Mapping[str, Any] | DefaultModelConfig | None = None,
        catalog_class: Any = None,
    ) -> None:
        super().__init__()
        self.observation_space = observation_space
        self.action_space = action_space
        self.inference_only = bool(inference_only)
        self.learner_only = bool(learner_only)
        if isinstance(model_config, DefaultModelConfig):
            model_config = model_config.to_dict()
        self.model_config: dict[str, Any] = dict(model_config or {})
        self.catalog_class = catalog_class
        self.catalog: Any = None
        if catalog_class is not None:
            self.catalog = catalog_class(
                observation_space=observation_space,
                action_space=action_space,
                model_config_dict=self.model_config,
            )
        self.setup()

    def setup(self) -> None:
        """Build the layers here (the spaces and ``model_config`` are set)."""

    # ------------------------------------------------------------------ forward passes

    def forward_inference(self, batch: Tensors, **kwargs: Any) -> Tensors:
        """What acting greedily (``explore=False``) reads."""
        return self._forward_inference(batch, **kwargs)

    def forward_exploration(self, batch: Tensors, **kwargs: Any) -> Tensors:
        """What acting while exploring reads."""
        return self._forward_exploration(batch, **kwargs)

    def forward_train(self, batch: Tensors, **kwargs: Any) -> Tensors:
        """What the loss reads."""
        return self._forward_train(batch, **kwargs)

    def _forward_inference(self, batch: Tensors, **kwargs: Any) -> Tensors:
        return self._forward(batch, **kwargs)

    def _forward_exploration(self, batch: Tensors, **kwargs: Any) -> Tensors:
        return self._forward(batch, **kwargs)

    def _forward_train(self, batch: Tensors, **kwargs: Any) -> Tensors:
        return self._forward(batch, **kwargs)

    def _forward(self, batch: Tensors, **kwargs: Any) -> Tensors:
        """The one forward pass of all three, unless a ``_forward_*`` of its own replaces it."""
        raise NotImplementedError(
            f"{type(self).__name__} implements neither _forward() nor _forward_inference(), "
            "_forward_exploration() and _forward_train(): one of them returns the outputs "
            "(action_dist_inputs, ...) keyed by column name"
        )

    def forward(self, batch: Tensors, **kwargs: Any) -> Tensors:
        """``module(batch)``: the training pass."""
        return self.forward_train(batch, **kwargs)

    # ------------------------------------------------------------------ memory and state

    def get_initial_state(self) -> dict[str, Any]:
        """The state an episode starts from; empty for a module without memory."""
        return {}

    def is_stateful(self) -> bool:
        """Whether the module has memory (``get_initial_state()`` is not empty)."""
        return bool(self.get_initial_state())

    def get_state(self) -> dict[str, Any]:
        """The weights as numpy arrays, by parameter and buffer name."""
        return {k: v.detach().cpu().numpy().copy() for k, v in self.state_dict().items()}

    def set_state(self, state: Mapping[str, Any]) -> None:
        """Load weights that ``get_state()`` returned."""
        self.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in state.items()})

    def unwrapped(self) -> TorchRLModule:
        """The module itself (RLlib's name, for modules wrapped for distributed training)."""
        return self


class ValueFunctionAPI(abc.ABC):
    """A module with a value function: ``compute_values`` gives V(s) per row (``(B,)``, or
    ``(B, T)`` for a module with memory). ``embeddings`` are the ``"embeddings"`` output of the
    same batch's forward pass, when it returned any (so that the values need no second pass
    through a shared trunk)."""

    @abc.abstractmethod
    def compute_values(self, batch: Tensors, embeddings: Any = None) -> torch.Tensor:
        """V(s) of ``batch``'s observations."""


class QNetAPI(abc.ABC):
    """A module with Q-values: ``compute_q_values(batch)`` returns ``{"qf_preds": ...}`` (a
    tensor alone is taken as that).

    DQN: ``batch`` holds ``"obs"``, and ``qf_preds`` are ``(B, num_actions)``, a value per
    action. SAC: for Box actions ``batch`` holds ``"obs"`` and ``"actions"`` and ``qf_preds``
    are ``(B,)`` (or ``(B, 1)``); for Discrete actions ``batch`` holds ``"obs"`` and they are
    ``(B, n)``; with ``twin_q`` a second estimate, ``"qf_twin_preds"``, of the same shape.
    """

    @abc.abstractmethod
    def compute_q_values(self, batch: Tensors) -> Tensors | torch.Tensor:
        """The Q-values of ``batch`` (see the class)."""

    def compute_advantage_distribution(self, batch: Tensors) -> Tensors:
        """Distributional Q-learning (``num_atoms > 1``) is not available with a module of your
        own: DQN refuses it at build, and this is never called."""
        raise NotImplementedError(
            f"{type(self).__name__}.compute_advantage_distribution(): distributional Q-learning "
            "(num_atoms > 1) trains the built-in Q-network only"
        )
