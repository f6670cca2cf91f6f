"""``ModuleSpec``: what a policy's module is made from (its class, spaces and config), so that
each learner and each rollout worker builds its own copy on its own device; with a custom module
(``rl_module_spec``), ``custom_module_class`` is the adapter its class stands for."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import torch

from runtime.core.module import ActorCriticModule, RLModule
from runtime.core.rl_module_adapter import custom_module_class

if TYPE_CHECKING:
    from runtime.core.learner import Learner

__all__ = ["ModuleSpec", "custom_module_class"]


@dataclass(frozen=True)
class ModuleSpec:
    """A policy's module and learner as classes plus what they are built from. Picklable: a
    learner actor builds from it too."""

    observation_space: gym.Space[Any]
    action_space: gym.Space[Any]
    #: The policy's config (the algorithm's, with the policy spec's overrides).
    config: Any
    module_class: type[RLModule] = ActorCriticModule
    learner_class: type[Learner] | None = None

    def build(self, device: torch.device | str = "cpu") -> RLModule:
        """A new module on ``device``. The global torch RNG is left as it was: the acting copy
        is made first, from that RNG, and the learner's copy takes its weights."""
        # (The adapter of a custom module where the config names one: ``rl_module_adapter``.)
        module_class = custom_module_class(self.module_class, self.config)
        with torch.random.fork_rng(devices=[]):
            module = module_class(self.observation_space, self.action_space, self.config)
        return module.to(device)

    def build_learner(self, device: torch.device | str = "cpu") -> Learner:
        """A learner of ``learner_class`` over a module of its own on ``device``."""
        if self.learner_class is None:
            raise ValueError(
                f"the module spec of {self.module_class.__name__} names no learner_class: "
                "its policy only acts"
            )
        target = torch.device(device)
        return self.learner_class(self.build(target), self.config, target)
