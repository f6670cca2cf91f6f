"""``SampleBatch``: experience as numpy columns of equal length."""

from __future__ import annotations

import builtins
import itertools
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, overload

import numpy as np
import numpy.typing as npt


class SampleBatch:
    """Named numpy columns, one row per (agent-)step.

    Column names follow the reference: ``obs, new_obs, actions, rewards, terminateds,
    truncateds, infos, eps_id, t, action_logp, vf_preds, advantages, value_targets``.
    """

    OBS = "obs"
    NEXT_OBS = "new_obs"
    ACTIONS = "actions"
    REWARDS = "rewards"
    TERMINATEDS = "terminateds"
    TRUNCATEDS = "truncateds"
    INFOS = "infos"
    EPS_ID = "eps_id"
    T = "t"
    ACTION_LOGP = "action_logp"
    ACTION_DIST_INPUTS = "action_dist_inputs"
    VF_PREDS = "vf_preds"
    ADVANTAGES = "advantages"
    VALUE_TARGETS = "value_targets"
    ENV_ID = "env_id"
    #: Inputs of models with memory: the action and reward of the step before each row (zero
    #: at an episode's start), the lengths of the sequences a train batch is cut into, and the
    #: state each row was acted from (``state_in_0``, ``state_in_1``, ...: ``state_in(k)``).
    PREV_ACTIONS = "prev_actions"
    PREV_REWARDS = "prev_rewards"
    SEQ_LENS = "seq_lens"

    @staticmethod
    def state_in(index: int) -> str:
        return f"state_in_{index}"

    @staticmethod
    def state_out(index: int) -> str:
        return f"state_out_{index}"

    #: Inputs of advantage estimation, filled by the sampler on its ``(T, N)`` fragment columns
    #: and dropped once postprocessing has run: True on the last row of an episode segment
    #: (terminated, truncated, or the fragment's end) ...
    SEGMENT_ENDS = "segment_ends"
    #: ... and what that row bootstraps from: 0 after termination, V(final observation) after
    #: truncation or at the fragment's end (0 everywhere without a critic).
    BOOTSTRAP_VALUES = "bootstrap_values"

    def __init__(self, columns: Mapping[str, Any] | None = None) -> None:
        self._columns: dict[str, npt.NDArray[Any]] = {}
        length: int | None = None
        for name, values in (columns or {}).items():
            array = _as_column(values)
            if length is None:
                length = len(array)
            elif len(array) != length:
                raise ValueError(
                    f"SampleBatch: column {name!r} has {len(array)} rows, others have {length}"
                )
            self._columns[name] = array
        self._count = length or 0

    # ----------------------------------------------------------------------- reading

    def __len__(self) -> int:
        return self._count

    @property
    def count(self) -> int:
        return self._count

    def env_steps(self) -> int:
        """The rows (RLlib's name: one env step per row of a single-agent batch)."""
        return self._count

    def agent_steps(self) -> int:
        """The rows (RLlib's name)."""
        return self._count

    def slice(self, start: int, end: int) -> SampleBatch:
        """Rows ``start`` to ``end`` (RLlib's name for ``batch[start:end]``)."""
        return self[start:end]

    @property
    def columns(self) -> list[str]:
        return list(self._columns)

    def __contains__(self, name: object) -> bool:
        return name in self._columns

    def __iter__(self) -> Iterator[str]:
        return iter(self._columns)

    def items(self) -> Iterable[tuple[str, npt.NDArray[Any]]]:
        return self._columns.items()

    # RLlib's SampleBatch is a dict: code written for it reads keys() and values().
    def keys(self) -> Iterable[str]:
        return self._columns.keys()

    def values(self) -> Iterable[npt.NDArray[Any]]:
        return self._columns.values()

    def get(self, name: str, default: Any = None) -> Any:
        return self._columns.get(name, default)

    @overload
    def __getitem__(self, key: str) -> npt.NDArray[Any]: ...

    @overload
    def __getitem__(self, key: builtins.slice) -> SampleBatch: ...

    def __getitem__(self, key: str | builtins.slice) -> npt.NDArray[Any] | SampleBatch:
        # builtins.slice: the class's own slice() method shadows the name here.
        if isinstance(key, builtins.slice):
            return SampleBatch({n: v[key] for n, v in self._columns.items()})
        try:
            return self._columns[key]
        except KeyError:
            raise KeyError(
                f"SampleBatch has no column {key!r}; columns: {', '.join(self._columns)}"
            ) from None

    def __setitem__(self, name: str, values: Any) -> None:
        array = _as_column(values)
        if self._columns and len(array) != self._count:
            raise ValueError(
                f"SampleBatch: column {name!r} has {len(array)} rows, the batch has {self._count}"
            )
        if not self._columns:
            self._count = len(array)
        self._columns[name] = array

    def __repr__(self) -> str:
        return f"SampleBatch({self._count} rows: {', '.join(self._columns)})"

    # ----------------------------------------------------------------- transforming

    def copy(self) -> SampleBatch:
        return SampleBatch({n: v.copy() for n, v in self._columns.items()})

    @staticmethod
    def concat_samples(batches: Iterable[SampleBatch]) -> SampleBatch:
        """One batch with the rows of ``batches`` in order; all must have the same columns."""
        parts = [b for b in batches if len(b) > 0]
        if not parts:
            return SampleBatch()
        names = parts[0].columns
        for part in parts[1:]:
            if set(part.columns) != set(names):
                raise ValueError(
                    f"SampleBatch.concat_samples: columns differ: {sorted(names)} vs "
                    f"{sorted(part.columns)}"
                )
        return SampleBatch({n: np.concatenate([p[n] for p in parts]) for n in names})

    def concat(self, other: SampleBatch) -> SampleBatch:
        return SampleBatch.concat_samples([self, other])

    def shuffle(self, rng: np.random.Generator | None = None) -> SampleBatch:
        """Permute the rows in place (all columns alike); returns self."""
        order = (rng or np.random.default_rng()).permutation(self._count)
        self._columns = {n: v[order] for n, v in self._columns.items()}
        return self

    def split_by_episode(self) -> list[SampleBatch]:
        """One batch per run of equal ``eps_id`` values, in order."""
        if self._count == 0:
            return []
        ids = self[self.EPS_ID]
        starts = np.flatnonzero(ids[1:] != ids[:-1]) + 1
        bounds = [0, *starts.tolist(), self._count]
        return [self[a:b] for a, b in itertools.pairwise(bounds)]

    def timeslices(self, size: int) -> list[SampleBatch]:
        """Consecutive slices of ``size`` rows (the last may be shorter)."""
        if size < 1:
            raise ValueError(f"SampleBatch.timeslices: size must be >= 1, got {size}")
        return [self[i : i + size] for i in range(0, self._count, size)]


def _as_column(values: Any) -> npt.NDArray[Any]:
    if isinstance(values, np.ndarray):
        return values
    if isinstance(values, list) and values and isinstance(values[0], dict):
        column = np.empty(len(values), dtype=object)
        column[:] = values
        return column
    return np.asarray(values)
