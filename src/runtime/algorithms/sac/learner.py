"""``SACLearner``: three optimizers (``"actor"``, ``"critic"``, ``"entropy"``; learning rates
from ``optimization``, or RLlib's new API stack's ``actor_lr``, ``critic_lr``, ``alpha_lr``
where set, each clipped by ``grad_clip``), one gradient step of each per replayed
batch on ``sac_loss``, against target copies of the Q-networks (polyak-averaged with ``tau`` by
the off-policy training step). The TD errors go back in the info as ``td_error`` for
prioritized replay; alpha is ``exp(log_alpha)``, a parameter of the module, so it is saved and
restored with the weights (and its optimizer's state with the optimizers)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from rlconf.algorithms.sac import sac_learning_rates
from runtime.algorithms.sac.loss import sac_loss
from runtime.algorithms.sac.module import SACModule
from runtime.buffers.replay_buffer import TD_LOSS_COLUMNS
from runtime.core.learner import Learner, OptimizerSettings
from runtime.core.sample_batch import SampleBatch
from runtime.core.settings import setting, settings_of


@dataclass(frozen=True)
class SACLearnerSettings:
    optimization: Mapping[str, float]
    actor_lr: float | None
    critic_lr: float | None
    alpha_lr: float | None
    grad_clip: float | None
    optimizer: Mapping[str, Any]
    target_entropy: Any
    td_error_loss_fn: str
    deterministic_loss: bool = setting("_deterministic_loss")


class SACLearner(Learner):
    # Its loss's actor runs through frozen critics (see Learner.separate_losses).
    separate_losses = True

    def optimizer_settings(self) -> Mapping[str, OptimizerSettings]:
        settings = self.sac_settings()
        clip = None if settings.grad_clip is None else float(settings.grad_clip)
        options = dict(settings.optimizer or {})
        rates = sac_learning_rates(
            settings.optimization,
            {
                "actor_lr": settings.actor_lr,
                "critic_lr": settings.critic_lr,
                "alpha_lr": settings.alpha_lr,
            },
        )
        return {
            name: OptimizerSettings(
                lr=rates[f"{name}_learning_rate"], grad_clip=clip, options=options
            )
            for name in ("actor", "critic", "entropy")
        }

    def sac_settings(self) -> SACLearnerSettings:
        return settings_of(SACLearnerSettings, self.config, type(self).__name__)

    def optimizer_parameters(self, name: str) -> Iterable[nn.Parameter]:
        module = self.module
        assert isinstance(module, SACModule)
        if name == "actor":
            return module.policy_parameters()
        if name == "critic":
            return module.q_parameters()
        return [module.log_alpha]

    def setup(self) -> None:
        module = self.module
        assert isinstance(module, SACModule)
        self.target = self.add_target_network("q", module)
        settings = self.sac_settings()
        self.deterministic_loss = bool(settings.deterministic_loss)
        self.td_error_loss_fn = str(settings.td_error_loss_fn)
        self.target_entropy = target_entropy_of(module, settings.target_entropy)

    def compute_losses(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        assert isinstance(self.module, SACModule)
        losses, stats = sac_loss(
            self.module,
            self.target,
            batch,
            target_entropy=self.target_entropy,
            deterministic=self.deterministic_loss,
            td_error_loss_fn=self.td_error_loss_fn,
        )
        self.report(**stats, target_entropy=self.target_entropy)
        return losses

    def update(self, batch: SampleBatch) -> dict[str, Any]:
        return self.replay_update(batch, self.loss_columns(SACLearner, TD_LOSS_COLUMNS))

    @property
    def cur_lr(self) -> float:
        """The actor's learning rate."""
        return self.lr_of("actor")

    @property
    def alpha(self) -> float:
        assert isinstance(self.module, SACModule)
        return float(self.module.log_alpha.detach().exp())


def target_entropy_of(module: SACModule, value: Any) -> float:
    """``target_entropy``, with ``"auto"`` as -dim(actions) (Box) or 0.98 * log(n)
    (Discrete(n), the reference's)."""
    if value != "auto":
        return float(value)
    if module.discrete:
        return 0.98 * math.log(module.action_dim)
    return -float(module.action_dim)
