"""``PolicyEstimates``: what a ``TorchPolicy`` says of given rows without acting on them (mixed
into it): the log-likelihood of given actions (what off-policy estimators weigh input rows with)
and the values of given observations (what bootstrapped returns start from)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import numpy as np
import numpy.typing as npt
import torch

from runtime.core.acting_inputs import memory_inputs
from runtime.core.exploration import Exploration
from runtime.core.exploration.soft_q import SoftQ
from runtime.core.module import RLModule
from runtime.core.sample_batch import SampleBatch

if TYPE_CHECKING:
    from runtime.core.policy import TorchPolicy

Array = npt.NDArray[Any]


class PolicyEstimates:
    """``compute_log_likelihoods`` and ``compute_values`` of ``TorchPolicy``."""

    module: RLModule
    dist_class: Any
    exploration: Exploration
    _weights_stale: bool

    if TYPE_CHECKING:  # the policy's own

        def pull_weights(self) -> None: ...

        def _obs(self, obs: Array) -> dict[str, torch.Tensor]: ...

    @torch.inference_mode()
    def compute_log_likelihoods(
        self,
        actions: Any,
        obs_batch: Array,
        state_batches: list[Any] | None = None,
        prev_action_batch: Any = None,
        prev_reward_batch: Any = None,
    ) -> Array:
        """The log-likelihood of each of ``actions`` (in the policy's coordinates) at its
        preprocessed observation under the current policy's action distribution, as the
        reference's ``compute_log_likelihoods`` (what off-policy estimators weigh input rows
        with). A Q-policy's distribution is the softmax of its Q-values (divided by the
        temperature when it explores with ``SoftQ``); a deterministic actor has none."""
        if self.dist_class is None:
            raise ValueError(
                f"compute_log_likelihoods: {type(self.module).__name__} is a deterministic "
                "actor; its actions have no likelihood"
            )
        if self._weights_stale:
            self.pull_weights()
        inputs = self._obs(np.asarray(obs_batch))
        if self.module.is_recurrent or state_batches:
            inputs.update(
                memory_inputs(
                    cast("TorchPolicy", self),
                    "compute_log_likelihoods",
                    len(obs_batch),
                    state_batches,
                    prev_action_batch,
                    prev_reward_batch,
                )
            )
        out = self.module.forward_inference(inputs)
        dist_inputs = out[SampleBatch.ACTION_DIST_INPUTS]
        temperature = getattr(self.exploration, "temperature", None)
        if isinstance(self.exploration, SoftQ) and temperature:
            dist_inputs = dist_inputs / float(temperature)
        chosen = torch.as_tensor(np.asarray(actions), device=dist_inputs.device)
        logp: Array = self.dist_class(dist_inputs).logp(chosen).cpu().numpy()
        return logp

    @torch.inference_mode()
    def compute_values(
        self,
        obs_batch: Array,
        state_batches: list[Any] | None = None,
        prev_action_batch: Any = None,
        prev_reward_batch: Any = None,
    ) -> Array:
        """V(s) for a batch of preprocessed observations (zeros without a critic); a model with
        memory reads its state and previous inputs as in ``compute_actions``."""
        if not self.module.has_critic or len(obs_batch) == 0:
            return np.zeros(len(obs_batch), dtype=np.float32)
        if self._weights_stale:
            self.pull_weights()
        inputs = self._obs(obs_batch)
        inputs.update(
            memory_inputs(
                cast("TorchPolicy", self),
                "compute_values",
                len(obs_batch),
                state_batches,
                prev_action_batch,
                prev_reward_batch,
            )
        )
        values: Array = self.module.compute_values(inputs).cpu().numpy()
        return values
