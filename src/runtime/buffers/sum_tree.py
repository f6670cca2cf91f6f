"""``SumMinTree``: a binary sum tree and min tree over one float64 array of leaves each.

The trees are stored heap-style (node ``i`` has children ``2i`` and ``2i + 1``, leaf ``j`` is
node ``size + j``) with ``size`` the capacity rounded up to a power of two, so every leaf is at
the same depth and one walk serves a whole batch: updates and prefix-sum searches loop over the
levels with a few numpy calls per level for all indexes at once, instead of a Python loop per
index.

At the batch sizes of replay (32 rows) those calls' fixed cost is the whole cost of a level,
about what one numpy call over a thousand floats costs. So the trees stop at ``TOP_LEVEL``
(at most 1024 nodes): the sum, the minimum and the search over that level's nodes are one call
each (``np.sum``, ``np.min``, ``np.cumsum`` + ``np.searchsorted``), which takes the 10 upper
levels off every update and every search (17 levels for 100k leaves; 7 remain).

Nodes are always recomputed from their two children, never adjusted by a difference, so
repeated updates cannot let the sums drift from the leaves.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

#: The level (from the root) where the trees stop: 2**TOP_LEVEL nodes, handled by one numpy call.
TOP_LEVEL = 10


class SumMinTree:
    """Leaves ``0 .. capacity - 1`` with non-negative finite values: the sum and the minimum of
    all of them, and the leaf where a running sum crosses a given value. Unset leaves hold 0 in
    the sum and +inf in the min, so they are never drawn and never the minimum."""

    def __init__(self, capacity: int) -> None:
        if int(capacity) < 1:
            raise ValueError(f"SumMinTree: capacity must be >= 1, got {capacity!r}")
        self.capacity = int(capacity)
        self.depth = max(0, (self.capacity - 1).bit_length())
        self.size = 1 << self.depth
        self.top = min(self.depth, TOP_LEVEL)
        self._first = 1 << self.top  # the top level is nodes [_first, 2 * _first)
        self._sum: FloatArray = np.zeros(2 * self.size, dtype=np.float64)
        self._min: FloatArray = np.full(2 * self.size, np.inf, dtype=np.float64)

    @property
    def total(self) -> float:
        return float(self._sum[self._first : 2 * self._first].sum())

    @property
    def min(self) -> float:
        """The smallest leaf value set (+inf while none is)."""
        return float(self._min[self._first : 2 * self._first].min())

    def get(self, indexes: npt.ArrayLike) -> FloatArray:
        values: FloatArray = self._sum[np.asarray(indexes, dtype=np.int64) + self.size]
        return values

    def set(self, indexes: npt.ArrayLike, values: npt.ArrayLike) -> None:
        """Set leaves ``indexes`` to ``values`` (non-negative, finite). ``indexes`` must not
        repeat: numpy does not say which of two writes to one element wins."""
        nodes = np.asarray(indexes, dtype=np.int64).reshape(-1) + self.size
        leaf_values = np.asarray(values, dtype=np.float64)  # one value or one per index
        self._sum[nodes] = leaf_values
        self._min[nodes] = leaf_values
        if len(nodes) > self.size >> 6:
            self._rebuild()
            return
        for _ in range(self.depth - self.top):
            # Siblings share a parent; writing that parent twice writes the same value twice,
            # since the level below is already final.
            nodes >>= 1
            left = nodes << 1
            right = left + 1
            self._sum[nodes] = self._sum[left] + self._sum[right]
            self._min[nodes] = np.minimum(self._min[left], self._min[right])

    def _rebuild(self) -> None:
        """Every node from the leaves: for many leaves at once (adding a large batch, a
        restore), one pass per level over contiguous pairs beats walking each leaf's path."""
        for level in range(self.depth - 1, self.top - 1, -1):
            start, stop = 1 << level, 2 << level
            children_sum = self._sum[2 * start : 2 * stop].reshape(-1, 2)
            children_min = self._min[2 * start : 2 * stop].reshape(-1, 2)
            self._sum[start:stop] = children_sum[:, 0] + children_sum[:, 1]
            self._min[start:stop] = np.minimum(children_min[:, 0], children_min[:, 1])

    def find_prefix_sum(self, targets: npt.NDArray[Any], num_set: int | None = None) -> IntArray:
        """For each target ``t`` in ``[0, total)``: the leaf ``j`` with
        ``sum(leaves[:j]) <= t < sum(leaves[:j + 1])``, so leaves holding 0 are not returned.
        ``num_set``: leaves ``num_set ..`` are all 0 (a buffer not yet full); results are kept
        below it."""
        targets = np.asarray(targets, dtype=np.float64).reshape(-1)
        first = self._first
        level = self._sum[first : 2 * first]
        running = np.cumsum(level)
        found = np.searchsorted(running, targets, side="right")
        np.minimum(found, first - 1, out=found)
        remaining = targets - (running[found] - level[found])
        nodes = found + first
        for _ in range(self.depth - self.top):
            nodes <<= 1
            left = self._sum[nodes]
            go_right = remaining >= left
            # Subtract the left subtree's sum only where the walk steps right.
            remaining -= left * go_right
            nodes += go_right
        leaves: IntArray = nodes - self.size
        # A target within an ulp of a subtree's end can round past its last non-empty leaf
        # (the sums and differences above are not exact); near the end of a buffer that is
        # not yet full, the last leaf set is then the answer.
        limit = self.capacity if num_set is None else num_set
        return np.minimum(leaves, limit - 1, out=leaves)
