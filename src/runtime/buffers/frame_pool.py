"""``FramePool``: distinct image frames (one ``H x W`` uint8 plane each) held once, with a
reference count per frame, for the frame columns of a replay buffer (``frame_store``).

Storage grows in chunks as frames arrive (no allocation for the capacity up front): each new
chunk holds as many frames as all the chunks before it, from ``MIN_CHUNK_BYTES`` up to
``MAX_CHUNK_BYTES``, so a large pool is a few dozen arrays at most and a gather is one ``take``
per chunk it touches. A frame whose last reference goes is freed and its slot reused.

``store`` shares a frame with an equal one held already: frames are hashed (a multilinear
hash of their 32-bit words with random 64-bit multipliers: two different frames collide with
probability at most 2**-32), equal hashes are candidates only, and a frame is shared only
after its bytes compare equal, so what comes back out is always exactly what went in. The
candidates are the frames of the same batch and the most recently stored ones (a bounded table
from hash to slot): stacked frames repeat within a few steps of one sub-env, so that is where
they are found.
"""

from __future__ import annotations

from itertools import islice
from typing import Any

import numpy as np
import numpy.typing as npt

Array = npt.NDArray[Any]
Slots = npt.NDArray[np.int64]

#: The size of the first chunk; each next one doubles the pool up to ``MAX_CHUNK_BYTES``.
MIN_CHUNK_BYTES = 4 << 20
MAX_CHUNK_BYTES = 1 << 30
#: How many recently stored frames new frames are looked up among (hash -> slot).
RECENT_FRAMES = 1 << 16
#: Frames hashed at once: bounds the 64-bit temporaries of the hash.
HASH_BLOCK = 512
_HASH_SEED = 0x5EED_F4A3


class FramePool:
    def __init__(self, frame_bytes: int) -> None:
        if int(frame_bytes) < 1:
            raise ValueError(f"FramePool: frame_bytes must be >= 1, got {frame_bytes!r}")
        self.frame_bytes = int(frame_bytes)
        self._words = -(-self.frame_bytes // 4)
        self._multipliers = np.random.default_rng(_HASH_SEED).integers(
            0, 2**64, size=self._words, dtype=np.uint64, endpoint=False
        )
        self._chunks: list[Array] = []
        self._starts = np.zeros(1, dtype=np.int64)  # chunk k holds slots [starts[k], starts[k+1])
        self._refcounts = np.zeros(0, dtype=np.int64)
        self._free = np.zeros(0, dtype=np.int64)  # a stack of free slots, the lowest on top
        self._num_free = 0
        self._recent: dict[int, int] = {}
        self.live_frames = 0

    @property
    def slots(self) -> int:
        """Slots allocated (live frames plus free slots)."""
        return int(self._starts[-1])

    @property
    def live_bytes(self) -> int:
        return self.live_frames * self.frame_bytes

    # ------------------------------------------------------------------ storing and freeing

    def store(self, frames: Array) -> Slots:
        """The slot of each of ``frames`` (``(n, frame_bytes)`` uint8), each reference counted
        once: a frame equal to one held already (in this batch or stored recently) gets that
        one's slot, any other a new slot."""
        frames = np.ascontiguousarray(frames, dtype=np.uint8).reshape(-1, self.frame_bytes)
        count = len(frames)
        if count == 0:
            return np.empty(0, dtype=np.int64)
        hashes = self.hashes(frames)
        # Within the batch: each frame's first frame of equal hash, if their bytes are equal.
        _, first, inverse = np.unique(hashes, return_index=True, return_inverse=True)
        owner = first[inverse]
        repeated = np.flatnonzero(owner != np.arange(count))
        if len(repeated):
            equal = (frames[repeated] == frames[owner[repeated]]).all(axis=1)
            owner[repeated[~equal]] = repeated[~equal]  # a hash collision: a frame of its own
        distinct = np.flatnonzero(owner == np.arange(count))
        slot_of_distinct = self._find(frames[distinct], hashes[distinct])
        new = np.flatnonzero(slot_of_distinct < 0)
        if len(new):
            slot_of_distinct[new] = self._add(frames[distinct[new]], hashes[distinct[new]])
        position = np.empty(count, dtype=np.int64)
        position[distinct] = np.arange(len(distinct))
        slots: Slots = slot_of_distinct[position[owner]]
        unique, times = np.unique(slots, return_counts=True)
        self.live_frames += int(np.count_nonzero(self._refcounts[unique] == 0))
        self._refcounts[unique] += times
        return slots

    def release(self, slots: npt.ArrayLike) -> None:
        """Drop one reference per slot given (a slot given twice: two); frames left without
        references are freed."""
        unique, times = np.unique(np.asarray(slots, dtype=np.int64).ravel(), return_counts=True)
        if len(unique) == 0:
            return
        left = self._refcounts[unique] - times
        if left.min() < 0:
            raise ValueError("FramePool.release: a slot released more often than it was stored")
        self._refcounts[unique] = left
        freed = unique[left == 0]
        self.live_frames -= len(freed)
        self._push_free(freed[::-1])

    def load(self, frames: Array, which: Slots, references: npt.ArrayLike) -> Slots:
        """Put ``frames[which]`` (distinct frames of a saved state, ``(n, ...)`` of
        ``frame_bytes`` each) in new slots holding ``references`` references each (> 0);
        their slots, in order. Copied a block at a time: no second copy of them all."""
        counts = np.asarray(references, dtype=np.int64).reshape(-1)
        if len(counts) != len(which) or (len(counts) and counts.min() < 1):
            raise ValueError(
                f"FramePool.load: {len(which)} frames need as many reference counts >= 1, "
                f"got {len(counts)}"
            )
        slots = self._allocate(len(which))
        for start in range(0, len(which), HASH_BLOCK):
            block = np.asarray(frames[which[start : start + HASH_BLOCK]], dtype=np.uint8)
            self._put(slots[start : start + HASH_BLOCK], block.reshape(-1, self.frame_bytes))
        self._refcounts[slots] = counts
        self.live_frames += len(slots)
        return slots

    def remember(self, slots: npt.ArrayLike) -> None:
        """Make the frames at ``slots`` candidates for sharing (restored frames that the next
        stored ones may repeat)."""
        index = np.asarray(slots, dtype=np.int64).ravel()[-RECENT_FRAMES:]
        if len(index):
            self._note(self.hashes(self.gather(index)), index)

    # ------------------------------------------------------------------ reading

    def gather(self, slots: npt.ArrayLike) -> Array:
        """The frames at ``slots``, ``(n, frame_bytes)`` uint8."""
        index = np.asarray(slots, dtype=np.int64).ravel()
        if len(self._chunks) == 1:
            return self._chunks[0].take(index, axis=0)
        out = np.empty((len(index), self.frame_bytes), dtype=np.uint8)
        chunk_of = np.searchsorted(self._starts, index, side="right") - 1
        for chunk in np.unique(chunk_of).tolist():
            rows = np.flatnonzero(chunk_of == chunk)
            out[rows] = self._chunks[chunk].take(index[rows] - self._starts[chunk], axis=0)
        return out

    def hashes(self, frames: Array) -> npt.NDArray[np.uint64]:
        """A 64-bit hash of each frame (``(n, frame_bytes)`` uint8, C-contiguous)."""
        count = len(frames)
        if self.frame_bytes % 4:
            padded = np.zeros((count, self._words * 4), dtype=np.uint8)
            padded[:, : self.frame_bytes] = frames
            frames = padded
        words = np.ascontiguousarray(frames).view(np.uint32).reshape(count, self._words)
        out = np.empty(count, dtype=np.uint64)
        for start in range(0, count, HASH_BLOCK):
            block = words[start : start + HASH_BLOCK].astype(np.uint64)
            block *= self._multipliers  # wraps modulo 2**64, as the hash wants
            out[start : start + HASH_BLOCK] = block.sum(axis=1, dtype=np.uint64)
        return out

    # ------------------------------------------------------------------ internals

    def _find(self, frames: Array, hashes: npt.NDArray[np.uint64]) -> Slots:
        """The live slot holding each frame among the recent ones, -1 where none does."""
        found = np.fromiter(
            (self._recent.get(h, -1) for h in hashes.tolist()), dtype=np.int64, count=len(hashes)
        )
        candidates = np.flatnonzero(found >= 0)
        if len(candidates):
            slots = found[candidates]
            held = self._refcounts[slots] > 0
            held[held] = (self.gather(slots[held]) == frames[candidates[held]]).all(axis=1)
            found[candidates[~held]] = -1
        return found

    def _add(self, frames: Array, hashes: npt.NDArray[np.uint64]) -> Slots:
        slots = self._allocate(len(frames))
        self._put(slots, frames)
        self._note(hashes, slots)
        return slots

    def _note(self, hashes: npt.NDArray[np.uint64], slots: Slots) -> None:
        recent = self._recent
        for h, slot in zip(hashes.tolist(), slots.tolist(), strict=True):
            recent.pop(h, None)  # re-inserted: the newest entry
            recent[h] = slot
        excess = len(recent) - RECENT_FRAMES
        if excess > 0:
            for h in list(islice(recent, excess)):
                del recent[h]

    def _put(self, slots: Slots, frames: Array) -> None:
        chunk_of = np.searchsorted(self._starts, slots, side="right") - 1
        for chunk in np.unique(chunk_of).tolist():
            rows = np.flatnonzero(chunk_of == chunk)
            self._chunks[chunk][slots[rows] - self._starts[chunk]] = frames[rows]

    def _allocate(self, count: int) -> Slots:
        while self._num_free < count:
            self._grow()
        top = self._num_free
        self._num_free -= count
        slots: Slots = self._free[top - count : top][::-1].copy()
        return slots

    def _grow(self) -> None:
        min_frames = max(1, MIN_CHUNK_BYTES // self.frame_bytes)
        max_frames = max(1, MAX_CHUNK_BYTES // self.frame_bytes)
        size = min(max(self.slots, min_frames), max_frames)
        start = self.slots
        # np.empty: pages are taken from the system only as frames are written into them.
        self._chunks.append(np.empty((size, self.frame_bytes), dtype=np.uint8))
        self._starts = np.append(self._starts, start + size)
        self._refcounts = np.concatenate([self._refcounts, np.zeros(size, dtype=np.int64)])
        self._push_free(np.arange(start + size - 1, start - 1, -1, dtype=np.int64))

    def _push_free(self, slots: Slots) -> None:
        """Push ``slots`` (the last one given is handed out first)."""
        needed = self._num_free + len(slots)
        if needed > len(self._free):
            grown = np.empty(max(needed, 2 * len(self._free)), dtype=np.int64)
            grown[: self._num_free] = self._free[: self._num_free]
            self._free = grown
        self._free[self._num_free : needed] = slots
        self._num_free = needed
