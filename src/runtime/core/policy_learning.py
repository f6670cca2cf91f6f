"""``PolicyLearning``: the learning side of a ``TorchPolicy`` (mixed into it): its learner (the
learner group's it is attached to, or one of its own for a policy used on its own),
``learn_on_batch``, the learned weights coming back to the acting copy, the global timestep,
and the policy's weights and state."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import numpy.typing as npt
import torch

from runtime.core.exploration import Exploration
from runtime.core.learner import DEFAULT_OPTIMIZER, Learner
from runtime.core.module import RLModule
from runtime.core.sample_batch import SampleBatch

if TYPE_CHECKING:
    from runtime.core.learner_group import LearnerGroup
    from runtime.core.policy import TorchPolicy

Array = npt.NDArray[Any]


class PolicyLearning:
    """The learner, learning, weights and state part of ``TorchPolicy``."""

    module: RLModule
    config: Any
    device: torch.device
    exploration: Exploration
    learner_class: type[Learner] | None
    global_timestep: int
    _learner: Learner | None
    #: The learner group (and this policy's id in it) that learns for this policy.
    _learner_group: tuple[LearnerGroup, str] | None
    #: The learner group's learner has learned since this copy last took its weights.
    _weights_stale: bool

    # ------------------------------------------------------------------ learner

    def attach_learner_group(self, group: LearnerGroup, policy_id: str) -> None:
        """Learn through ``group``'s learner of ``policy_id`` from now on."""
        self._learner_group = (group, policy_id)
        group.attach(policy_id, cast("TorchPolicy", self))

    @property
    def learner(self) -> Learner:
        """The learner of this policy: the learner group's, or one of its own (made on first
        use) for a policy outside an algorithm."""
        if self._learner_group is not None:
            group, policy_id = self._learner_group
            if not group.is_local:
                raise ValueError(
                    f"policy {policy_id!r} learns in remote learner workers; use "
                    "algo.learner_group for its learner state"
                )
            return group.learner(policy_id)
        if self._learner is None:
            if self.learner_class is None:
                raise ValueError("this policy has no learner_class: it only acts")
            self._learner = self.learner_class(self.module, self.config, self.device)
            self._learner.on_timestep(self.global_timestep)
        return self._learner

    @property
    def optimizer(self) -> torch.optim.Optimizer:
        return self.learner.optimizers[DEFAULT_OPTIMIZER]

    @property
    def cur_lr(self) -> float:
        return self.learner.cur_lr

    # ------------------------------------------------------------------ learning

    def learn_on_batch(self, batch: SampleBatch) -> dict[str, Any]:
        """Learn on one train batch (the learner's ``update``); returns the learner info, with
        the exploration's ``stats()`` (e.g. ``cur_epsilon``) among its ``learner_stats``."""
        if self._learner_group is not None:
            group, policy_id = self._learner_group
            info = group.update(policy_id, batch)
            # Taken when next needed (acting, weights, state, the weight sync): an off-policy
            # step learns many times between two samplings.
            self._weights_stale = True
        else:
            info = self.learner.update(batch)
        info.setdefault("learner_stats", {}).update(self.exploration.stats())
        return info

    def pull_weights(self) -> None:
        """Take the weights of the learner group's learner (attached policies whose learner is
        made)."""
        self._weights_stale = False
        if self._learner_group is None:
            return
        group, policy_id = self._learner_group
        if not group.has_learner(policy_id):
            return
        if group.is_local:
            group.copy_weights_into(policy_id, self.module)
        else:
            self.set_weights(group.get_weights([policy_id])[policy_id])

    def pull_weights_if_stale(self) -> None:
        if self._weights_stale:
            self.pull_weights()

    def on_global_var_update(self, global_vars: Mapping[str, Any]) -> None:
        """Receive the global timestep: exploration and (where learning) schedules follow it."""
        self.global_timestep = int(global_vars.get("timestep", self.global_timestep))
        self.exploration.on_timestep(self.global_timestep)
        if self._learner is not None:
            self._learner.on_timestep(self.global_timestep)

    # ------------------------------------------------------------------ state

    def get_weights(self) -> dict[str, Array]:
        self.pull_weights_if_stale()
        return {k: v.detach().cpu().numpy().copy() for k, v in self.module.state_dict().items()}

    def set_weights(self, weights: Mapping[str, Any]) -> None:
        self._weights_stale = False
        # A copy: arrays that arrive through Ray's object store are read-only.
        state = {k: torch.from_numpy(np.array(v)) for k, v in weights.items()}
        self.module.load_state_dict(state)

    def get_exploration_state(self) -> dict[str, Any]:
        """The exploration's state (e.g. ``cur_epsilon`` and the ``last_timestep`` it was
        computed at) and its stats, at the policy's global ``timestep``."""
        return {
            "timestep": self.global_timestep,
            **self.exploration.stats(),
            **self.exploration.get_state(),
        }

    def get_state(self) -> dict[str, Any]:
        """The policy's state: ``weights`` (numpy arrays, as ``get_weights()``), the global
        timestep, the exploration state and (once it has a learner) the learner state; all but
        the weights are JSON-able. ``set_state`` and ``Algorithm.add_policy(policy_state=...)``
        take it."""
        return {"weights": self.get_weights(), **self.get_json_state()}

    def get_json_state(self) -> dict[str, Any]:
        """``get_state()`` without the weights (what a checkpoint's JSON holds)."""
        state: dict[str, Any] = {
            "global_timestep": self.global_timestep,
            "exploration": self.exploration.get_state(),
        }
        if self._learner_group is not None:
            group, policy_id = self._learner_group
            learner_state = group.learner_state(policy_id)
            if learner_state is not None:
                state["learner"] = learner_state
        elif self._learner is not None:
            state["learner"] = self._learner.get_state()
        return state

    def set_state(self, state: Mapping[str, Any]) -> None:
        """Restore what ``get_state()`` (or ``get_json_state()``) returned."""
        if "weights" in state:
            self.set_weights(state["weights"])
        self.exploration.set_state(state.get("exploration", {}))
        if "learner" in state and self._learner_group is not None:
            group, policy_id = self._learner_group
            group.set_learner_state(policy_id, state["learner"])
        elif "learner" in state and self.learner_class is not None:
            self.learner.set_state(state["learner"])
        self.on_global_var_update({"timestep": int(state.get("global_timestep", 0))})
