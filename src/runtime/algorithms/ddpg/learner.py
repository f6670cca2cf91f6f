"""``DDPGLearner``: two optimizers (``"actor"`` with ``actor_lr``, ``"critic"`` with
``critic_lr``, each clipped by ``grad_clip``). Every replayed batch steps the critic; the actor
steps on every ``policy_delay``-th of them (TD3: every second), counted by the learner's
gradient steps, so towers and learner processes agree. Target copies of the actor and the
critics are polyak-averaged with ``tau`` by the off-policy training step. The TD errors go back
in the info as ``td_error`` for prioritized replay."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from runtime.algorithms.ddpg.loss import DDPGLossSettings, ddpg_loss
from runtime.algorithms.ddpg.module import DDPGModule
from runtime.buffers.replay_buffer import TD_LOSS_COLUMNS
from runtime.core.learner import Learner, OptimizerSettings
from runtime.core.sample_batch import SampleBatch
from runtime.core.settings import settings_of


@dataclass(frozen=True)
class DDPGLearnerSettings:
    actor_lr: float
    critic_lr: float
    grad_clip: float | None
    optimizer: Mapping[str, Any]
    policy_delay: int
    smooth_target_policy: bool
    target_noise: float
    target_noise_clip: float
    use_huber: bool
    huber_threshold: float
    l2_reg: float | None


class DDPGLearner(Learner):
    # Its loss's actor runs through frozen critics (see Learner.separate_losses).
    separate_losses = True

    def ddpg_settings(self) -> DDPGLearnerSettings:
        return settings_of(DDPGLearnerSettings, self.config, type(self).__name__)

    def optimizer_settings(self) -> Mapping[str, OptimizerSettings]:
        settings = self.ddpg_settings()
        clip = None if settings.grad_clip is None else float(settings.grad_clip)
        options = dict(settings.optimizer or {})
        return {
            "actor": OptimizerSettings(
                lr=float(settings.actor_lr), grad_clip=clip, options=options
            ),
            "critic": OptimizerSettings(
                lr=float(settings.critic_lr), grad_clip=clip, options=options
            ),
        }

    def optimizer_parameters(self, name: str) -> Iterable[nn.Parameter]:
        module = self.module
        assert isinstance(module, DDPGModule)
        return module.policy_parameters() if name == "actor" else module.q_parameters()

    def setup(self) -> None:
        module = self.module
        assert isinstance(module, DDPGModule)
        self.target = self.add_target_network("policy", module)
        settings = self.ddpg_settings()
        self.policy_delay = int(settings.policy_delay)
        self.loss_settings = DDPGLossSettings(
            smooth_target_policy=bool(settings.smooth_target_policy),
            target_noise=float(settings.target_noise),
            target_noise_clip=float(settings.target_noise_clip),
            use_huber=bool(settings.use_huber),
            huber_threshold=float(settings.huber_threshold),
            l2_reg=float(settings.l2_reg or 0.0),
        )

    def updates_actor(self) -> bool:
        """Whether the gradient step about to be taken steps the actor too."""
        return self.num_grad_updates % self.policy_delay == 0

    def compute_losses(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        assert isinstance(self.module, DDPGModule)
        losses, stats = ddpg_loss(
            self.module,
            self.target,
            batch,
            self.loss_settings,
            update_actor=self.updates_actor(),
        )
        self.report(**stats)
        return losses

    def update(self, batch: SampleBatch) -> dict[str, Any]:
        return self.replay_update(batch, self.loss_columns(DDPGLearner, TD_LOSS_COLUMNS))

    @property
    def cur_lr(self) -> float:
        """The actor's learning rate."""
        return self.lr_of("actor")
