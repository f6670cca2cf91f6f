"""``Learner``: everything about learning one policy's module: the losses, named optimizers
(each with its own learning rate, schedule and gradient clipping), target networks and their
update rule, schedules, and the state of all of it (saved in checkpoints).

An algorithm subclasses it and implements ``compute_loss`` (one optimizer), or
``compute_losses`` (a loss per named optimizer, declared by ``optimizer_settings`` and
``optimizer_parameters``), or overrides ``update`` (epochs of minibatches, ...). Learners live
in the algorithm's ``LearnerGroup``, each over a module of its own on its own device; rollout
workers act with their own copies. ``parallel`` splits each gradient step over towers and
learner processes (``runtime.core.data_parallel``).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

import numpy as np
import torch
from torch import nn

from runtime.core import torch_private
from runtime.core.adam import make_adam
from runtime.core.data_parallel import DataParallel
from runtime.core.gradients import clip_grad_norm
from runtime.core.module import RLModule
from runtime.core.sample_batch import SampleBatch
from runtime.core.schedules import PiecewiseSchedule
from runtime.core.sequences import sequence_bounds, sequence_tensors
from runtime.core.settings import settings_of

Tensors = dict[str, torch.Tensor]
_Net = TypeVar("_Net", bound=nn.Module)

#: The optimizer of learners with one loss.
DEFAULT_OPTIMIZER = "default"


@dataclass(frozen=True)
class OptimizerSettings:
    """One named optimizer: its learning rate (or ``[[timestep, lr], ...]`` schedule), its
    gradient clipping by global norm (None: none) and ``torch.optim.Adam`` keywords."""

    lr: float
    lr_schedule: Any = None
    grad_clip: float | None = None
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class LearnerSettings:
    """What the default optimizer is made from; a config without ``lr_schedule`` or
    ``grad_clip`` has no schedule or clipping."""

    lr: float
    optimizer: Mapping[str, Any]
    lr_schedule: Any = None
    grad_clip: float | None = None


class Learner:
    #: A class's promise that each loss of its ``compute_losses`` reaches only its own
    #: optimizer's parameters (an actor's loss through a critic whose parameters are
    #: ``gradients.frozen`` there): then one backward pass of their sum gives every optimizer
    #: its gradient, in place of one pass per loss (a pass's fixed cost is most of it for
    #: small networks). A subclass with a ``compute_losses`` of its own does not inherit it
    #: (``separate_losses`` is then False unless that subclass makes the promise again).
    separate_losses: ClassVar[bool] = False

    def __init__(self, module: RLModule, config: Any, device: torch.device | None = None) -> None:
        self.module = module
        self.config = config
        self.device = device or torch.device("cpu")
        self.global_timestep = 0
        self.num_grad_updates = 0
        self.schedules: dict[str, PiecewiseSchedule] = {}
        self._values: dict[str, float] = {}
        self.optimizer_specs: dict[str, OptimizerSettings] = dict(self.optimizer_settings())
        for name, settings in self.optimizer_specs.items():
            self.add_schedule(self.lr_schedule_name(name), settings.lr_schedule, settings.lr)
        default = self.optimizer_specs.get(DEFAULT_OPTIMIZER)
        #: The default optimizer's clipping (optimizers without settings of their own use it).
        self.grad_clip = default.grad_clip if default is not None else None
        self.target_networks: dict[str, tuple[nn.Module, nn.Module]] = {}
        #: Per target network: its parameters and its source's, in the same order.
        self._target_params: dict[str, tuple[list[torch.Tensor], list[torch.Tensor]]] = {}
        self.optimizers: dict[str, torch.optim.Optimizer] = self.build_optimizers()
        #: Each optimizer's parameters, in its order (gradients are set and clipped on these).
        self.param_lists: dict[str, list[torch.Tensor]] = {
            name: [p for group in opt.param_groups for p in group["params"]]
            for name, opt in self.optimizers.items()
        }
        #: Splits gradient steps over towers and learner processes; None: this learner alone.
        self.parallel: DataParallel | None = None
        self._reported: dict[str, Any] = {}
        #: Whether gradient steps take one backward pass of all losses (``separate_losses``).
        self.one_backward_pass = _promise_holds(type(self))
        self.setup()

    def setup(self) -> None:
        """Subclass hook, called at the end of ``__init__``: read settings, add schedules and
        target networks."""

    # ------------------------------------------------------------------ optimizers

    def optimizer_settings(self) -> Mapping[str, OptimizerSettings]:
        """The named optimizers and their settings. By default one, ``"default"``, from the
        config's ``lr``, ``lr_schedule``, ``grad_clip`` and ``optimizer``; a learner with
        several (actor, critic, entropy) returns each with its own fields."""
        settings = settings_of(LearnerSettings, self.config, type(self).__name__)
        clip = settings.grad_clip
        return {
            DEFAULT_OPTIMIZER: OptimizerSettings(
                lr=float(settings.lr),
                lr_schedule=settings.lr_schedule,
                grad_clip=None if clip is None else float(clip),
                options=settings.optimizer or {},
            )
        }

    def optimizer_parameters(self, name: str) -> Iterable[nn.Parameter]:
        """The parameters optimizer ``name`` steps: the whole module by default."""
        return self.module.parameters()

    def build_optimizers(self) -> dict[str, torch.optim.Optimizer]:
        """The optimizers by name: an Adam per ``optimizer_settings`` entry over its
        ``optimizer_parameters``."""
        return {
            name: make_adam(self.optimizer_parameters(name), self.lr_of(name), settings.options)
            for name, settings in self.optimizer_specs.items()
        }

    @staticmethod
    def lr_schedule_name(optimizer: str) -> str:
        """The schedule of ``optimizer``'s learning rate: ``lr`` for the default one,
        ``<name>_lr`` for the others."""
        return "lr" if optimizer == DEFAULT_OPTIMIZER else f"{optimizer}_lr"

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
        """The default optimizer's learning rate (the first optimizer's, without one)."""
        if "lr" in self._values or not self.optimizer_specs:
            return self.scheduled("lr")
        return self.scheduled(self.lr_schedule_name(next(iter(self.optimizer_specs))))

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
        """The learning rate of ``optimizer`` now: its own schedule, else the ``lr`` one."""
        name = self.lr_schedule_name(optimizer)
        return self.scheduled(name) if name in self._values else self.cur_lr

    # ------------------------------------------------------------------ target networks

    def add_target_network(self, name: str, source: _Net) -> _Net:
        """A frozen copy of ``source`` that follows it through ``update_target_networks``."""
        target = copy.deepcopy(source)
        for param in target.parameters():
            param.requires_grad_(False)
        self.target_networks[name] = (source, target)
        self._target_params.pop(name, None)  # listed again on the next update
        return target

    @torch.no_grad()
    def update_target_networks(self, tau: float = 1.0) -> None:
        """``target = tau * source + (1 - tau) * target``: a hard copy at ``tau=1``, polyak
        averaging below."""
        for name, (source, target) in self.target_networks.items():
            if tau >= 1.0:
                target.load_state_dict(source.state_dict())
                continue
            pairs = self._target_params.get(name)
            if pairs is None:
                # Listed once: walking the modules for their parameters on every update costs
                # more than the averaging itself at SAC's one update per env step.
                pairs = self._target_params[name] = (
                    list(target.parameters()),
                    list(source.parameters()),
                )
            torch_private.foreach_lerp_(pairs[0], pairs[1], tau)

    # ------------------------------------------------------------------ learning

    def compute_loss(self, batch: Tensors) -> tuple[torch.Tensor, dict[str, Any]]:
        """The loss to minimise on ``batch`` (tensors by column name) and the stats to report."""
        raise NotImplementedError(
            f"{type(self).__name__} must implement compute_loss() or compute_losses()"
        )

    def compute_losses(self, batch: Tensors) -> dict[str, torch.Tensor]:
        """The loss of each optimizer to step on ``batch``, by optimizer name (a subset: an
        optimizer left out is not stepped, e.g. TD3's delayed actor). Stats go to
        ``report()``. By default ``compute_loss`` for the default optimizer."""
        loss, stats = self.compute_loss(batch)
        self.report(**stats)
        return {DEFAULT_OPTIMIZER: loss}

    def report(self, **stats: Any) -> None:
        """Stats of the current gradient step (tensors stay on the device until the end)."""
        self._reported.update(stats)

    def update(self, batch: SampleBatch) -> dict[str, Any]:
        """Learn on one train batch; returns ``{"learner_stats": ..., "num_grad_updates": n}``.
        The default: one gradient step on the whole batch (all its sequences, for a module with
        memory)."""
        tensors = self.batch_tensors(batch)
        if self.module.is_recurrent:
            starts, lens = self.sequences_of(batch)
            tensors = sequence_tensors(tensors, starts, lens, np.arange(len(starts)))
        stats = self.gradient_step(tensors)
        return self.info({k: float(v) for k, v in stats.items()})

    def sequences_of(self, batch: SampleBatch) -> tuple[Any, Any]:
        """``(starts, lens)`` of the sequences a module with memory trains ``batch`` as (at most
        ``model.max_seq_len`` steps each; ``runtime.core.sequences``)."""
        # The validated model dict always holds it (the reference's default: 20).
        max_seq_len = int(self.module.model_config["max_seq_len"])
        return sequence_bounds(batch, max_seq_len)

    def replay_update(
        self, batch: SampleBatch, columns: tuple[str, ...] | None = None
    ) -> dict[str, Any]:
        """One gradient step on a replayed batch (its ``columns`` only, when given) whose losses
        report a per-row ``td_error``: it goes back in the info as a numpy array (prioritized
        replay's new priorities)."""
        stats = self.gradient_step(self.batch_tensors(batch, columns))
        td_error = stats.pop("td_error")
        info = self.info({k: float(v) for k, v in stats.items()})
        info["td_error"] = td_error.cpu().numpy()
        return info

    def info(self, stats: dict[str, Any]) -> dict[str, Any]:
        """The learner info of one update: its stats plus ``cur_lr``, and the update count."""
        stats.setdefault("cur_lr", self.cur_lr)
        return {"learner_stats": stats, "num_grad_updates": self.num_grad_updates}

    def loss_columns(
        self, owner: type[Learner], columns: tuple[str, ...]
    ) -> tuple[str, ...] | None:
        """``columns`` (what ``owner``'s losses read) when this learner computes its losses as
        ``owner`` does, else None (all): a subclass with losses of its own may read any column.
        Each column left out saves a tensor conversion per gradient step."""
        kind = type(self)
        if kind.compute_loss is owner.compute_loss and kind.compute_losses is owner.compute_losses:
            return columns
        return None

    def batch_tensors(self, batch: SampleBatch, columns: tuple[str, ...] | None = None) -> Tensors:
        """The batch's numeric columns (only ``columns`` when given) as tensors."""
        out: Tensors = {}
        for name, values in batch.items():
            if values.dtype != object and (columns is None or name in columns):
                out[name] = torch.as_tensor(values, device=self.device)
        return out

    def gradient_step(self, tensors: Tensors, optimizer: str | None = None) -> dict[str, Any]:
        """One step of each optimizer ``compute_losses(tensors)`` returns a loss for (of
        ``optimizer`` alone on ``compute_loss`` when named), split over the towers and learner
        processes of ``parallel`` when there are several. The stats stay detached tensors (read
        them once, at the end: turning each into a float stalls every step)."""
        if self.parallel is None:
            losses, stats = self.losses_of(tensors, optimizer)
            names = list(losses)
            if len(losses) == 1 or self.one_backward_pass:
                # One backward pass into everything the losses reach.
                for name in names:
                    self.optimizers[name].zero_grad(set_to_none=True)
                total = losses[names[0]]
                for name in names[1:]:
                    total = total + losses[name]
                total.backward()  # type: ignore[no-untyped-call]
            else:
                self.set_gradients(self.gradients_of(losses))
        else:
            names, stats = self.parallel.compute_gradients(tensors, optimizer)
        stats.update(self.apply_gradients(names))
        return {k: v.detach() if isinstance(v, torch.Tensor) else v for k, v in stats.items()}

    def losses_of(
        self, tensors: Tensors, optimizer: str | None = None
    ) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
        """The losses by optimizer name and the reported stats of one pass over ``tensors``."""
        self._reported = {}
        if optimizer is not None:
            loss, stats = self.compute_loss(tensors)
            return {optimizer: loss}, stats
        losses = self.compute_losses(tensors)
        unknown = [name for name in losses if name not in self.optimizers]
        if unknown:
            raise KeyError(
                f"{type(self).__name__}.compute_losses() returned losses for {unknown}, which "
                f"are not optimizers; optimizers: {', '.join(self.optimizers)}"
            )
        stats, self._reported = self._reported, {}
        return dict(losses), stats

    def gradients_of(
        self, losses: Mapping[str, torch.Tensor], weight: float = 1.0
    ) -> dict[str, list[torch.Tensor | None]]:
        """The gradient of each loss with respect to its own optimizer's parameters only (an
        actor's loss that runs through the critic leaves the critic's gradient alone), each
        loss scaled by ``weight``."""
        names = list(losses)
        out: dict[str, list[torch.Tensor | None]] = {}
        for i, name in enumerate(names):
            loss = losses[name] if weight == 1.0 else losses[name] * weight
            params = self.param_lists[name]
            grads = torch.autograd.grad(
                loss, params, retain_graph=i < len(names) - 1, allow_unused=True
            )
            out[name] = list(grads)
        return out

    def set_gradients(self, grads: Mapping[str, Sequence[torch.Tensor | None]]) -> None:
        for name, values in grads.items():
            for param, grad in zip(self.param_lists[name], values, strict=True):
                param.grad = grad

    def apply_gradients(
        self, optimizers: str | Iterable[str] = DEFAULT_OPTIMIZER
    ) -> dict[str, torch.Tensor]:
        """Clip each optimizer's gradients by its own ``grad_clip`` and step it; returns
        ``grad_gnorm`` (one optimizer) or ``<name>_grad_gnorm`` (several) where clipping."""
        names = [optimizers] if isinstance(optimizers, str) else list(optimizers)
        stats = {}
        for name in names:
            settings = self.optimizer_specs.get(name)
            clip = settings.grad_clip if settings is not None else self.grad_clip
            if clip is not None:
                key = "grad_gnorm" if len(names) == 1 else f"{name}_grad_gnorm"
                stats[key] = clip_grad_norm(self.param_lists[name], clip)
            self.optimizers[name].step()
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


def _promise_holds(cls: type[Learner]) -> bool:
    """Whether ``cls.separate_losses`` covers the ``compute_losses`` it runs: the class that
    made the promise is that method's class or a subclass of it."""
    mro = cls.__mro__
    promised = next(c for c in mro if "separate_losses" in vars(c))
    losses = next(c for c in mro if "compute_losses" in vars(c))
    return bool(vars(promised)["separate_losses"]) and mro.index(promised) <= mro.index(losses)
