"""``LearnerGroup``: the learners of an algorithm, owned by the algorithm and not by any rollout
worker. Each policy to train gets a learner over a module of its own, built from the policy's
``ModuleSpec`` on the learner's device and started from the acting copy's weights; rollout and
evaluation workers only act, and receive weights.

Where the learning runs (``devices``):

- one local learner: ``["cpu"]``, or ``["cuda:0"]`` with ``num_gpus`` up to 1 (a fraction
  shares the GPU);
- towers in this process: ``num_gpus=k > 1`` GPUs, or ``k`` CPU towers with ``_fake_gpus``;
  every gradient step's minibatch is split over them (``runtime.core.data_parallel``);
- learner actors (``num_learner_workers``): ``runtime.core.learner_workers``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
import torch

from runtime.core import torch_private
from runtime.core.data_parallel import DataParallel
from runtime.core.learner import Learner
from runtime.core.sample_batch import SampleBatch

if TYPE_CHECKING:
    from runtime.core.policy import TorchPolicy

Array = npt.NDArray[Any]


class LearnerGroup:
    """The local learners of the policies to train, each on ``devices[0]`` with towers on the
    rest."""

    def __init__(self, devices: Sequence[str]) -> None:
        self.devices: list[str] = [str(d) for d in devices]
        self._learners: dict[str, Learner] = {}
        #: policy id -> (learner module, acting module, acting tensors, learner tensors).
        self._copy_pairs: dict[
            str, tuple[torch.nn.Module, torch.nn.Module, list[torch.Tensor], list[torch.Tensor]]
        ] = {}
        #: The acting copy of each policy (the driver's), which a new learner is made from.
        self._sources: dict[str, TorchPolicy] = {}
        self.timestep = 0

    def attach(self, policy_id: str, policy: TorchPolicy) -> None:
        """``policy`` (the driver's acting copy) learns here from now on."""
        self._sources[policy_id] = policy

    # ------------------------------------------------------------------ learners

    @property
    def is_local(self) -> bool:
        """True: the learners are objects in this process (``learner(pid)`` returns them)."""
        return True

    def learner(self, policy_id: str) -> Learner:
        """The learner of ``policy_id`` (made on first use)."""
        learner = self._learners.get(policy_id)
        if learner is None:
            learner = self._make(policy_id)
            self._learners[policy_id] = learner
        return learner

    def _make(self, policy_id: str) -> Learner:
        source = self._sources.get(policy_id)
        if source is None:
            raise KeyError(f"the learner group has no policy {policy_id!r} to make a learner for")
        learner = source.module_spec().build_learner(self.devices[0])
        learner.module.load_state_dict(source.module.state_dict())
        if len(self.devices) > 1:
            learner.parallel = DataParallel(learner, self.devices)
        learner.on_timestep(self.timestep)
        return learner

    def ensure(self, policy_id: str) -> None:
        """Make the learner of ``policy_id`` if it is not made yet."""
        self.learner(policy_id)

    def has_learner(self, policy_id: str) -> bool:
        return policy_id in self._learners

    def policy_ids(self) -> list[str]:
        return list(self._learners)

    def remove_policy(self, policy_id: str) -> None:
        self._learners.pop(policy_id, None)
        self._sources.pop(policy_id, None)

    # ------------------------------------------------------------------ learning

    def update(self, policy_id: str, batch: SampleBatch) -> dict[str, Any]:
        """One learner update of ``policy_id`` on ``batch``; returns its learner info."""
        return self.learner(policy_id).update(batch)

    def on_timestep(self, timestep: int) -> None:
        """Move every learner's schedules to the global ``timestep``."""
        self.timestep = int(timestep)
        for learner in self._learners.values():
            learner.on_timestep(self.timestep)

    def update_target_networks(self, policy_ids: Iterable[str], tau: float) -> None:
        for policy_id in policy_ids:
            self.learner(policy_id).update_target_networks(tau)

    # ------------------------------------------------------------------ weights

    def get_weights(self, policy_ids: Iterable[str] | None = None) -> dict[str, dict[str, Array]]:
        """The learners' module weights as numpy arrays, by policy id."""
        ids = self.policy_ids() if policy_ids is None else list(policy_ids)
        return {
            pid: {
                k: v.detach().cpu().numpy().copy()
                for k, v in self.learner(pid).module.state_dict().items()
            }
            for pid in ids
            if pid in self._learners
        }

    def set_weights(self, weights: Mapping[str, Mapping[str, Any]]) -> None:
        for pid, values in weights.items():
            if pid in self._learners:
                state = {k: torch.as_tensor(np.array(v)) for k, v in values.items()}
                self._learners[pid].module.load_state_dict(state)

    @torch.no_grad()
    def copy_weights_into(self, policy_id: str, module: torch.nn.Module) -> None:
        """Copy the learner's weights of ``policy_id`` into ``module`` (an acting copy in this
        process), tensor to tensor: no numpy round trip."""
        source = self._learners[policy_id].module
        cached = self._copy_pairs.get(policy_id)
        if cached is None or cached[0] is not source or cached[1] is not module:
            # Listed once per pair of modules: SAC copies after every update, one per env
            # step, and building two state dicts each time cost more than the copy.
            sources, targets = dict(_tensors_of(source)), _tensors_of(module)
            cached = (source, module, [t for _, t in targets], [sources[n] for n, _ in targets])
            self._copy_pairs[policy_id] = cached
        torch_private.foreach_copy_(cached[2], cached[3])

    # ------------------------------------------------------------------ state

    def learner_state(self, policy_id: str) -> dict[str, Any] | None:
        """The JSON state of ``policy_id``'s learner (None before it is made)."""
        learner = self._learners.get(policy_id)
        return None if learner is None else learner.get_state()

    def set_learner_state(self, policy_id: str, state: Mapping[str, Any]) -> None:
        self.learner(policy_id).set_state(state)

    def tensor_state(self, policy_id: str) -> dict[str, dict[str, Any]]:
        """The learner's optimizer and target-network state dicts, by name."""
        return self.learner(policy_id).get_tensor_state()

    def set_tensor_state(self, policy_id: str, tensors: Mapping[str, Mapping[str, Any]]) -> None:
        self.learner(policy_id).set_tensor_state(tensors)

    def tensor_state_names(self, policy_id: str) -> list[str]:
        return list(self.learner(policy_id).get_tensor_state())

    def stop(self) -> None:
        self._learners.clear()
        self._sources.clear()


def _tensors_of(module: torch.nn.Module) -> list[tuple[str, torch.Tensor]]:
    """The module's parameters and buffers by name (its ``state_dict`` entries, undetached)."""
    return [*module.named_parameters(), *module.named_buffers()]
