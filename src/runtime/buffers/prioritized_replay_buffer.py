"""``PrioritizedReplayBuffer``: proportional prioritized replay (Schaul et al., 2016) on the
storage of ``ReplayBuffer``.

Row ``i`` is drawn with probability ``P(i) = p_i**alpha / sum_k p_k**alpha``; its importance
weight ``w_i = (N * P(i))**-beta`` (``N``: rows stored) is divided by the largest weight any
stored row could get, ``(N * min_k P(k))**-beta``, so weights are at most 1 and only scale
updates down. ``N`` cancels out of the ratio: ``w_i = (p_i**alpha / min_k p_k**alpha)**-beta``.

New rows get the largest priority seen so far (1 at first), so that each is likely to be
replayed at least once before its TD error is known. ``update_priorities`` sets
``p_i = |td_error_i| + eps``; ``eps > 0`` keeps every row drawable.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from runtime.buffers.replay_buffer import STATE_ONLY_PREFIX, Array, ReplayBuffer
from runtime.buffers.sum_tree import SumMinTree
from runtime.core.sample_batch import SampleBatch

#: The key of the priorities in ``get_state()``'s arrays.
PRIORITIES_KEY = f"{STATE_ONLY_PREFIX}priorities__"


class PrioritizedReplayBuffer(ReplayBuffer):
    def __init__(
        self,
        capacity: int,
        alpha: float = 0.6,
        beta: float = 0.4,
        eps: float = 1e-6,
        seed: int | None = None,
    ) -> None:
        super().__init__(capacity, seed=seed)
        if not alpha >= 0.0:
            raise ValueError(f"PrioritizedReplayBuffer: alpha must be >= 0, got {alpha!r}")
        if not 0.0 <= beta <= 1.0:
            raise ValueError(f"PrioritizedReplayBuffer: beta must be in [0, 1], got {beta!r}")
        if not eps > 0.0:
            raise ValueError(f"PrioritizedReplayBuffer: eps must be > 0, got {eps!r}")
        self.alpha = float(alpha)
        self.beta = float(beta)
        self.eps = float(eps)
        self.max_priority = 1.0
        self._tree = SumMinTree(self.capacity)
        # The priorities themselves, beside the tree's p**alpha: a checkpoint keeps these, so
        # that it restores right under another alpha (p cannot be recovered at alpha = 0).
        self._priorities = np.zeros(self.capacity, dtype=np.float64)

    def add(self, batch: SampleBatch) -> None:
        slots = self._write(batch)
        if len(slots):
            self._priorities[slots] = self.max_priority
            self._tree.set(slots, self.max_priority**self.alpha)

    def sample(self, num_items: int) -> SampleBatch:
        """``num_items`` rows drawn with replacement, row ``i`` with probability
        ``p_i**alpha / sum_k p_k**alpha``; ``weights`` are the normalised importance weights
        and ``batch_indexes`` the slots to pass to ``update_priorities``."""
        if self._size == 0:
            raise ValueError("PrioritizedReplayBuffer.sample: the buffer is empty")
        tree = self._tree
        targets = self._rng.random(int(num_items)) * tree.total
        index = tree.find_prefix_sum(targets, num_set=self._size)
        # (p_i**alpha / min p**alpha) ** -beta, see the module docstring.
        weights = (tree.get(index) / tree.min) ** -self.beta
        return self._rows(index, weights.astype(np.float32))

    def update_priorities(self, batch_indexes: npt.ArrayLike, td_errors: npt.ArrayLike) -> None:
        """Set the priority of the rows at ``batch_indexes`` (a sampled batch's column) to
        ``|td_errors| + eps``. A row given twice keeps its last TD error."""
        index = np.asarray(batch_indexes, dtype=np.int64).reshape(-1)
        errors = np.asarray(td_errors, dtype=np.float64).reshape(-1)
        if index.shape != errors.shape:
            raise ValueError(
                f"update_priorities: {len(index)} batch indexes but {len(errors)} TD errors"
            )
        if len(index) == 0:
            return
        if not np.isfinite(errors).all():
            # One NaN would poison every sum above it and with it all later draws.
            raise ValueError("update_priorities: TD errors must be finite")
        if index.min() < 0 or index.max() >= self._size:
            raise ValueError(
                f"update_priorities: batch indexes must be in [0, {self._size}), got "
                f"[{index.min()}, {index.max()}]"
            )
        priorities = np.abs(errors) + self.eps
        # The tree needs each leaf once; keep each index's last occurrence.
        reversed_index = index[::-1]
        unique, first = np.unique(reversed_index, return_index=True)
        if len(unique) < len(index):
            index, priorities = unique, priorities[::-1][first]
        self._priorities[index] = priorities
        self._tree.set(index, priorities**self.alpha)
        self.max_priority = max(self.max_priority, float(priorities.max()))

    def priorities(self) -> Array:
        """The priorities ``p`` of the stored rows, oldest first."""
        return self._priorities[self._order()]

    def _order(self) -> npt.NDArray[np.int64]:
        order: npt.NDArray[np.int64] = (
            self._next - self._size + np.arange(self._size, dtype=np.int64)
        ) % self.capacity
        return order

    def get_state(self) -> tuple[dict[str, Any], dict[str, Array]]:
        """As ``ReplayBuffer``'s, plus the rows' priorities (under ``PRIORITIES_KEY``, oldest
        first) and ``max_priority``."""
        meta, arrays = super().get_state()
        meta["max_priority"] = self.max_priority
        arrays[PRIORITIES_KEY] = self.priorities()
        return meta, arrays

    def set_state(self, meta: dict[str, Any], arrays: dict[str, Array]) -> None:
        self._tree = SumMinTree(self.capacity)
        self._priorities[:] = 0.0
        self.max_priority = float(meta.get("max_priority", 1.0))
        super().set_state(meta, arrays)
        if not self._size:
            return
        slots = self._order()
        saved = arrays.get(PRIORITIES_KEY)
        # The saved priorities are oldest first, as the rows: the newest ones when the
        # capacity kept fewer rows. Without them (a uniform buffer's state) every row gets
        # max_priority, as a new row would.
        restored = (
            np.asarray(saved, dtype=np.float64)[-self._size :]
            if saved is not None
            else np.full(self._size, self.max_priority)
        )
        self._priorities[slots] = restored
        self._tree.set(slots, restored**self.alpha)
