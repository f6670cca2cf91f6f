"""Data-parallel gradient steps: one minibatch split over towers (copies of a learner on several
devices in one process, ``num_gpus > 1`` or ``_fake_gpus``) and over learner processes (a
``torch.distributed`` group, ``num_learner_workers``).

A sequence batch (a model with memory) is split by whole sequences. Every shard's losses are
weighted by its share of the (valid) rows, so the summed gradient is the
gradient of the whole minibatch for losses that are means over rows: the result is the one
step a single learner would take, to float rounding. One optimizer step follows, on the
learner itself (tower 0); the other towers copy its tensors before their next pass.

A tower is a deep copy of the learner made once (modules, target networks, any tensor it
holds, moved to the tower's device); its other attributes (coefficients, schedule values) are
the learner's own, shared again before each pass, so a loss reads the same settings on every
tower.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from runtime.core.sample_batch import SampleBatch as SB
from runtime.core.sequences import STEP_INPUTS

if TYPE_CHECKING:
    from runtime.core.learner import Learner

Tensors = dict[str, torch.Tensor]


@dataclass(frozen=True)
class ProcessGroup:
    """This process's place in a ``torch.distributed`` group of learners."""

    rank: int
    size: int


def _tensors_in(value: Any) -> Iterator[torch.Tensor]:
    """The tensors an attribute holds: itself, a module's parameters and buffers, or those in
    a dict, list or tuple."""
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, nn.Module):
        yield from value.state_dict(keep_vars=True).values()
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _tensors_in(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _tensors_in(item)


def shard_sizes(rows: int, shards: int) -> list[int]:
    """Rows per shard: as equal as can be, the first ones one larger (``numpy.array_split``)."""
    base, extra = divmod(rows, shards)
    return [base + (1 if i < extra else 0) for i in range(shards)]


class DataParallel:
    """The towers of ``learner`` on ``devices`` (the first is the learner's own), within a
    process group ``group`` of learners (None: this process alone)."""

    def __init__(
        self,
        learner: Learner,
        devices: Sequence[torch.device | str],
        group: ProcessGroup | None = None,
    ) -> None:
        self.learner = learner
        self.devices = [torch.device(d) for d in devices]
        self.group = group
        self.replicas: list[Learner] = [learner]
        self._pairs: list[list[tuple[torch.Tensor, torch.Tensor]]] = [[]]
        self._own: list[set[str]] = [set()]
        for device in self.devices[1:]:
            self._add_replica(device)

    @property
    def num_shards(self) -> int:
        return len(self.replicas) * (self.group.size if self.group else 1)

    # ------------------------------------------------------------------ towers

    def _add_replica(self, device: torch.device) -> None:
        learner = self.learner
        originals: list[torch.Tensor] = []
        own: set[str] = set()
        for name, value in vars(learner).items():
            found = list(_tensors_in(value))
            if found:
                own.add(name)
                originals.extend(found)
        # Shared, not copied: the optimizers step the learner's own parameters only, and the
        # config is frozen.
        memo: dict[int, Any] = {id(opt): opt for opt in learner.optimizers.values()}
        memo[id(learner.config)] = learner.config
        memo[id(learner.parallel)] = None
        replica = copy.deepcopy(learner, memo)
        pairs = []
        for tensor in dict.fromkeys(originals):
            twin = memo.get(id(tensor))
            if isinstance(twin, torch.Tensor):
                if twin.device != device:
                    twin.data = twin.data.to(device)
                pairs.append((tensor, twin))
        replica.device = device
        own.update(("device", "parallel", "_reported"))
        self.replicas.append(replica)
        self._pairs.append(pairs)
        self._own.append(own)

    @torch.no_grad()
    def _sync_replica(self, index: int) -> None:
        replica, own = self.replicas[index], self._own[index]
        for name, value in vars(self.learner).items():
            if name not in own:
                setattr(replica, name, value)
        for source, twin in self._pairs[index]:
            twin.copy_(source)

    # ------------------------------------------------------------------ gradients

    def compute_gradients(
        self, tensors: Tensors, optimizer: str | None
    ) -> tuple[list[str], dict[str, Any]]:
        """The gradient of the whole minibatch ``tensors`` in the ``.grad`` of the learner's
        parameters (summed over towers and processes); returns the optimizers to step and the
        combined stats (per-row stats concatenated in row order, the others weighted means)."""
        towers = len(self.replicas)
        shards = _shards(tensors, self.num_shards)
        sizes = [size for size, _ in shards]
        rows = sum(sizes)
        first = (self.group.rank if self.group else 0) * towers
        tower_grads: list[dict[str, list[torch.Tensor | None]]] = []
        tower_stats: list[tuple[int, dict[str, Any]]] = []
        names: list[str] = []
        for t, replica in enumerate(self.replicas):
            if t:
                self._sync_replica(t)
            size, cut = shards[first + t]
            shard = {k: cut(k, v).to(replica.device, non_blocking=True) for k, v in tensors.items()}
            losses, stats = replica.losses_of(shard, optimizer)
            names = list(losses)
            tower_grads.append(replica.gradients_of(losses, weight=size / rows))
            tower_stats.append((size, stats))
        self._sum_into_learner(names, tower_grads)
        stats = _combine(tower_stats, rows, self.learner.device)
        if self.group is not None and self.group.size > 1:
            self._all_reduce_gradients(names)
            stats = self._all_reduce_stats(stats, sizes, towers)
        return names, stats

    @torch.no_grad()
    def _sum_into_learner(
        self, names: list[str], tower_grads: list[dict[str, list[torch.Tensor | None]]]
    ) -> None:
        learner = self.learner
        for name in names:
            params = learner.param_lists[name]
            for i, param in enumerate(params):
                parts = [g for grads in tower_grads if (g := grads[name][i]) is not None]
                if not parts:
                    param.grad = None
                    continue
                total = parts[0].to(param.device)
                for part in parts[1:]:
                    total = total + part.to(param.device)
                param.grad = total

    # ------------------------------------------------------------------ processes

    @torch.no_grad()
    def _all_reduce_gradients(self, names: list[str]) -> None:
        import torch.distributed as dist

        params = [p for name in names for p in self.learner.param_lists[name]]
        grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in params]
        flat = torch.cat([g.reshape(-1) for g in grads])
        dist.all_reduce(flat)
        offset = 0
        for param in params:
            count = param.numel()
            param.grad = flat[offset : offset + count].view_as(param).clone()
            offset += count

    @torch.no_grad()
    def _all_reduce_stats(
        self, stats: dict[str, Any], sizes: list[int], towers: int
    ) -> dict[str, Any]:
        """Every process ends with the same stats: weighted sums added up, per-row stats
        gathered (padded to the largest process's rows, then trimmed)."""
        import torch.distributed as dist

        assert self.group is not None
        per_rank = [sum(sizes[r * towers : (r + 1) * towers]) for r in range(self.group.size)]
        mine, longest = per_rank[self.group.rank], max(per_rank)
        device = self.learner.device
        out: dict[str, Any] = {}
        for key in sorted(stats):
            value = stats[key]
            tensor = torch.as_tensor(value, device=device)
            if tensor.dim() >= 1 and tensor.shape[0] == mine:
                padded = torch.zeros(
                    (longest, *tensor.shape[1:]), dtype=tensor.dtype, device=device
                )
                padded[:mine] = tensor
                parts = [torch.empty_like(padded) for _ in per_rank]
                dist.all_gather(parts, padded)
                out[key] = torch.cat([p[:n] for p, n in zip(parts, per_rank, strict=True)])
            else:
                total = tensor.to(torch.float64 if tensor.is_floating_point() else tensor.dtype)
                total = total.clone()
                dist.all_reduce(total)
                out[key] = total.to(tensor.dtype)
        return out


Cut = Callable[[str, torch.Tensor], torch.Tensor]


def _shards(tensors: Tensors, count: int) -> list[tuple[int, Cut]]:
    """Each shard's rows and how it cuts a column out of the minibatch: row ranges, or for a
    sequence batch (``runtime.core.sequences``) whole sequences - their padded inputs and
    start states by sequence, the other columns by their valid rows."""
    seq_lens = tensors.get(SB.SEQ_LENS)
    if seq_lens is None:
        rows = len(next(iter(tensors.values())))
        units = rows
    else:
        lens = seq_lens.tolist()
        units = len(lens)
    sizes = shard_sizes(units, count)
    if min(sizes) == 0:
        what = "rows" if seq_lens is None else "sequences"
        raise ValueError(
            f"a minibatch of {units} {what} can't be split over {count} learner "
            f"towers/processes: each needs at least one of them (raise the minibatch size, or "
            "use fewer GPUs or learner workers)"
        )
    out: list[tuple[int, Cut]] = []
    start = 0
    row_start = 0
    for size in sizes:
        if seq_lens is None:
            out.append((size, _row_cut(start, size, start, size)))
        else:
            valid = int(sum(lens[start : start + size]))
            out.append((valid, _row_cut(start, size, row_start, valid)))
            row_start += valid
        start += size
    return out


def _row_cut(seq_start: int, seqs: int, row_start: int, rows: int) -> Cut:
    def cut(name: str, values: torch.Tensor) -> torch.Tensor:
        if name in STEP_INPUTS or name == SB.SEQ_LENS or name.startswith("state_in_"):
            return values[seq_start : seq_start + seqs]
        return values[row_start : row_start + rows]

    return cut


def _combine(
    tower_stats: list[tuple[int, dict[str, Any]]], rows: int, device: torch.device
) -> dict[str, Any]:
    """One stats dict from the towers': per-row tensors (first dimension = the shard's rows)
    concatenated, everything else weighted by its shard's share of the rows."""
    if len(tower_stats) == 1:
        size, stats = tower_stats[0]
        weight = size / rows
        if weight == 1:
            return dict(stats)
        return {k: v if _per_row(v, size) else _scaled(v, weight, device) for k, v in stats.items()}
    out: dict[str, Any] = {}
    for key in tower_stats[0][1]:
        values = [(size, stats[key]) for size, stats in tower_stats]
        if all(_per_row(v, size) for size, v in values):
            out[key] = torch.cat([torch.as_tensor(v).to(device) for _, v in values])
        else:
            total: Any = 0.0
            for size, value in values:
                total = total + _scaled(value, size / rows, device)
            out[key] = total
    return out


def _per_row(value: Any, rows: int) -> bool:
    return isinstance(value, torch.Tensor) and value.dim() >= 1 and value.shape[0] == rows


def _scaled(value: Any, weight: float, device: torch.device) -> Any:
    if isinstance(value, torch.Tensor):
        return value.detach().to(device).float() * weight
    return float(value) * weight
