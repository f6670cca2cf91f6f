"""PPO: clipped surrogate objective, GAE, clipped value loss, adaptive KL penalty, entropy
bonus, minibatch SGD over ``num_sgd_iter`` epochs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
import torch

from rlconf.algorithm_config import AlgorithmConfig
from rlconf.algorithms.ppo import PPOConfig
from runtime.algorithm import Algorithm
from runtime.algorithms.a2c import A2CTorchPolicy
from runtime.core.learner_stats import mean_stats
from runtime.core.postprocessing import standardized
from runtime.core.sample_batch import SampleBatch
from runtime.core.sample_batch import SampleBatch as SB

_LOSS_COLUMNS: tuple[str, ...] = (SB.OBS, SB.ACTIONS, SB.ACTION_LOGP, SB.ACTION_DIST_INPUTS)
_LOSS_COLUMNS += (SB.ADVANTAGES, SB.VALUE_TARGETS)


class PPOTorchPolicy(A2CTorchPolicy):
    def __init__(
        self,
        observation_space: gym.Space[Any],
        action_space: gym.Space[Any],
        config: Any,
        device: torch.device | None = None,
    ) -> None:
        super().__init__(observation_space, action_space, config, device)
        self.kl_coeff = float(config["kl_coeff"])
        # Read once: the loss runs for every minibatch.
        self._clip_param = float(config["clip_param"])
        self._vf_clip_param = float(config["vf_clip_param"])
        self._vf_loss_coeff = float(config["vf_loss_coeff"])
        self.kl_target = float(config["kl_target"])
        seed = config.get("seed")
        self._rng = np.random.default_rng(None if seed is None else int(seed))

    def loss(self, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, dict[str, Any]]:
        obs = batch[SB.OBS]
        inputs, _ = self.model({"obs": obs, "obs_flat": obs.reshape(len(obs), -1)}, [], None)
        dist = self.dist_class(inputs)
        ratio = torch.exp(dist.logp(batch[SB.ACTIONS]) - batch[SB.ACTION_LOGP])
        advantages = batch[SB.ADVANTAGES]
        clip = self._clip_param
        surrogate = torch.min(advantages * ratio, advantages * ratio.clamp(1 - clip, 1 + clip))
        # Terms with a zero coefficient stay out of the graph: every node costs backward time.
        total = -surrogate
        entropy = dist.entropy() if self.entropy_coeff else None
        if entropy is not None:
            total = total - self.entropy_coeff * entropy
        kl = None
        if self.kl_coeff > 0:
            kl = self.dist_class(batch[SB.ACTION_DIST_INPUTS]).kl(dist)
            total = total + self.kl_coeff * kl
        values = vf_loss = None
        if self.has_critic:
            values = self.model.value_function()
            vf_loss = (values - batch[SB.VALUE_TARGETS]).pow(2).clamp(0, self._vf_clip_param)
            total = total + self._vf_loss_coeff * vf_loss
        loss = total.mean()
        # Rows, not means: learn_on_batch turns the rows of every minibatch into the reported
        # stats once (a mean and two variances per gradient step cost a tenth of the step).
        stats: dict[str, Any] = {"total_loss": loss, "policy_loss": -surrogate}
        stats["action_dist_inputs"] = inputs
        if kl is not None:
            stats["kl"] = kl
        if values is not None:
            stats.update(vf_loss=vf_loss, vf_preds=values, value_targets=batch[SB.VALUE_TARGETS])
        return loss, stats

    @torch.no_grad()
    def _summarize(self, steps: list[dict[str, Any]]) -> dict[str, float]:
        """The learner stats from the rows ``loss()`` returned for every minibatch."""
        rows = {
            key: torch.cat([s[key] if s[key].dim() > 1 else s[key].reshape(-1) for s in steps])
            for key in steps[0]
        }
        means = ("total_loss", "policy_loss", "vf_loss", "kl", "grad_gnorm")
        stats = {key: float(rows[key].mean()) for key in means if key in rows}
        stats["entropy"] = float(self.dist_class(rows["action_dist_inputs"]).entropy().mean())
        if "vf_preds" in rows:
            targets = rows["value_targets"]
            unexplained = torch.var(targets - rows["vf_preds"]) / (torch.var(targets) + 1e-8)
            stats["vf_explained_var"] = float(1 - unexplained)
        return stats

    def learn_on_batch(self, batch: SampleBatch) -> dict[str, Any]:
        """``num_sgd_iter`` epochs of shuffled minibatches; then the KL coefficient adapts."""
        batch = batch.copy()
        batch[SB.ADVANTAGES] = standardized(batch[SB.ADVANTAGES])
        # Each epoch shuffles the columns the loss reads (all of them for a subclass with a loss
        # of its own) once; its minibatches are then slices, not copies.
        own_loss = type(self).loss is not PPOTorchPolicy.loss
        tensors = self.batch_tensors(batch, None if own_loss else _LOSS_COLUMNS)
        size = len(batch)
        minibatch = min(int(self.config["sgd_minibatch_size"]), size)
        per_step: list[dict[str, Any]] = []
        shuffle = bool(self.config["shuffle_sequences"])
        for _ in range(int(self.config["num_sgd_iter"])):
            epoch = tensors
            if shuffle:
                order = torch.as_tensor(self._rng.permutation(size), device=self.device)
                epoch = {k: v[order] for k, v in tensors.items()}
            for start in range(0, size - minibatch + 1, minibatch):
                rows = slice(start, start + minibatch)
                per_step.append(self.gradient_step({k: v[rows] for k, v in epoch.items()}))
        stats = mean_stats(per_step) if own_loss else self._summarize(per_step)
        if self.kl_coeff > 0 and "kl" in stats:
            self.update_kl(stats["kl"])
        stats.update(kl_coeff=self.kl_coeff, entropy_coeff=self.entropy_coeff, cur_lr=self.cur_lr)
        return {"learner_stats": stats, "num_grad_updates": self.num_grad_updates}

    def update_kl(self, sampled_kl: float) -> float:
        if sampled_kl > 2.0 * self.kl_target:
            self.kl_coeff *= 1.5
        elif sampled_kl < 0.5 * self.kl_target:
            self.kl_coeff *= 0.5
        return self.kl_coeff

    def extra_state(self) -> dict[str, Any]:
        return {
            **super().extra_state(),
            "kl_coeff": self.kl_coeff,
            "rng": self._rng.bit_generator.state,
        }

    def set_extra_state(self, state: Mapping[str, Any]) -> None:
        super().set_extra_state(state)
        self.kl_coeff = float(state.get("kl_coeff", self.kl_coeff))
        if "rng" in state:
            self._rng.bit_generator.state = dict(state["rng"])


class PPO(Algorithm):
    config_class: ClassVar[type[AlgorithmConfig]] = PPOConfig
    policy_class: ClassVar[type[A2CTorchPolicy]] = PPOTorchPolicy
