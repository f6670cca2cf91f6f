"""``DQNLearner``: one gradient step of ``dqn_loss`` per replayed batch, against a target copy
of the Q-network (updated by the off-policy training step every
``target_network_update_freq`` env steps). The TD errors go back in the info as ``td_error``,
for prioritized replay to update its priorities."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import torch

from rlconf.algorithms.dqn import ADAM_EPSILON
from runtime.algorithms.dqn.loss import dqn_loss
from runtime.algorithms.dqn.module import QModule
from runtime.buffers.replay_buffer import TD_LOSS_COLUMNS
from runtime.core.learner import DEFAULT_OPTIMIZER, Learner, OptimizerSettings
from runtime.core.sample_batch import SampleBatch
from runtime.core.settings import settings_of


@dataclass(frozen=True)
class DQNLearnerSettings:
    double_q: bool
    td_error_loss_fn: str
    #: Configs without the key (custom ones on this learner) learn plain Q-values.
    advantage_learning_alpha: float = 0.0


@dataclass(frozen=True)
class DQNOptimizerSettings:
    #: Configs without the key (custom ones on this learner) keep torch.optim.Adam's own.
    adam_epsilon: float = ADAM_EPSILON


class DQNLearner(Learner):
    def optimizer_settings(self) -> Mapping[str, OptimizerSettings]:
        """The default optimizer with ``adam_epsilon`` as Adam's ``eps`` (``optimizer``'s own
        ``eps`` where it sets one: the config refuses the two set apart)."""
        settings = dict(super().optimizer_settings())
        epsilon = settings_of(DQNOptimizerSettings, self.config, type(self).__name__).adam_epsilon
        default = settings[DEFAULT_OPTIMIZER]
        options = {"eps": float(epsilon), **default.options}
        settings[DEFAULT_OPTIMIZER] = replace(default, options=options)
        return settings

    def setup(self) -> None:
        assert isinstance(self.module, QModule)
        self.target = self.add_target_network("q", self.module)
        settings = settings_of(DQNLearnerSettings, self.config, type(self).__name__)
        self.double_q = bool(settings.double_q)
        self.loss_fn = str(settings.td_error_loss_fn)
        self.advantage_alpha = float(settings.advantage_learning_alpha)

    def compute_loss(self, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, dict[str, Any]]:
        assert isinstance(self.module, QModule)
        return dqn_loss(
            self.module,
            self.target,
            batch,
            double_q=self.double_q,
            loss_fn=self.loss_fn,
            advantage_alpha=self.advantage_alpha,
        )

    def update(self, batch: SampleBatch) -> dict[str, Any]:
        return self.replay_update(batch, self.loss_columns(DQNLearner, TD_LOSS_COLUMNS))
