"""``FrameStore``: a replay buffer's image observations (``obs`` and ``new_obs``, uint8
``H x W x C``) held as frames, each distinct ``H x W`` channel once.

Stacked Atari observations (the DeepMind wrappers' 4 frames on the channel axis) repeat each
frame up to 8 times: in the next 3 rows' ``obs`` at shifted channels and in 4 rows'
``new_obs``. Storing the columns as they come holds each frame 8 times (2 x 28,224 bytes per
84x84x4 transition); here a row keeps the ``C`` frame slots of each column (int32) and the
frames go to a ``FramePool``, which shares equal frames (compared byte for byte, so a row
always reads back exactly as it was added) and frees them with the last row using them: about
one frame per transition for stacked frames. Observations whose frames do not repeat (plain RGB
images) take their 2C frames and 4 bytes of slot each.

Sampling gathers every frame of the sampled rows of both columns with one ``take`` per pool
chunk and lays them out ``(B, H, W, C)`` again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from runtime.buffers.frame_pool import FramePool
from runtime.core.sample_batch import SampleBatch

Array = npt.NDArray[Any]

#: The columns held as frames, when they are uint8 images.
FRAME_COLUMNS: tuple[str, ...] = (SampleBatch.OBS, SampleBatch.NEXT_OBS)
#: Smaller frames are left in plain columns: a frame's 4-byte slot would cost more than a
#: sixteenth of it.
MIN_FRAME_BYTES = 64
#: ``get_state()`` keys: the distinct frames ``(n, H, W)``, and per column the rows' frame
#: numbers into them ``(rows, C)`` under ``ROWS_KEY_PREFIX + column``.
FRAMES_KEY = "__frames__"
ROWS_KEY_PREFIX = "__frame_rows__"
#: Rows turned into frames at once on ``write``: bounds its temporaries.
WRITE_BLOCK_ROWS = 256


def is_frame_column(name: str, values: Array) -> bool:
    """Whether ``values`` (a column's rows) are images a ``FrameStore`` holds."""
    return (
        name in FRAME_COLUMNS
        and values.dtype == np.uint8
        and values.ndim == 4
        and values.shape[1] * values.shape[2] >= MIN_FRAME_BYTES
    )


class FrameStore:
    """The frame columns of the rows of a buffer of ``capacity`` slots: every column has rows
    of ``shape`` (``H, W, C``)."""

    def __init__(self, capacity: int, columns: Sequence[str], shape: tuple[int, int, int]) -> None:
        if not columns:
            raise ValueError("FrameStore: no columns")
        self.columns = tuple(columns)
        self.shape = (int(shape[0]), int(shape[1]), int(shape[2]))
        height, width, channels = self.shape
        self.pool = FramePool(height * width)
        width_of_row = len(self.columns) * channels
        slot_type = np.int32 if capacity * width_of_row < 2**31 else np.int64
        # Written row by row as rows come; never read where no row was written.
        self._slots = np.empty((capacity, width_of_row), dtype=slot_type)

    @classmethod
    def for_columns(cls, capacity: int, columns: Mapping[str, Array]) -> FrameStore | None:
        """The store of the frame columns among ``columns`` (the first batch a buffer gets);
        None when there are none. Columns whose image shape differs from the first one's stay
        plain."""
        images = [name for name in FRAME_COLUMNS if name in columns]
        images = [name for name in images if is_frame_column(name, columns[name])]
        if not images:
            return None
        shape = columns[images[0]].shape[1:]
        same = [name for name in images if columns[name].shape[1:] == shape]
        return cls(capacity, same, (shape[0], shape[1], shape[2]))

    def check(self, columns: Mapping[str, Array]) -> None:
        """Raise unless the frame columns of ``columns`` have rows of the stored shape."""
        for name in self.columns:
            shape = columns[name].shape[1:]
            if shape != self.shape:
                raise ValueError(
                    f"ReplayBuffer.add: column {name!r} has rows of shape {shape}, the stored "
                    f"rows {self.shape}"
                )

    def write(
        self, slots: npt.NDArray[np.int64], overwritten: Array, columns: Mapping[str, Array]
    ) -> None:
        """Store the rows of ``columns`` (one per slot of ``slots``; checked by ``check``);
        ``overwritten``: the slots among them that held rows, whose frames are released
        first."""
        if len(overwritten):
            self.pool.release(self._slots[overwritten])
        height, width, channels = self.shape
        for start in range(0, len(slots), WRITE_BLOCK_ROWS):
            stop = min(start + WRITE_BLOCK_ROWS, len(slots))
            # (rows, H, W, C) -> (rows, column, C, H, W): one contiguous frame per channel.
            frames = np.empty(
                (stop - start, len(self.columns), channels, height, width), dtype=np.uint8
            )
            for k, name in enumerate(self.columns):
                values = columns[name][start:stop]
                for channel in range(channels):  # as in take(): one frame at a time
                    frames[:, k, channel] = values[..., channel]
            stored = self.pool.store(frames.reshape(-1, self.pool.frame_bytes))
            self._slots[slots[start:stop]] = stored.reshape(stop - start, -1)

    def take(self, index: npt.NDArray[np.int64]) -> dict[str, Array]:
        """The rows at slots ``index`` of every column, ``(len(index), H, W, C)`` uint8."""
        height, width, channels = self.shape
        rows = len(index)
        frames = self.pool.gather(self._slots[index].ravel())
        frames = frames.reshape(rows, len(self.columns), channels, height * width)
        columns = {}
        for k, name in enumerate(self.columns):
            column = np.empty((rows, height * width, channels), dtype=np.uint8)
            # Channel by channel, each read from one contiguous frame: a copy of the transposed
            # view would read across all the frames for every pixel.
            for channel in range(channels):
                column[:, :, channel] = frames[:, k, channel]
            columns[name] = column.reshape(rows, height, width, channels)
        return columns

    def row_bytes(self) -> int:
        """Bytes of frame slots per row (the frames themselves are counted once, by the pool)."""
        return int(self._slots.itemsize * self._slots.shape[1])

    def stored_bytes(self, rows: int) -> int:
        """Bytes held for ``rows`` stored rows: their frame slots and the live frames."""
        return rows * self.row_bytes() + self.pool.live_bytes

    # ------------------------------------------------------------------ checkpoints

    def state(self, order: npt.NDArray[np.int64]) -> dict[str, Array]:
        """The rows at slots ``order`` as compact arrays: the distinct frames they use, in the
        order the rows first use them (so equal buffers give equal arrays), and each column's
        frame numbers into them."""
        height, width, channels = self.shape
        used = self._slots[order]
        pool_slots, first, inverse = np.unique(used, return_index=True, return_inverse=True)
        by_first_use = np.argsort(first, kind="stable")
        number = np.empty(len(pool_slots), dtype=np.int64)
        number[by_first_use] = np.arange(len(pool_slots))
        rows = number[inverse.reshape(used.shape)].astype(self._slots.dtype)
        arrays = {FRAMES_KEY: self.pool.gather(pool_slots[by_first_use]).reshape(-1, height, width)}
        for k, name in enumerate(self.columns):
            arrays[ROWS_KEY_PREFIX + name] = rows[:, k * channels : (k + 1) * channels]
        return arrays

    @staticmethod
    def in_state(arrays: Mapping[str, Array]) -> bool:
        return FRAMES_KEY in arrays

    @classmethod
    def for_state(cls, capacity: int, arrays: Mapping[str, Array]) -> FrameStore:
        """An empty store for the frame columns of a saved state (``state()``'s arrays)."""
        frames = arrays[FRAMES_KEY]
        names = [n for n in FRAME_COLUMNS if ROWS_KEY_PREFIX + n in arrays]
        if frames.ndim != 3 or frames.dtype != np.uint8 or not names:
            raise ValueError(
                f"ReplayBuffer.set_state: {FRAMES_KEY!r} must be uint8 frames (n, H, W) with "
                f"the rows of {[ROWS_KEY_PREFIX + n for n in FRAME_COLUMNS]}, got "
                f"{frames.dtype} {frames.shape} and {sorted(arrays)}"
            )
        channels = {arrays[ROWS_KEY_PREFIX + n].shape[1:] for n in names}
        if len(channels) != 1 or len(next(iter(channels))) != 1:
            raise ValueError(
                f"ReplayBuffer.set_state: the frame rows must all be (rows, C), got {channels}"
            )
        (channel_count,) = next(iter(channels))
        return cls(capacity, names, (frames.shape[1], frames.shape[2], channel_count))

    def load(self, slots: npt.NDArray[np.int64], arrays: Mapping[str, Array]) -> None:
        """Put the newest ``len(slots)`` rows of a saved state (``state()``'s arrays) in
        ``slots`` (empty ones), with the frames they use."""
        frames = arrays[FRAMES_KEY]
        rows = len(slots)
        numbers = np.concatenate(
            [
                np.asarray(arrays[ROWS_KEY_PREFIX + n])[len(arrays[ROWS_KEY_PREFIX + n]) - rows :]
                for n in self.columns
            ],
            axis=1,
        ).astype(np.int64)
        if numbers.size and (numbers.min() < 0 or numbers.max() >= len(frames)):
            raise ValueError(
                f"ReplayBuffer.set_state: frame numbers must be in [0, {len(frames)}), got "
                f"[{numbers.min()}, {numbers.max()}]"
            )
        used, inverse, references = np.unique(numbers, return_inverse=True, return_counts=True)
        pool_slots = self.pool.load(frames, used, references)
        self._slots[slots] = pool_slots[inverse.reshape(numbers.shape)]
        # The next rows added continue the newest ones: let them share those rows' frames.
        self.pool.remember(self._slots[slots[-WRITE_BLOCK_ROWS:]].ravel())
