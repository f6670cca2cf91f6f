"""``SubEnvMemory``: what a policy with memory acts from in each sub-env - its state, and the
action and reward of the step before - carried from step to step and reset when an episode
starts. The sampler records each step's inputs as columns (``state_in_k``, ``prev_actions``,
``prev_rewards``), so a sequence is trained from the state it was acted from."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from runtime.core.policy import TorchPolicy
from runtime.core.sample_batch import SampleBatch as SB

Array = npt.NDArray[Any]


class SubEnvMemory:
    def __init__(self, policy: TorchPolicy, num_envs: int) -> None:
        self.initial = policy.get_initial_state()
        self.state = [np.repeat(s[None], num_envs, axis=0) for s in self.initial]
        space = policy.action_space
        self.uses_prev_actions = bool(getattr(policy.model, "uses_prev_actions", False))
        self.uses_prev_rewards = bool(getattr(policy.model, "uses_prev_rewards", False))
        self.prev_actions = np.zeros((num_envs, *(space.shape or ())), dtype=space.dtype)
        self.prev_rewards = np.zeros(num_envs, dtype=np.float32)

    @staticmethod
    def of(policy: TorchPolicy, num_envs: int) -> SubEnvMemory | None:
        """The memory of ``num_envs`` sub-envs for ``policy``; None for a model without one."""
        return SubEnvMemory(policy, num_envs) if policy.is_recurrent() else None

    def inputs(self, idx: Array | None) -> tuple[list[Array], Array | None, Array | None]:
        """``(state_batches, prev_action_batch, prev_reward_batch)`` of the sub-envs ``idx``
        (None: all); the previous inputs only where the model reads them."""
        rows: Any = slice(None) if idx is None else idx
        return (
            [s[rows] for s in self.state],
            self.prev_actions[rows] if self.uses_prev_actions else None,
            self.prev_rewards[rows] if self.uses_prev_rewards else None,
        )

    def columns(self, idx: Array | None) -> dict[str, Array]:
        """The inputs of the sub-envs ``idx`` as training columns (copies)."""
        rows: Any = slice(None) if idx is None else idx
        out = {SB.state_in(k): s[rows].copy() for k, s in enumerate(self.state)}
        if self.uses_prev_actions:
            out[SB.PREV_ACTIONS] = self.prev_actions[rows].copy()
        if self.uses_prev_rewards:
            out[SB.PREV_REWARDS] = self.prev_rewards[rows].copy()
        return out

    def advance(
        self, idx: Array | None, state_out: list[Array], actions: Array, rewards: Array
    ) -> None:
        """After a step of the sub-envs ``idx``: their new state, action and reward."""
        rows: Any = slice(None) if idx is None else idx
        for s, new in zip(self.state, state_out, strict=True):
            s[rows] = new
        self.prev_actions[rows] = actions
        self.prev_rewards[rows] = rewards

    def reset(self, index: int) -> None:
        """Sub-env ``index`` starts an episode: the initial state, no previous action/reward."""
        for s, initial in zip(self.state, self.initial, strict=True):
            s[index] = initial
        self.prev_actions[index] = 0
        self.prev_rewards[index] = 0.0

    def row(self, index: int) -> tuple[list[Array], Array, Array]:
        """Sub-env ``index``'s inputs now, as one-row batches (a bootstrap value's inputs)."""
        return (
            [s[index : index + 1].copy() for s in self.state],
            self.prev_actions[index : index + 1].copy(),
            self.prev_rewards[index : index + 1].copy(),
        )
