"""PG: REINFORCE; the advantage is the discounted return."""

from __future__ import annotations

from typing import Any, ClassVar

import torch

from rlconf.algorithm_config import AlgorithmConfig
from rlconf.algorithms.pg import PGConfig
from runtime.algorithm import Algorithm
from runtime.core.policy import TorchPolicy
from runtime.core.sample_batch import SampleBatch as SB


class PGTorchPolicy(TorchPolicy):
    def loss(self, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, dict[str, Any]]:
        inputs, _ = self.model(self._input_tensors(batch), [], None)
        logp = self.dist_class(inputs).logp(batch[SB.ACTIONS])
        loss = -(logp * batch[SB.ADVANTAGES]).mean()
        return loss, {"policy_loss": loss}

    def _input_tensors(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        obs = batch[SB.OBS]
        return {"obs": obs, "obs_flat": obs.reshape(len(obs), -1)}


class PG(Algorithm):
    config_class: ClassVar[type[AlgorithmConfig]] = PGConfig
    policy_class: ClassVar[type[TorchPolicy]] = PGTorchPolicy
