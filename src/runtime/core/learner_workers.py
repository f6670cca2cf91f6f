"""Learners beyond one process: ``num_learner_workers`` Ray actors, each with a learner per
policy over a module of its own, trained data-parallel in one ``torch.distributed`` group
(gloo on CPU, NCCL on GPUs).

Every actor receives the whole train batch and runs the same update (the same shuffles, the
same epochs); each gradient step takes that actor's share of the minibatch and the gradients
and stats are all-reduced (``runtime.core.data_parallel``), so every actor takes the step one
learner would take on the whole minibatch and all stay identical. Weights and state are read
from the first actor.

An actor that dies breaks the process group: the group stops every actor and raises
``LearnerWorkerFailure``; restore the last checkpoint to go on.
"""

from __future__ import annotations

import contextlib
import datetime
import os
import socket
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import numpy.typing as npt
import torch

from runtime.core.data_parallel import DataParallel, ProcessGroup
from runtime.core.learner import Learner
from runtime.core.learner_group import LearnerGroup
from runtime.core.module_spec import ModuleSpec
from runtime.core.sample_batch import SampleBatch

if TYPE_CHECKING:
    from runtime.core.policy import TorchPolicy

Array = npt.NDArray[Any]
T = TypeVar("T")
#: How long a collective waits for the other learners before it fails.
GROUP_TIMEOUT = datetime.timedelta(seconds=120)


class LearnerWorkerFailure(RuntimeError):
    """A learner actor died (or failed): the data-parallel group can't go on."""


class LearnerWorker:
    """One learner process (a Ray actor): rank ``rank`` of ``size``."""

    def __init__(self, rank: int, size: int, device: str, threads: int) -> None:
        self.rank, self.size = rank, size
        self.device = torch.device(device)
        torch.set_num_threads(max(1, threads))
        self.learners: dict[str, Learner] = {}

    def address(self) -> tuple[str, str, int]:
        """This actor's node id, node address and a free port (for the first actor)."""
        import ray

        with socket.socket() as sock:
            sock.bind(("", 0))
            port = int(sock.getsockname()[1])
        address: str = ray.util.get_node_ip_address()  # type: ignore[no-untyped-call]
        return ray.get_runtime_context().get_node_id(), address, port

    def join(self, host: str, port: int, backend: str) -> None:
        import torch.distributed as dist

        if host == "127.0.0.1":
            # All learners on one node: gloo talks over loopback, whatever the hostname
            # resolves to.
            os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
        dist.init_process_group(
            backend,
            init_method=f"tcp://{host}:{port}",
            rank=self.rank,
            world_size=self.size,
            timeout=GROUP_TIMEOUT,
        )

    def add_learner(
        self, policy_id: str, spec: ModuleSpec, weights: Mapping[str, Any], timestep: int
    ) -> None:
        learner = spec.build_learner(self.device)
        learner.module.load_state_dict(
            {k: torch.as_tensor(np.array(v)) for k, v in weights.items()}
        )
        learner.parallel = DataParallel(learner, [self.device], ProcessGroup(self.rank, self.size))
        learner.on_timestep(timestep)
        self.learners[policy_id] = learner

    def update(self, policy_id: str, batch: SampleBatch) -> dict[str, Any]:
        return self.learners[policy_id].update(batch)

    def on_timestep(self, timestep: int) -> None:
        for learner in self.learners.values():
            learner.on_timestep(timestep)

    def remove_learner(self, policy_id: str) -> None:
        self.learners.pop(policy_id, None)

    def apply(self, func: Callable[[LearnerWorker], T]) -> T:
        return func(self)

    def stop(self) -> None:
        import torch.distributed as dist

        if dist.is_initialized():
            dist.destroy_process_group()


class RemoteLearnerGroup(LearnerGroup):
    """The learner group of ``num_learner_workers`` actors: the ``LearnerGroup`` interface,
    with the learners in the actors (``learner(pid)`` is not available here)."""

    def __init__(
        self,
        *,
        num_workers: int,
        device: str,
        num_cpus: float,
        num_gpus: float,
        actor_options: Callable[[int], dict[str, Any]],
    ) -> None:
        import ray

        super().__init__([device] * num_workers)
        self._made: set[str] = set()
        remote_class: Any = ray.remote(LearnerWorker)
        self._actors: list[Any] = [
            remote_class.options(
                num_cpus=num_cpus, num_gpus=num_gpus, max_restarts=0, **actor_options(rank + 1)
            ).remote(rank, num_workers, device, max(1, int(num_cpus)))
            for rank in range(num_workers)
        ]
        addresses = self._call_all(lambda w: w.address())
        same_node = len({node for node, _, _ in addresses}) == 1
        host = "127.0.0.1" if same_node else addresses[0][1]
        backend = "nccl" if device.startswith("cuda") else "gloo"
        port = addresses[0][2]
        self._get([a.join.remote(host, port, backend) for a in self._actors])

    # ------------------------------------------------------------------ calls

    def _get(self, refs: list[Any]) -> list[Any]:
        """The results of ``refs`` (one per actor); a dead or failing actor stops them all and
        raises ``LearnerWorkerFailure`` (the others would wait for it in a collective)."""
        import ray

        pending = list(refs)
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            try:
                ray.get(done[0])
            except (ray.exceptions.RayActorError, ray.exceptions.RayTaskError) as error:
                index = refs.index(done[0])
                self.stop()
                raise LearnerWorkerFailure(
                    f"learner worker {index} of {len(refs)} failed: {error}; the learner group "
                    "is stopped (restore the last checkpoint to go on)"
                ) from error
        return list(ray.get(refs))

    def _call_all(self, func: Callable[[LearnerWorker], T]) -> list[T]:
        return self._get([a.apply.remote(func) for a in self._actors])

    def _call_first(self, func: Callable[[LearnerWorker], T]) -> T:
        result: T = self._get([self._actors[0].apply.remote(func)])[0]
        return result

    # ------------------------------------------------------------------ learners

    @property
    def is_local(self) -> bool:
        return False

    def attach(self, policy_id: str, policy: TorchPolicy) -> None:
        self._sources[policy_id] = policy

    def learner(self, policy_id: str) -> Learner:
        raise ValueError(
            f"the learner of policy {policy_id!r} lives in {len(self._actors)} learner worker "
            "actors: use the learner group's get_weights/learner_state instead"
        )

    def ensure(self, policy_id: str) -> None:
        if policy_id in self._made:
            return
        source = self._sources.get(policy_id)
        if source is None:
            raise KeyError(f"the learner group has no policy {policy_id!r} to make a learner for")
        spec, weights, timestep = source.module_spec(), source.get_weights(), self.timestep
        self._get([a.add_learner.remote(policy_id, spec, weights, timestep) for a in self._actors])
        self._made.add(policy_id)

    def has_learner(self, policy_id: str) -> bool:
        return policy_id in self._made

    def policy_ids(self) -> list[str]:
        return sorted(self._made)

    def remove_policy(self, policy_id: str) -> None:
        if policy_id in self._made:
            self._get([a.remove_learner.remote(policy_id) for a in self._actors])
        self._made.discard(policy_id)
        self._sources.pop(policy_id, None)

    # ------------------------------------------------------------------ learning

    def update(self, policy_id: str, batch: SampleBatch) -> dict[str, Any]:
        import ray

        self.ensure(policy_id)
        ref = ray.put(batch)  # once, not once per actor
        infos = self._get([a.update.remote(policy_id, ref) for a in self._actors])
        return dict(infos[0])

    def on_timestep(self, timestep: int) -> None:
        self.timestep = int(timestep)
        if self._made:
            value = self.timestep
            self._call_all(lambda w: w.on_timestep(value))

    def update_target_networks(self, policy_ids: Iterable[str], tau: float) -> None:
        ids = list(policy_ids)
        for pid in ids:
            self.ensure(pid)

        def update(worker: LearnerWorker) -> None:
            for pid in ids:
                worker.learners[pid].update_target_networks(tau)

        self._call_all(update)

    # ------------------------------------------------------------------ weights and state

    def get_weights(self, policy_ids: Iterable[str] | None = None) -> dict[str, dict[str, Array]]:
        wanted = self.policy_ids() if policy_ids is None else policy_ids
        ids = [p for p in wanted if p in self._made]
        return self._call_first(
            lambda w: {
                p: {
                    k: v.detach().cpu().numpy()
                    for k, v in w.learners[p].module.state_dict().items()
                }
                for p in ids
            }
        )

    def set_weights(self, weights: Mapping[str, Mapping[str, Any]]) -> None:
        known = {p: dict(v) for p, v in weights.items() if p in self._made}
        if not known:
            return

        def load(worker: LearnerWorker) -> None:
            for pid, values in known.items():
                state = {k: torch.as_tensor(np.array(v)) for k, v in values.items()}
                worker.learners[pid].module.load_state_dict(state)

        self._call_all(load)

    def copy_weights_into(self, policy_id: str, module: torch.nn.Module) -> None:
        weights = self.get_weights([policy_id])[policy_id]
        module.load_state_dict({k: torch.as_tensor(np.array(v)) for k, v in weights.items()})

    def learner_state(self, policy_id: str) -> dict[str, Any] | None:
        if policy_id not in self._made:
            return None
        return self._call_first(lambda w: w.learners[policy_id].get_state())

    def set_learner_state(self, policy_id: str, state: Mapping[str, Any]) -> None:
        self.ensure(policy_id)
        saved = dict(state)
        self._call_all(lambda w: w.learners[policy_id].set_state(saved))

    def tensor_state(self, policy_id: str) -> dict[str, dict[str, Any]]:
        self.ensure(policy_id)
        return self._call_first(
            lambda w: {
                name: {k: _to_cpu(v) for k, v in values.items()}
                for name, values in w.learners[policy_id].get_tensor_state().items()
            }
        )

    def set_tensor_state(self, policy_id: str, tensors: Mapping[str, Mapping[str, Any]]) -> None:
        self.ensure(policy_id)
        saved = {name: dict(values) for name, values in tensors.items()}
        self._call_all(lambda w: w.learners[policy_id].set_tensor_state(saved))

    def tensor_state_names(self, policy_id: str) -> list[str]:
        return list(self.tensor_state(policy_id))

    def stop(self) -> None:
        import ray

        for actor in self._actors:
            with contextlib.suppress(Exception):
                ray.kill(actor, no_restart=True)
        self._actors = []


def _to_cpu(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.detach().cpu()
    if isinstance(value, Mapping):
        return {k: _to_cpu(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_to_cpu(v) for v in value]
    return value
