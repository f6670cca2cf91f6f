"""``MinariWriter``: a rollout worker's sampled experience as a Minari dataset
(``output="minari://<dataset_id>"``), in the local Minari root (``$MINARI_DATASETS_PATH``, else
``~/.minari/datasets``), readable by ``minari.load_dataset`` and by ``MinariReader``.

Minari stores whole episodes; a sampled batch may end in the middle of one (``truncate_episodes``)
and hold the middle of several (one per sub-env). The writer keeps each episode's rows (those of
one ``eps_id``, contiguous and in time order in a batch) until a row ends it (terminated or
truncated), across ``write`` calls, and then adds the episode to the dataset: observations are
the rows' ``obs`` and, last, the final row's ``new_obs``. Episodes still unfinished at
``close()`` are left out (with a warning): Minari has no way to say that an episode was cut
short by the sampler rather than by the env.

Never a half-written dataset: finished episodes go, as they finish, into a hidden folder in the
root (``.rlconf-partial-<id>-<random>``, which Minari's listing skips), and ``close()`` renames
it into place in one step, once everything is in. A run that dies leaves that hidden folder
behind and no dataset.

Several workers: with remote rollout workers (``num_workers > 0``), worker i writes its own
dataset ``(namespace/)<name>-worker<i>-v<version>`` (``worker_part_id``), since workers in
separate processes can't safely write one dataset; ``MinariReader`` reads
``minari://<name>-v<version>`` as those datasets together when the dataset itself is not there,
and ``minari.combine_datasets`` merges them into one. With no remote workers the local worker
writes ``<id>`` itself.

What is written: the rows as the worker recorded them, like ``JsonWriter``: observations after
the worker's preprocessor and observation filter, so the dataset's observation space is the
env's when those change nothing (a Box of the rows' shape and no filter), else an unbounded
float32 Box of the rows' shape; actions as the env received them (a policy's [-1, 1] actions
unsquashed with ``normalize_actions``, clipped with ``clip_actions``), so the action space is
the env's and ``MinariReader`` reads them as env actions. The env's gymnasium spec is recorded
when the worker's env is a registered gymnasium id (``minari`` can then recover the env). The
other columns (``infos``, ``action_logp``, ...) have no place in a Minari episode and are not
written.
"""

from __future__ import annotations

import importlib
import itertools
import logging
import os
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

import gymnasium as gym
import numpy as np
import numpy.typing as npt

from runtime.core.multi_agent_batch import MultiAgentBatch
from runtime.core.sample_batch import SampleBatch as SB
from runtime.core.settings import settings_of
from runtime.env.action_processing import action_processor
from runtime.env.filters import NoFilter
from runtime.offline.io_context import IOContext
from runtime.offline.json_writer import OutputWriter
from runtime.offline.minari_input import (
    INSTALL_HINT,
    SCHEME,
    dataset_id_of,
    import_minari,
    split_dataset_id,
    worker_part_id,
)

logger = logging.getLogger(__name__)

Array = npt.NDArray[Any]

#: The storage formats of Minari 0.5 (``MinariStorage.new``) and the package each needs.
DATA_FORMATS = {"hdf5": "h5py", "arrow": "pyarrow", "parquet": "pyarrow"}
_REQUIRED = (SB.OBS, SB.NEXT_OBS, SB.ACTIONS, SB.REWARDS, SB.TERMINATEDS, SB.TRUNCATEDS, SB.EPS_ID)


@dataclass(frozen=True)
class MinariWriterSettings:
    """What the writer reads of the config: how the worker's policy actions became env
    actions (``runtime.env.action_processing``)."""

    normalize_actions: bool
    clip_actions: bool


def worker_dataset_id(dataset_id: str, worker_index: int, num_workers: int) -> str:
    """The dataset a worker writes for ``output=minari://<dataset_id>``: the id itself without
    remote workers, else the worker's own part (the module's doc)."""
    return dataset_id if num_workers <= 0 else worker_part_id(dataset_id, worker_index)


@dataclass
class _Episode:
    """The rows of one unfinished episode, in pieces as they came."""

    pieces: list[dict[str, Array]]
    next_t: int | None


class MinariWriter(OutputWriter):
    """Writes the episodes of the batches given to ``write`` as the Minari dataset
    ``dataset_id`` (``minari://<id>`` or the bare id, with a version: ``name-v0``), complete
    once ``close()`` returns (the module's doc).

    ``ioctx``: the worker's context gives the worker index and count (which dataset this writer
    writes: ``worker_dataset_id``), the spaces (``worker.observation_space`` /
    ``action_space``), the env id (``worker.settings.env``, when it is a gymnasium id), whether
    an observation filter changes the rows, and the config's ``normalize_actions`` /
    ``clip_actions``. The keyword arguments, when given, take precedence over it.
    ``data_format``: Minari's storage, ``hdf5`` (Minari's default), ``arrow`` or ``parquet``.
    """

    def __init__(
        self,
        dataset_id: str,
        ioctx: IOContext | None = None,
        *,
        observation_space: gym.Space[Any] | None = None,
        action_space: gym.Space[Any] | None = None,
        env_id: str | None = None,
        normalize_actions: bool | None = None,
        clip_actions: bool | None = None,
        data_format: str = "hdf5",
    ) -> None:
        base_id = dataset_id_of(dataset_id)
        if split_dataset_id(base_id)[2] is None:
            raise ValueError(
                f"output={dataset_id!r}: a Minari dataset id needs a version to be created, "
                f"e.g. '{SCHEME}{base_id}-v0'"
            )
        worker = ioctx.worker if ioctx is not None else None
        self.worker_index = ioctx.worker_index if ioctx is not None else 0
        num_workers = ioctx.num_workers if ioctx is not None else 0
        #: The dataset this writer creates.
        self.dataset_id = worker_dataset_id(base_id, self.worker_index, num_workers)
        self._what = f"output='{SCHEME}{base_id}'"
        self._minari = import_minari(self._what)
        if data_format not in DATA_FORMATS:
            raise ValueError(
                f"{self._what}: data_format={data_format!r} is not a Minari storage format; "
                f"allowed: {sorted(DATA_FORMATS)}"
            )
        try:
            importlib.import_module(DATA_FORMATS[data_format])
        except ImportError as error:
            raise ImportError(
                f"{self._what}: Minari's {data_format} storage needs "
                f"{DATA_FORMATS[data_format]}, which is not installed: {INSTALL_HINT}"
            ) from error
        self.data_format = data_format
        get_dataset_path = importlib.import_module("minari.storage").get_dataset_path
        self.root = Path(get_dataset_path())
        #: Where the dataset will be once ``close()`` has run.
        self.path = Path(get_dataset_path(self.dataset_id))
        self._refuse_existing()
        # Not ``or``: an empty Dict or Tuple space is falsy.
        self.action_space = (
            action_space if action_space is not None else getattr(worker, "action_space", None)
        )
        if self.action_space is None:
            raise ValueError(
                f"{self._what}: MinariWriter needs the env's action space: give action_space= "
                "or an IOContext with the rollout worker"
            )
        self.given_observation_space = (
            observation_space
            if observation_space is not None
            else getattr(worker, "observation_space", None)
        )
        #: The space of the dataset's observations, fixed by the first episode written.
        self.observation_space: gym.Space[Any] | None = None
        self._filtered = _has_filter(worker)
        self.env_spec = _env_spec(env_id if env_id is not None else _worker_env(worker))
        settings = (
            settings_of(MinariWriterSettings, ioctx.config, type(self).__name__)
            if ioctx is not None and ioctx.config is not None
            else MinariWriterSettings(normalize_actions=False, clip_actions=False)
        )
        self._to_env_actions = action_processor(
            self.action_space,
            settings.normalize_actions if normalize_actions is None else normalize_actions,
            settings.clip_actions if clip_actions is None else clip_actions,
        )
        self._pending: dict[int, _Episode] = {}
        self._partial: Path | None = None
        self._storage: Any = None
        self._failed = False
        self._closed = False
        self.episodes_written = 0
        self.steps_written = 0

    # ------------------------------------------------------------------------- writing

    def write(self, batch: SB | MultiAgentBatch) -> None:
        """Keep the batch's rows by episode and add the episodes it finishes to the dataset."""
        if self._closed:
            raise RuntimeError(f"{self._what}: write() after close()")
        rows = _single_policy(batch, self._what)
        if len(rows) == 0:
            return
        missing = [name for name in _REQUIRED if name not in rows]
        if missing:
            raise ValueError(
                f"{self._what}: the batch lacks the columns {missing} a Minari episode is made "
                f"of (columns: {sorted(rows.columns)})"
            )
        finished: list[dict[str, Array]] = []
        for start, stop in _runs(rows):
            eps_id = int(rows[SB.EPS_ID][start])
            piece = {name: np.asarray(rows[name][start:stop]) for name in _REQUIRED[:6]}
            t = np.asarray(rows[SB.T][start:stop]) if SB.T in rows else None
            episode = self._pending.pop(eps_id, None)
            if episode is None:
                episode = _Episode([], None)
            elif t is not None and episode.next_t is not None and int(t[0]) != episode.next_t:
                raise ValueError(
                    f"{self._what}: the rows of episode {eps_id} are not in time order: t "
                    f"{int(t[0])} follows t {episode.next_t - 1}"
                )
            episode.pieces.append(piece)
            episode.next_t = None if t is None else int(t[-1]) + 1
            if piece[SB.TERMINATEDS][-1] or piece[SB.TRUNCATEDS][-1]:
                finished.append(_joined(episode.pieces))
            else:
                self._pending[eps_id] = episode
        if finished:
            self._add(finished)

    def _add(self, episodes: list[dict[str, Array]]) -> None:
        episode_buffer = importlib.import_module("minari.data_collector").EpisodeBuffer
        buffers = []
        for episode in episodes:
            observations = np.concatenate([episode[SB.OBS], episode[SB.NEXT_OBS][-1:]])
            if self._storage is None:
                self._create(observations)
            assert self.observation_space is not None
            buffers.append(
                episode_buffer(
                    observations=self._observations(observations),
                    actions=self._actions(episode[SB.ACTIONS]),
                    rewards=np.asarray(episode[SB.REWARDS], dtype=np.float32),
                    terminations=np.asarray(episode[SB.TERMINATEDS], dtype=bool),
                    truncations=np.asarray(episode[SB.TRUNCATEDS], dtype=bool),
                )
            )
        try:
            self._storage.update_episodes(buffers)
        except BaseException:
            self._failed = True
            raise
        self.episodes_written += len(buffers)
        self.steps_written += sum(len(b.rewards) for b in buffers)

    def _create(self, observations: Array) -> None:
        """The storage, in the hidden folder, with the spaces the first episode shows."""
        self.observation_space = _observation_space(
            self.given_observation_space, observations.shape[1:], self._filtered
        )
        self._refuse_existing()
        tag = f"{self.dataset_id.replace('/', '_')}-{uuid.uuid4().hex[:8]}"
        partial = self.root / f".rlconf-partial-{tag}"
        (partial / "data").mkdir(parents=True)
        self._partial = partial
        storage_module = importlib.import_module("minari.dataset.minari_storage")
        storage = storage_module.MinariStorage.new(
            partial / "data",
            observation_space=self.observation_space,
            action_space=self.action_space,
            env_spec=self.env_spec,
            data_format=self.data_format,
            # Lossless: Minari would JPEG-encode uint8 images by default.
            jpeg_encoding=False,
        )
        storage.update_metadata(
            {
                "dataset_id": self.dataset_id,
                "minari_version": str(self._minari.__version__),
                "algorithm_name": "rlconf",
                "description": (
                    f"Experience sampled by rlconf rollout worker {self.worker_index} "
                    "(runtime.offline.minari_output.MinariWriter): observations as the "
                    "worker's preprocessor and filter gave them, env actions."
                ),
            }
        )
        self._storage = storage

    def _observations(self, observations: Array) -> Array:
        space = self.observation_space
        assert isinstance(space, gym.spaces.Box)
        if observations.shape[1:] != space.shape:
            raise ValueError(
                f"{self._what}: observations of shape {observations.shape[1:]} don't fit the "
                f"dataset's observation space {space} (the first episode's)"
            )
        return observations.astype(space.dtype, copy=False)

    def _actions(self, actions: Array) -> Array:
        space = self.action_space
        env_actions = np.asarray(self._to_env_actions(actions))
        if isinstance(space, gym.spaces.Discrete):
            return env_actions.astype(space.dtype, copy=False).reshape(len(actions))
        if isinstance(space, gym.spaces.Box | gym.spaces.MultiDiscrete | gym.spaces.MultiBinary):
            return env_actions.astype(space.dtype, copy=False).reshape(len(actions), *space.shape)
        raise ValueError(
            f"{self._what}: action space {space} can't be written to a Minari dataset here; "
            "allowed: Box, Discrete, MultiDiscrete, MultiBinary"
        )

    # ------------------------------------------------------------------------- closing

    def close(self) -> None:
        """Put the dataset in place, complete (nothing when no episode finished). Idempotent;
        the worker calls it when it stops."""
        if self._closed:
            return
        self._closed = True
        if self._pending:
            rows = sum(len(p[SB.REWARDS]) for e in self._pending.values() for p in e.pieces)
            logger.warning(
                "%s: %d unfinished episodes (%d rows) are not in Minari dataset %r: the worker "
                "stopped before they ended",
                self._what,
                len(self._pending),
                rows,
                self.dataset_id,
            )
            self._pending.clear()
        if self._partial is None:
            logger.info(
                "%s: no episode finished, so no Minari dataset %r was written",
                self._what,
                self.dataset_id,
            )
            return
        if self._failed:
            raise RuntimeError(
                f"{self._what}: writing Minari dataset {self.dataset_id!r} failed; the episodes "
                f"written before are in {self._partial}, not in the dataset"
            )
        self._publish(self._partial)

    def _publish(self, partial: Path) -> None:
        namespace = split_dataset_id(self.dataset_id)[0]
        if namespace is not None:
            _ensure_namespace(namespace)
        self._refuse_existing()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # One rename on one filesystem (the partial folder is in the root): the dataset appears
        # whole or not at all.
        os.rename(partial, self.path)
        self._partial = None
        logger.info(
            "wrote Minari dataset %r: %d episodes, %d steps, in %s",
            self.dataset_id,
            self.episodes_written,
            self.steps_written,
            self.path,
        )

    def discard(self) -> None:
        """Close without a dataset: drop what was written (a run that is being abandoned)."""
        self._closed = True
        self._pending.clear()
        if self._partial is not None:
            shutil.rmtree(self._partial, ignore_errors=True)
            self._partial = None

    def _refuse_existing(self) -> None:
        if self.path.exists():
            raise FileExistsError(
                f"{self._what}: Minari dataset {self.dataset_id!r} already exists in "
                f"{self.root}; Minari datasets are not overwritten: choose another id or "
                f"version, or delete it (minari.delete_dataset({self.dataset_id!r}))"
            )

    def __enter__(self) -> MinariWriter:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if error is not None and self._failed:
            # The storage may be broken: keep the partial folder, and the error that broke it.
            self._closed = True
            logger.warning(
                "%s: Minari dataset %r not written; the episodes written before the error are "
                "in %s",
                self._what,
                self.dataset_id,
                self._partial,
            )
            return
        self.close()


def _single_policy(batch: SB | MultiAgentBatch, what: str) -> SB:
    if isinstance(batch, MultiAgentBatch):
        if len(batch.policy_batches) != 1:
            raise ValueError(
                f"{what}: a Minari dataset holds one agent's episodes; this batch has the "
                f"policies {sorted(batch.policy_batches)}"
            )
        return next(iter(batch.policy_batches.values()))
    return batch


def _runs(rows: SB) -> list[tuple[int, int]]:
    """``(start, stop)`` of each run of one episode: a new ``eps_id``, or after an end."""
    count = len(rows)
    ids = np.asarray(rows[SB.EPS_ID])
    ends = np.asarray(rows[SB.TERMINATEDS], dtype=bool) | np.asarray(
        rows[SB.TRUNCATEDS], dtype=bool
    )
    breaks = (ids[1:] != ids[:-1]) | ends[:-1]
    bounds = [0, *(np.flatnonzero(breaks) + 1).tolist(), count]
    return list(itertools.pairwise(bounds))


def _joined(pieces: list[dict[str, Array]]) -> dict[str, Array]:
    if len(pieces) == 1:
        return pieces[0]
    return {name: np.concatenate([p[name] for p in pieces]) for name in pieces[0]}


def _observation_space(
    given: gym.Space[Any] | None, shape: tuple[int, ...], filtered: bool
) -> gym.spaces.Box:
    """The env's space when the rows are its observations unchanged, else one that holds what
    the rows are (float32, unbounded)."""
    if not filtered and isinstance(given, gym.spaces.Box) and tuple(given.shape) == shape:
        return given
    return gym.spaces.Box(-np.inf, np.inf, shape, np.float32)


def _has_filter(worker: Any) -> bool:
    """Whether an observation filter of the worker changes the rows (``MeanStdFilter``)."""
    filters = getattr(worker, "filters", None) or {}
    return any(not isinstance(f, NoFilter) for f in dict(filters).values())


def _worker_env(worker: Any) -> str | None:
    env = getattr(getattr(worker, "settings", None), "env", None)
    return env if isinstance(env, str) else None


def _env_spec(env_id: str | None) -> Any:
    """The gymnasium spec of a registered id (None for another env: a class, a name
    registered with Tune)."""
    if env_id is None:
        return None
    try:
        return gym.spec(env_id)
    except (gym.error.Error, ImportError):
        return None


def _ensure_namespace(namespace: str) -> None:
    """Minari's namespace of the id, made when missing (another worker may make it first)."""
    namespaces = importlib.import_module("minari.namespace")
    if namespace in namespaces.list_local_namespaces():
        return
    try:
        namespaces.create_namespace(namespace)
    except ValueError:
        if namespace not in namespaces.list_local_namespaces():
            raise
