"""``ReplayBuffer``: a uniform replay buffer of fixed capacity over numpy columns.

Storage is one preallocated array per column (made on the first ``add``, from that batch's
dtypes and shapes), written as a ring: no Python object per transition. Columns of Python
objects (``infos``) are not stored. Image observations (``obs`` and ``new_obs``, uint8
``H x W x C``) are held as frames instead, each distinct frame once (``frame_store``): stacked
Atari frames take about one frame per transition instead of eight.

Every sampled batch also has ``weights`` (the rows' importance weights, float32: all 1 here) and
``batch_indexes`` (the rows' slots, int64), so that a loss can always weight its rows and a
prioritized buffer (``PrioritizedReplayBuffer``, same storage) can be told the rows' new
priorities.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, overload

import numpy as np
import numpy.typing as npt

from runtime.buffers.frame_store import ROWS_KEY_PREFIX, FrameStore
from runtime.core.postprocessing import N_STEP_GAMMA
from runtime.core.sample_batch import SampleBatch

Array = npt.NDArray[Any]

WEIGHTS = "weights"
BATCH_INDEXES = "batch_indexes"
#: Columns that ``sample`` adds; a stored batch must not have them.
SAMPLED_COLUMNS = frozenset({WEIGHTS, BATCH_INDEXES})
#: The columns of a replayed batch that the built-in TD losses (DQN, SAC, DDPG and TD3) read:
#: their learners turn only these into tensors.
TD_LOSS_COLUMNS: tuple[str, ...] = (
    SampleBatch.OBS,
    SampleBatch.ACTIONS,
    SampleBatch.REWARDS,
    SampleBatch.TERMINATEDS,
    SampleBatch.NEXT_OBS,
    N_STEP_GAMMA,
    WEIGHTS,
)
#: ``get_state()`` arrays whose names start with this are a subclass's bookkeeping (the
#: priorities of ``PrioritizedReplayBuffer``), not columns; no column may be named so.
STATE_ONLY_PREFIX = "__"


class ReplayBuffer:
    def __init__(self, capacity: int, seed: int | None = None) -> None:
        if int(capacity) < 1:
            raise ValueError(f"ReplayBuffer: capacity must be >= 1, got {capacity!r}")
        self.capacity = int(capacity)
        self._columns: dict[str, Array] = {}
        self._frames: FrameStore | None = None
        self._next = 0
        self._size = 0
        self.num_added = 0
        self._rng = np.random.default_rng(seed)

    def __len__(self) -> int:
        return self._size

    def add(self, batch: SampleBatch) -> None:
        """Store every row of ``batch``; the oldest rows go once the buffer is full."""
        self._write(batch)

    def _write(self, batch: SampleBatch) -> npt.NDArray[np.int64]:
        """Store the rows of ``batch`` (the last ``capacity`` of them); returns their slots."""
        rows = len(batch)
        if rows == 0:
            return np.empty(0, dtype=np.int64)
        numeric = {k: v for k, v in batch.items() if v.dtype != object}
        reserved = sorted(
            k for k in numeric if k in SAMPLED_COLUMNS or k.startswith(STATE_ONLY_PREFIX)
        )
        if reserved:
            raise ValueError(
                f"ReplayBuffer.add: column names {reserved} are reserved ({sorted(SAMPLED_COLUMNS)}"
                f" are added by sample(), {STATE_ONLY_PREFIX!r}... names are state-only)"
            )
        if not self._column_names():
            self._allocate(numeric)
        elif set(numeric) != self._column_names():
            raise ValueError(
                f"ReplayBuffer.add: columns {sorted(numeric)} differ from the stored "
                f"{sorted(self._column_names())}"
            )
        if self._frames is not None:
            self._frames.check(numeric)  # before any row is written
        if rows > self.capacity:
            numeric = {k: v[-self.capacity :] for k, v in numeric.items()}
            rows = self.capacity
        slots, overwritten = self._claim(rows)
        for name, column in self._columns.items():
            column[slots] = numeric[name]
        if self._frames is not None:
            self._frames.write(slots, overwritten, numeric)
        self.num_added += len(batch)
        return slots

    def _column_names(self) -> set[str]:
        frames = self._frames.columns if self._frames is not None else ()
        return {*self._columns, *frames}

    def _allocate(self, columns: dict[str, Array]) -> None:
        """The storage of rows like those of ``columns``: frames for image observations, a
        preallocated array (untouched until written) for every other column."""
        self._frames = FrameStore.for_columns(self.capacity, columns)
        framed = self._frames.columns if self._frames is not None else ()
        self._columns = {
            k: np.empty((self.capacity, *v.shape[1:]), dtype=v.dtype)
            for k, v in columns.items()
            if k not in framed
        }

    def _claim(self, rows: int) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """The next ``rows`` (<= capacity) slots of the ring, and those of them that hold rows
        (the oldest, which go)."""
        empty = self.capacity - self._size
        slots = (self._next + np.arange(rows, dtype=np.int64)) % self.capacity
        self._next = int((self._next + rows) % self.capacity)
        self._size = min(self.capacity, self._size + rows)
        return slots, slots[empty:]

    def sample(self, num_items: int) -> SampleBatch:
        """``num_items`` rows drawn uniformly with replacement, with ``weights`` (ones) and
        ``batch_indexes``."""
        if self._size == 0:
            raise ValueError("ReplayBuffer.sample: the buffer is empty")
        index = self._rng.integers(0, self._size, size=int(num_items), dtype=np.int64)
        return self._rows(index, np.ones(len(index), dtype=np.float32))

    def _rows(self, index: npt.NDArray[np.int64], weights: npt.NDArray[np.float32]) -> SampleBatch:
        columns = self._columns_at(index)
        columns[WEIGHTS] = weights
        columns[BATCH_INDEXES] = index
        return SampleBatch(columns)

    def _columns_at(self, index: npt.NDArray[np.int64]) -> dict[str, Array]:
        """Every stored column at slots ``index``."""
        # For rows of more than one value (observations) take(axis=0) is several times faster
        # than fancy indexing at small batches; for scalar columns fancy indexing is.
        columns = {
            k: v[index] if v.ndim == 1 else v.take(index, axis=0) for k, v in self._columns.items()
        }
        if self._frames is not None:
            columns.update(self._frames.take(index))
        return columns

    @property
    def _storage(self) -> StoredRows:
        """The stored rows by slot, each a one-row SampleBatch: RLlib's ``_storage``, which its
        tests compare between a buffer and its restored copy."""
        return StoredRows(self._columns_at, self._size)

    def stored_bytes(self) -> int:
        """Bytes the stored rows hold: their columns and, for image observations, their frame
        slots and the distinct frames they use (not the slots no row holds yet)."""
        row = sum(v.itemsize * int(np.prod(v.shape[1:])) for v in self._columns.values())
        frames = self._frames.stored_bytes(self._size) if self._frames is not None else 0
        return self._size * row + frames

    def bytes_per_transition(self) -> float:
        """``stored_bytes()`` per stored row (0 when empty)."""
        return self.stored_bytes() / self._size if self._size else 0.0

    def get_state(self) -> tuple[dict[str, Any], dict[str, Array]]:
        """JSON-able bookkeeping and the stored rows as arrays (oldest first); image
        observations as their distinct frames and each row's frame numbers
        (``frame_store.FRAMES_KEY``, ``ROWS_KEY_PREFIX``)."""
        order = (self._next - self._size + np.arange(self._size)) % self.capacity
        arrays = {k: v[order] for k, v in self._columns.items()}
        if self._frames is not None:
            arrays.update(self._frames.state(order))
        meta = {
            "num_added": self.num_added,
            "rng": self._rng.bit_generator.state,
            "capacity": self.capacity,
            "next": self._next,
        }
        return meta, arrays

    def set_state(self, meta: dict[str, Any], arrays: dict[str, Array]) -> None:
        """Restore what ``get_state`` returned (a subclass's state-only arrays are skipped, so
        a prioritized buffer's state restores into a uniform buffer too). At the same capacity
        the rows go back into the slots they had, so that the restored generator draws the
        same rows as the saved buffer would have; at another, oldest first from slot 0 (the
        newest ``capacity`` rows when there are more)."""
        self._columns, self._frames = {}, None
        self._next = self._size = 0
        columns = {k: v for k, v in arrays.items() if not k.startswith(STATE_ONLY_PREFIX)}
        framed = FrameStore.in_state(arrays)
        frames = FrameStore.for_state(self.capacity, arrays) if framed else None
        saved_rows = [len(v) for v in columns.values()]
        if frames is not None:
            saved_rows += [len(arrays[ROWS_KEY_PREFIX + name]) for name in frames.columns]
        if len(set(saved_rows)) > 1:
            raise ValueError(f"ReplayBuffer.set_state: columns of different lengths {saved_rows}")
        rows = min(self.capacity, saved_rows[0]) if saved_rows else 0
        if meta.get("capacity") == self.capacity and "next" in meta:
            self._next = (int(meta["next"]) - rows) % self.capacity
        if frames is None:
            if columns:
                self._write(SampleBatch(columns))
        elif rows:
            self._restore_frames(rows, columns, frames, arrays)
        self.num_added = int(meta.get("num_added", self._size))
        if "rng" in meta:
            self._rng.bit_generator.state = dict(meta["rng"])

    def _restore_frames(
        self, rows: int, columns: dict[str, Array], frames: FrameStore, arrays: dict[str, Array]
    ) -> None:
        """The newest ``rows`` rows of a state whose image columns are frames: the frames go
        straight into the pool (no hashing; they are distinct already)."""
        both = sorted(set(columns) & set(frames.columns))
        if both:
            raise ValueError(f"ReplayBuffer.set_state: {both} are given as columns and as frames")
        self._columns = {
            k: np.empty((self.capacity, *v.shape[1:]), dtype=v.dtype) for k, v in columns.items()
        }
        self._frames = frames
        slots, _ = self._claim(rows)
        for name, column in self._columns.items():
            column[slots] = columns[name][len(columns[name]) - rows :]
        frames.load(slots, arrays)


class StoredRows(Sequence[SampleBatch]):
    """A buffer's rows by slot, read on demand (``ReplayBuffer._storage``)."""

    def __init__(
        self, columns_at: Callable[[npt.NDArray[np.int64]], dict[str, Array]], size: int
    ) -> None:
        self._columns_at = columns_at
        self._size = size

    def __len__(self) -> int:
        return self._size

    @overload
    def __getitem__(self, index: int) -> SampleBatch: ...

    @overload
    def __getitem__(self, index: slice) -> list[SampleBatch]: ...

    def __getitem__(self, index: int | slice) -> SampleBatch | list[SampleBatch]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self._size))]
        if not -self._size <= index < self._size:
            raise IndexError(f"row {index} of a buffer holding {self._size}")
        return SampleBatch(self._columns_at(np.array([index % self._size], dtype=np.int64)))
