"""``Learner``: everything about learning one policy's module: the loss, named optimizers,
target networks and their update rule, gradient clipping, schedules, and the state of all of
it (saved in checkpoints).

An algorithm subclasses it and implements ``compute_loss`` (one optimizer) or overrides
``update`` (several optimizers, epochs of minibatches, ...). Learners exist only where learning
happens (the local worker); rollout workers act with the module alone.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, TypeVar

import torch
from torch import nn

from runtime.core.adam import make_adam
from runtime.core.gradients import clip_grad_norm
from runtime.core.module import RLModule
from runtime.core.sample_batch import SampleBatch
from runtime.core.schedules import PiecewiseSchedule

Tensors = dict[str, torch.Tensor]
_Net = TypeVar("_Net", bound=nn.Module)

#: The optimizer of learners with one loss.
DEFAULT_OPTIMIZER = "default"


class Learner:
    def __init__(self, module: RLModule, config: Any, device: torch.device | None = None) -> None:
        self.module = module
        self.config = config
        self.device = device or torch.device("cpu")
        self.global_timestep = 0
        self.num_grad_updates = 0
        clip = config.get("grad_clip")
        self.grad_clip = None if clip is None else float(clip)
        self.schedules: dict[str, PiecewiseSchedule] = {}
        self._values: dict[str, float] = {}
        self.add_schedule("lr", config.get("lr_schedule"), float(config["lr"]))
        self.target_networks: dict[str, tuple[nn.Module, nn.Module]] = {}
        self.optimizers: dict[str, torch.optim.Optimizer] = self.build_optimizers()
        self._params = {
            name: list(opt.param_groups[0]["params"]) for name, opt in self.optimizers.items()
        }
        self.setup()

    def setup(self) -> None:
        """Subclass hook, called at the end of ``__init__``: read settings, add schedules and
        target networks."""

    # ------------------------------------------------------------------ optimizers

    def build_optimizers(self) -> dict[str, torch.optim.Optimizer]:
        """The optimizers by name; one Adam over the whole module by default (``optimizer``
        in the config gives its extra arguments)."""
        options = self.config.get("optimizer") or {}
        return {DEFAULT_OPTIMIZER: make_adam(self.module.parameters(), self.cur_lr, options)}

    # ------------------------------------------------------------------ schedules

    def add_schedule(self, name: str, points: Any, constant: float) -> None:
        """A value that moves with the global timestep: piecewise-linear through ``points``
        (``[[timestep, value], ...]``), or ``constant`` without points."""
        self.schedules[name] = PiecewiseSchedule(points or [[0, constant]])
        self._values[name] = self.schedules[name].value(self.global_timestep)

    def scheduled(self, name: str) -> float:
        """The current value of schedule ``name``."""
        return self._values[name]

    @property
    def cur_lr(self) -> float:
        return self.scheduled("lr")

    def on_timestep(self, timestep: int) -> None:
        """Move every schedule to the global ``timestep`` (and the optimizers' learning rate)."""
        self.global_timestep = int(timestep)
        for name, schedule in self.schedules.items():
            self._values[name] = schedule.value(self.global_timestep)
        for name, optimizer in self.optimizers.items():
            lr = self.lr_of(name)
            for group in optimizer.param_groups:
                group["lr"] = lr

    def lr_of(self, optimizer: str) -> float:
        """The learning rate of ``optimizer`` now (the ``lr`` schedule for all by default)."""
        return self.cur_lr

    # ------------------------------------------------------------------ target networks

    def add_target_network(self, name: str, source: _Net) -> _Net:
        """A frozen copy of ``source`` that follows it through ``update_target_networks``."""
        target = copy.deepcopy(source)
        for param in target.parameters():
            param.requires_grad_(False)
        self.target_networks[name] = (source, target)
        return target

    @torch.no_grad()
    def update_target_networks(self, tau: float = 1.0) -> None:
        """``target = tau * source + (1 - tau) * target``: a hard copy at ``tau=1``, polyak
        averaging below."""
        for source, target in self.target_networks.values():
            if tau >= 1.0:
                target.load_state_dict(source.state_dict())
                continue
            for t, s in zip(target.parameters(), source.parameters(), strict=True):
                t.mul_(1.0 - tau).add_(s, alpha=tau)

    # ------------------------------------------------------------------ learning

    def compute_loss(self, batch: Tensors) -> tuple[torch.Tensor, dict[str, Any]]:
        """The loss to minimise on ``batch`` (tensors by column name) and the stats to report."""
        raise NotImplementedError(f"{type(self).__name__} must implement compute_loss()")

    def update(self, batch: SampleBatch) -> dict[str, Any]:
        """Learn on one train batch; returns ``{"learner_stats": ..., "num_grad_updates": n}``.
        The default: one gradient step on the whole batch."""
        stats = self.gradient_step(self.batch_tensors(batch))
        return self.info({k: float(v) for k, v in stats.items()})

    def info(self, stats: dict[str, Any]) -> dict[str, Any]:
        """The learner info of one update: its stats plus ``cur_lr``, and the update count."""
        stats.setdefault("cur_lr", self.cur_lr)
        return {"learner_stats": stats, "num_grad_updates": self.num_grad_updates}

    def batch_tensors(self, batch: SampleBatch, columns: tuple[str, ...] | None = None) -> Tensors:
        """The batch's numeric columns (only ``columns`` when given) as tensors."""
        out: Tensors = {}
        for name, values in batch.items():
            if values.dtype != object and (columns is None or name in columns):
                out[name] = torch.as_tensor(values, device=self.device)
        return out

    def gradient_step(self, tensors: Tensors, optimizer: str = DEFAULT_OPTIMIZER) -> dict[str, Any]:
        """One step of ``optimizer`` on ``compute_loss(tensors)``; the stats stay detached
        tensors (read them once, at the end: turning each into a float stalls every step)."""
        loss, stats = self.compute_loss(tensors)
        self.optimizers[optimizer].zero_grad(set_to_none=True)
        loss.backward()  # type: ignore[no-untyped-call]
        stats.update(self.apply_gradients(optimizer))
        return {k: v.detach() if isinstance(v, torch.Tensor) else v for k, v in stats.items()}

    def apply_gradients(self, optimizer: str = DEFAULT_OPTIMIZER) -> dict[str, torch.Tensor]:
        """Clip the accumulated gradients (``grad_clip``) and step ``optimizer``; returns
        ``{"grad_gnorm": norm}`` when clipping."""
        stats = {}
        if self.grad_clip is not None:
            stats["grad_gnorm"] = clip_grad_norm(self._params[optimizer], self.grad_clip)
        self.optimizers[optimizer].step()
        self.num_grad_updates += 1
        return stats

    # ------------------------------------------------------------------ state

    def get_state(self) -> dict[str, Any]:
        """JSON-able state: counters and what ``extra_state`` adds."""
        return {
            "global_timestep": self.global_timestep,
            "num_grad_updates": self.num_grad_updates,
            **self.extra_state(),
        }

    def set_state(self, state: Mapping[str, Any]) -> None:
        self.num_grad_updates = int(state.get("num_grad_updates", 0))
        self.set_extra_state(state)
        self.on_timestep(int(state.get("global_timestep", 0)))

    def extra_state(self) -> dict[str, Any]:
        """Subclass hook: JSON-able state of the loss (adaptive coefficients, generators)."""
        return {}

    def set_extra_state(self, state: Mapping[str, Any]) -> None:
        """Subclass hook: restore what ``extra_state`` returned."""

    def get_tensor_state(self) -> dict[str, dict[str, Any]]:
        """State dicts by name: every optimizer and every target network."""
        out = {f"optimizers/{n}": opt.state_dict() for n, opt in self.optimizers.items()}
        for name, (_, target) in self.target_networks.items():
            out[f"targets/{name}"] = target.state_dict()
        return out

    def set_tensor_state(self, tensors: Mapping[str, Mapping[str, Any]]) -> None:
        for name, optimizer in self.optimizers.items():
            optimizer.load_state_dict(dict(tensors[f"optimizers/{name}"]))
        for name, (_, target) in self.target_networks.items():
            target.load_state_dict(dict(tensors[f"targets/{name}"]))
