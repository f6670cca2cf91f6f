"""``TorchPolicy``: a model, its action distribution, an optimizer and a loss.

The policy sees preprocessed (and filtered) observations; the RolloutWorker owns the
preprocessor and the filter. Subclasses implement ``loss`` (and may override
``learn_on_batch`` and ``postprocess_fragment``).
"""

from __future__ import annotations

import abc
import functools
from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np
import numpy.typing as npt
import torch

from runtime.core.adam import make_adam
from runtime.core.gradients import clip_grad_norm
from runtime.core.model_catalog import ModelCatalog
from runtime.core.postprocessing import compute_advantages
from runtime.core.sample_batch import SampleBatch
from runtime.core.schedules import PiecewiseSchedule

Array = npt.NDArray[Any]

_EXPLORATION_TYPES = ("StochasticSampling", "Random")


class TorchPolicy(abc.ABC):
    """One trainable policy; ``config`` is the (frozen) algorithm config."""

    def __init__(
        self,
        observation_space: gym.Space[Any],
        action_space: gym.Space[Any],
        config: Any,
        device: torch.device | None = None,
    ) -> None:
        self.observation_space = observation_space
        self.action_space = action_space
        self.config = config
        self.device = device or torch.device("cpu")
        model_config = dict(config["model"])
        self.dist_class, num_outputs = ModelCatalog.get_action_dist(action_space, model_config)
        self.model = ModelCatalog.get_model(
            observation_space, action_space, num_outputs, model_config
        ).to(self.device)
        self.global_timestep = 0
        clip = config.get("grad_clip")
        self._grad_clip = None if clip is None else float(clip)
        self.num_grad_updates = 0
        self._lr_schedule = _schedule(config.get("lr_schedule"), float(config["lr"]))
        self.cur_lr = self._lr_schedule.value(0)
        self.optimizer = make_adam(
            self.model.parameters(), self.cur_lr, config.get("optimizer") or {}
        )
        exploration = dict(config.get("exploration_config") or {"type": "StochasticSampling"})
        self.exploration_type = exploration.get("type", "StochasticSampling")
        if not isinstance(self.exploration_type, str):
            self.exploration_type = getattr(self.exploration_type, "__name__", "")
        if self.exploration_type not in _EXPLORATION_TYPES:
            raise ValueError(
                f"exploration_config.type {self.exploration_type!r} is not available to "
                f"{type(self).__name__}; allowed: {', '.join(_EXPLORATION_TYPES)}"
            )
        self.random_timesteps = int(exploration.get("random_timesteps", 0) or 0)

    # ------------------------------------------------------------------------ acting

    def _input(self, obs: Array) -> dict[str, torch.Tensor]:
        tensor = torch.from_numpy(np.asarray(obs, dtype=np.float32)).to(self.device)
        return {"obs": tensor, "obs_flat": tensor.reshape(len(tensor), -1)}

    @torch.inference_mode()
    def compute_actions(
        self,
        obs_batch: Array,
        state_batches: list[Any] | None = None,
        explore: bool | None = None,
        timestep: int | None = None,
        value_preds: bool = True,
        **kwargs: Any,
    ) -> tuple[Array, list[Any], dict[str, Array]]:
        """Actions for a batch of preprocessed observations: ``(actions, [], extra)`` where
        ``extra`` holds ``action_logp``, ``action_dist_inputs`` and (with a critic, unless
        ``value_preds=False``) ``vf_preds``."""
        explore = bool(self.config["explore"]) if explore is None else explore
        step = self.global_timestep if timestep is None else timestep
        inputs, _ = self.model(self._input(obs_batch), [], None)
        dist = self.dist_class(inputs)
        random_phase = explore and (
            self.exploration_type == "Random" or step < self.random_timesteps
        )
        if random_phase:
            actions = torch.as_tensor(
                np.stack([self.action_space.sample() for _ in range(len(inputs))]),
                device=self.device,
            )
        elif explore:
            actions = dist.sample()
        else:
            actions = dist.deterministic_sample()
        extra = {
            SampleBatch.ACTION_LOGP: dist.logp(actions).cpu().numpy(),
            SampleBatch.ACTION_DIST_INPUTS: inputs.cpu().numpy(),
        }
        if self.has_critic and value_preds:
            extra[SampleBatch.VF_PREDS] = self.model.value_function().cpu().numpy()
        return actions.cpu().numpy(), [], extra

    def compute_single_action(
        self, obs: Any, state: list[Any] | None = None, explore: bool | None = None, **kwargs: Any
    ) -> tuple[Any, list[Any], dict[str, Any]]:
        actions, states, extra = self.compute_actions(np.asarray(obs)[None], explore=explore)
        return actions[0], states, {k: v[0] for k, v in extra.items()}

    @torch.inference_mode()
    def compute_values(self, obs_batch: Array) -> Array:
        """V(s) for a batch of preprocessed observations (zeros without a critic)."""
        if not self.has_critic or len(obs_batch) == 0:
            return np.zeros(len(obs_batch), dtype=np.float32)
        values: Array = self.model.values(self._input(obs_batch)).cpu().numpy()
        return values

    @functools.cached_property
    def has_critic(self) -> bool:
        return bool(self.config.get("use_critic", False))

    # ----------------------------------------------------------------- postprocessing

    def postprocess_fragment(self, columns: dict[str, Array]) -> None:
        """Add ``advantages`` and ``value_targets`` to ``(T, N)`` columns (see postprocessing)."""
        ends = columns[SampleBatch.TERMINATEDS] | columns["_segment_ends"]
        values = columns.get(SampleBatch.VF_PREDS)
        if values is None:
            values = np.zeros_like(columns[SampleBatch.REWARDS])
        advantages, targets = compute_advantages(
            columns[SampleBatch.REWARDS],
            values,
            columns["_next_values"],
            ends,
            gamma=float(self.config["gamma"]),
            lambda_=float(self.config.get("lambda", 1.0)),
            use_gae=bool(self.config.get("use_gae", False)) and self.has_critic,
            use_critic=self.has_critic,
        )
        columns[SampleBatch.ADVANTAGES] = advantages
        columns[SampleBatch.VALUE_TARGETS] = targets

    # ------------------------------------------------------------------------ learning

    @abc.abstractmethod
    def loss(self, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, dict[str, Any]]:
        """The loss to minimise on ``batch`` and the stats to report."""

    def batch_tensors(
        self, batch: SampleBatch, columns: tuple[str, ...] | None = None
    ) -> dict[str, torch.Tensor]:
        """The batch's numeric columns (only ``columns`` when given) as tensors."""
        out: dict[str, torch.Tensor] = {}
        for name, values in batch.items():
            if values.dtype != object and (columns is None or name in columns):
                out[name] = torch.as_tensor(values, device=self.device)
        return out

    def learn_on_batch(self, batch: SampleBatch) -> dict[str, Any]:
        """One gradient step on the whole batch; returns the learner stats."""
        stats = self.gradient_step(self.batch_tensors(batch))
        learner = {k: float(v) for k, v in stats.items()}
        learner["cur_lr"] = self.cur_lr
        return {"learner_stats": learner, "num_grad_updates": self.num_grad_updates}

    def gradient_step(self, tensors: dict[str, torch.Tensor]) -> dict[str, Any]:
        """One optimizer step; the stats are detached tensors (read them once, at the end:
        turning each into a float here would stall every step)."""
        loss, stats = self.loss(tensors)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()  # type: ignore[no-untyped-call]
        stats.update(self.apply_gradients())
        return {k: v.detach() if isinstance(v, torch.Tensor) else v for k, v in stats.items()}

    def apply_gradients(self) -> dict[str, torch.Tensor]:
        """Clip the accumulated gradients (``grad_clip``) and take the optimizer step; returns
        ``{"grad_gnorm": norm}`` when clipping."""
        stats = {}
        if self._grad_clip is not None:
            params = self.optimizer.param_groups[0]["params"]
            stats["grad_gnorm"] = clip_grad_norm(params, self._grad_clip)
        self.optimizer.step()
        self.num_grad_updates += 1
        return stats

    def on_global_var_update(self, global_vars: Mapping[str, Any]) -> None:
        """Receive the global timestep; moves the lr (and other) schedules."""
        self.global_timestep = int(global_vars.get("timestep", self.global_timestep))
        self.cur_lr = self._lr_schedule.value(self.global_timestep)
        for group in self.optimizer.param_groups:
            group["lr"] = self.cur_lr

    # ------------------------------------------------------------------- state

    def get_weights(self) -> dict[str, Array]:
        return {k: v.detach().cpu().numpy().copy() for k, v in self.model.state_dict().items()}

    def set_weights(self, weights: Mapping[str, Any]) -> None:
        # A copy: arrays that arrive through Ray's object store are read-only.
        state = {k: torch.from_numpy(np.array(v)) for k, v in weights.items()}
        self.model.load_state_dict(state)

    def extra_state(self) -> dict[str, Any]:
        """JSON-able state besides the weights (coefficients of adaptive losses, counters)."""
        return {"global_timestep": self.global_timestep, "num_grad_updates": self.num_grad_updates}

    def set_extra_state(self, state: Mapping[str, Any]) -> None:
        self.num_grad_updates = int(state.get("num_grad_updates", 0))
        self.on_global_var_update({"timestep": int(state.get("global_timestep", 0))})


def _schedule(points: Any, constant: float) -> PiecewiseSchedule:
    if points:
        return PiecewiseSchedule(points)
    return PiecewiseSchedule([[0, constant]])
