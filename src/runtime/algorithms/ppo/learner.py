"""``PPOLearner``: ``num_sgd_iter`` epochs of shuffled minibatches of ``ppo_loss`` per train
batch (advantages standardised first; an epoch of one minibatch of every row is not shuffled),
then the KL coefficient adapts to ``kl_target``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from runtime.algorithms.ppo.loss import ppo_loss
from runtime.core.learner import Learner
from runtime.core.learner_stats import mean_stats
from runtime.core.postprocessing import standardized
from runtime.core.sample_batch import SampleBatch
from runtime.core.sample_batch import SampleBatch as SB
from runtime.core.sequences import minibatches_of_sequences, sequence_tensors, state_keys
from runtime.core.settings import settings_of

#: The columns ``ppo_loss`` reads (a subclass with a loss of its own gets all of them).
LOSS_COLUMNS: tuple[str, ...] = (SB.OBS, SB.ACTIONS, SB.ACTION_LOGP, SB.ACTION_DIST_INPUTS)
LOSS_COLUMNS += (SB.ADVANTAGES, SB.VALUE_TARGETS)
#: ... and what a module with memory reads besides (with its ``state_in_k`` columns).
MEMORY_COLUMNS: tuple[str, ...] = (SB.PREV_ACTIONS, SB.PREV_REWARDS)


@dataclass(frozen=True)
class PPOLearnerSettings:
    entropy_coeff: float
    entropy_coeff_schedule: Any
    kl_coeff: float
    kl_target: float
    clip_param: float
    vf_clip_param: float
    vf_loss_coeff: float
    sgd_minibatch_size: int
    num_sgd_iter: int
    shuffle_sequences: bool
    seed: int | None


class PPOLearner(Learner):
    def setup(self) -> None:
        self.settings = settings = settings_of(PPOLearnerSettings, self.config, "PPOLearner")
        self.add_schedule(
            "entropy_coeff", settings.entropy_coeff_schedule, float(settings.entropy_coeff)
        )
        self.kl_coeff = float(settings.kl_coeff)
        self.kl_target = float(settings.kl_target)
        # Read once: the loss runs for every minibatch.
        self._clip_param = float(settings.clip_param)
        self._vf_clip_param = float(settings.vf_clip_param)
        self._vf_loss_coeff = float(settings.vf_loss_coeff)
        seed = settings.seed
        self._rng = np.random.default_rng(None if seed is None else int(seed))

    @property
    def entropy_coeff(self) -> float:
        return self.scheduled("entropy_coeff")

    def compute_loss(self, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, dict[str, Any]]:
        return ppo_loss(
            self.module,
            batch,
            clip_param=self._clip_param,
            vf_clip_param=self._vf_clip_param,
            vf_loss_coeff=self._vf_loss_coeff,
            entropy_coeff=self.entropy_coeff,
            kl_coeff=self.kl_coeff,
        )

    def update(self, batch: SampleBatch) -> dict[str, Any]:
        batch = batch.copy()
        batch[SB.ADVANTAGES] = standardized(batch[SB.ADVANTAGES])
        # Each epoch shuffles the columns the loss reads once; its minibatches are then slices.
        own_loss = type(self).compute_loss is not PPOLearner.compute_loss
        recurrent = self.module.is_recurrent
        memory = (*MEMORY_COLUMNS, *state_keys(batch)) if recurrent else ()
        columns = None if own_loss else LOSS_COLUMNS + memory
        tensors = self.batch_tensors(batch, columns)
        size = len(batch)
        minibatch = min(int(self.settings.sgd_minibatch_size), size)
        per_step: list[dict[str, Any]] = []
        shuffle = bool(self.settings.shuffle_sequences)
        if recurrent:
            per_step = self._sequence_epochs(batch, tensors, minibatch, shuffle)
        for _ in range(0 if recurrent else int(self.settings.num_sgd_iter)):
            epoch = tensors
            # One minibatch of every row (the tuned CartPole's) is the same loss in any order:
            # shuffling it would only cost a gather of every column per epoch.
            if shuffle and minibatch < size:
                order = torch.as_tensor(self._rng.permutation(size), device=self.device)
                epoch = {k: v[order] for k, v in tensors.items()}
            if minibatch == size:
                # Slicing every column to all its rows would cost 2 us a column, every epoch.
                per_step.append(self.gradient_step(dict(epoch)))
                continue
            for start in range(0, size - minibatch + 1, minibatch):
                rows = slice(start, start + minibatch)
                per_step.append(self.gradient_step({k: v[rows] for k, v in epoch.items()}))
        stats = mean_stats(per_step) if own_loss else self.summarize(per_step)
        if self.kl_coeff > 0 and "kl" in stats:
            self.update_kl(stats["kl"])
        stats.update(kl_coeff=self.kl_coeff, entropy_coeff=self.entropy_coeff, cur_lr=self.cur_lr)
        return self.info(stats)

    def _sequence_epochs(
        self, batch: SampleBatch, tensors: dict[str, torch.Tensor], minibatch: int, shuffle: bool
    ) -> list[dict[str, Any]]:
        """The epochs of a module with memory: minibatches of whole sequences (of at least
        ``minibatch`` valid rows), shuffled as sequences (``shuffle_sequences``)."""
        starts, lens = self.sequences_of(batch)
        per_step: list[dict[str, Any]] = []
        for _ in range(int(self.settings.num_sgd_iter)):
            order = self._rng.permutation(len(starts)) if shuffle else np.arange(len(starts))
            for group in minibatches_of_sequences(lens, order, minibatch):
                per_step.append(self.gradient_step(sequence_tensors(tensors, starts, lens, group)))
        return per_step

    @torch.no_grad()
    def summarize(self, steps: list[dict[str, Any]]) -> dict[str, float]:
        """The learner stats from the rows ``ppo_loss`` returned for every minibatch."""
        rows = {
            key: torch.cat([s[key] if s[key].dim() > 1 else s[key].reshape(-1) for s in steps])
            for key in steps[0]
        }
        means = ("total_loss", "policy_loss", "vf_loss", "kl", "grad_gnorm")
        stats = {key: float(rows[key].mean()) for key in means if key in rows}
        dist = self.module.dist_class(rows["action_dist_inputs"])
        stats["entropy"] = float(dist.entropy().mean())
        if "vf_preds" in rows:
            targets = rows["value_targets"]
            unexplained = torch.var(targets - rows["vf_preds"]) / (torch.var(targets) + 1e-8)
            stats["vf_explained_var"] = float(1 - unexplained)
        return stats

    def update_kl(self, sampled_kl: float) -> float:
        """Raise the penalty's weight by half when the KL overshoots twice the target; halve it
        below half the target."""
        if sampled_kl > 2.0 * self.kl_target:
            self.kl_coeff *= 1.5
        elif sampled_kl < 0.5 * self.kl_target:
            self.kl_coeff *= 0.5
        return self.kl_coeff

    def extra_state(self) -> dict[str, Any]:
        return {"kl_coeff": self.kl_coeff, "rng": self._rng.bit_generator.state}

    def set_extra_state(self, state: Mapping[str, Any]) -> None:
        self.kl_coeff = float(state.get("kl_coeff", self.kl_coeff))
        if "rng" in state:
            self._rng.bit_generator.state = dict(state["rng"])
