"""A2C: synchronous advantage actor-critic, one gradient step per train batch (accumulated
over microbatches with ``microbatch_size``)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import Any, ClassVar

import gymnasium as gym
import torch

from rlconf.algorithm_config import AlgorithmConfig
from rlconf.algorithms.a2c import A2CConfig
from runtime.algorithm import Algorithm
from runtime.core.policy import TorchPolicy, _schedule
from runtime.core.sample_batch import SampleBatch
from runtime.core.sample_batch import SampleBatch as SB


class A2CTorchPolicy(TorchPolicy):
    def __init__(
        self,
        observation_space: gym.Space[Any],
        action_space: gym.Space[Any],
        config: Any,
        device: torch.device | None = None,
    ) -> None:
        super().__init__(observation_space, action_space, config, device)
        self._entropy_schedule = _schedule(
            config.get("entropy_coeff_schedule"), float(config["entropy_coeff"])
        )
        self.entropy_coeff = self._entropy_schedule.value(0)

    def on_global_var_update(self, global_vars: Mapping[str, Any]) -> None:
        super().on_global_var_update(global_vars)
        self.entropy_coeff = self._entropy_schedule.value(self.global_timestep)

    def loss(self, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, dict[str, Any]]:
        obs = batch[SB.OBS]
        inputs, _ = self.model({"obs": obs, "obs_flat": obs.reshape(len(obs), -1)}, [], None)
        dist = self.dist_class(inputs)
        logp = dist.logp(batch[SB.ACTIONS])
        policy_loss = -(logp * batch[SB.ADVANTAGES]).mean()
        entropy = dist.entropy().mean()
        total = policy_loss - self.entropy_coeff * entropy
        stats = {"policy_loss": policy_loss, "entropy": entropy}
        if self.has_critic:
            values = self.model.value_function()
            vf_loss = 0.5 * (values - batch[SB.VALUE_TARGETS]).pow(2).mean()
            total = total + float(self.config["vf_loss_coeff"]) * vf_loss
            stats["vf_loss"] = vf_loss
        stats["entropy_coeff"] = self.entropy_coeff
        return total, stats

    def learn_on_batch(self, batch: SampleBatch) -> dict[str, Any]:
        """One optimizer step per train batch; with ``microbatch_size`` its gradient is
        accumulated over microbatches (the loss is a mean, so each part is weighted by its
        share of the rows and the sum is the whole batch's gradient)."""
        micro = self.config.get("microbatch_size")
        size = len(batch)
        if micro is None or micro >= size:
            return super().learn_on_batch(batch)
        tensors = self.batch_tensors(batch)
        self.optimizer.zero_grad(set_to_none=True)
        sums: dict[str, Any] = defaultdict(float)
        for start in range(0, size, int(micro)):
            part = {k: v[start : start + int(micro)] for k, v in tensors.items()}
            share = len(part[SB.OBS]) / size
            loss, stats = self.loss(part)
            (loss * share).backward()  # type: ignore[no-untyped-call]
            for key, value in stats.items():
                detached = value.detach() if isinstance(value, torch.Tensor) else value
                sums[key] = sums[key] + share * detached
        sums.update(self.apply_gradients())
        learner = {k: float(v) for k, v in sums.items()}
        learner.update(cur_lr=self.cur_lr, num_microbatches=-(-size // int(micro)))
        return {"learner_stats": learner, "num_grad_updates": self.num_grad_updates}


class A2C(Algorithm):
    config_class: ClassVar[type[AlgorithmConfig]] = A2CConfig
    policy_class: ClassVar[type[TorchPolicy]] = A2CTorchPolicy
