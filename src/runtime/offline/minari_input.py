"""``MinariReader``: experience from a Minari dataset (``input_="minari://<dataset_id>"``).

Minari (the Farama Foundation's format of offline RL datasets) keeps its datasets under one
local root: ``$MINARI_DATASETS_PATH``, else ``~/.minari/datasets``. The reader loads a dataset
from there with ``minari.load_dataset`` (it never downloads: a worker may have no network, and a
download in the middle of a run would be a surprise; ``minari download <id>`` does it first)
and turns its episodes into the rows our samplers write, so the rest of the offline pipeline
(``episode_columns``, the algorithms' postprocessing) can't tell them apart:

- ``obs`` / ``new_obs``: a Minari episode of T steps holds T+1 observations; row t is
  observation t and t+1. They come as a rollout worker's preprocessor gives them to the model
  (``runtime.env.preprocessors``): float32, images (a rank-3 Box) kept HxWxC, any other Box
  flattened, and Discrete, MultiDiscrete, MultiBinary, Dict and Tuple spaces flattened the way
  ``gymnasium.spaces.flatten`` does (one-hot for the discrete ones, in the space's order).
- ``actions`` as the dataset holds them, env actions (float32 for Box, int64 otherwise): with
  ``normalize_actions`` they are mapped into the policy's [-1, 1] by ``NormalizingReader``,
  like those of any file of env actions.
- ``rewards`` float32, ``terminateds`` / ``truncateds`` bool, ``t`` the step in the episode.
- ``eps_id``: one id per episode read. On the first pass it is the dataset's own episode id
  (after the episodes of the datasets before it when several are read); each later pass adds
  the number of episodes, so that an episode read twice is two episodes to the trainer (a batch
  may hold the same episode twice when the dataset is small).
- ``infos`` (only with ``include_infos``): one dict per row, the info returned with the row's
  step (Minari keeps the reset's info first).

A batch is whole episodes, at least ``batch_size`` rows of them. The reader cycles forever:
the first pass in the dataset's order, each later one in a new random order (seeded like
``JsonReader``'s files). Remote rollout worker i of n (``ioctx``) reads every n-th episode from
the (i-1)-th, as ``JsonReader`` splits files, so the workers read disjoint parts.

``minari`` is an optional dependency (``pip install 'rlconf[minari]'``): it is imported when a
reader or writer is made, never when ``runtime`` is imported.
"""

from __future__ import annotations

import importlib
import itertools
import logging
import os
import re
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import numpy.typing as npt

from runtime.core.sample_batch import SampleBatch
from runtime.offline.input_reader import InputReader
from runtime.offline.io_context import IOContext

logger = logging.getLogger(__name__)

Array = npt.NDArray[Any]

#: The ``input`` / ``output`` scheme of Minari datasets.
SCHEME = "minari://"
INSTALL_HINT = "pip install 'rlconf[minari]'"
#: Minari's dataset ids: ``(namespace/)name(-v<version>)`` (``minari.dataset.minari_dataset``).
_DATASET_ID = re.compile(
    r"^(?:(?P<namespace>[-_\w][-_\w/]*[-_\w]+)/)?(?P<name>[-_\w]+?)(?:-v(?P<version>\d+))?$"
)


def minari_root() -> Path:
    """The local Minari root, by Minari's own rule (``$MINARI_DATASETS_PATH``, else
    ``~/.minari/datasets``), for messages that must name it even when minari is missing."""
    configured = os.environ.get("MINARI_DATASETS_PATH")
    if configured:
        return Path(configured)
    return Path.home() / ".minari" / "datasets"


def dataset_id_of(spec: str) -> str:
    """The dataset id of an ``input`` / ``output`` value: ``minari://<id>`` or the bare id."""
    dataset_id = spec[len(SCHEME) :] if spec.startswith(SCHEME) else spec
    if not _DATASET_ID.fullmatch(dataset_id):
        raise ValueError(
            f"{spec!r} does not name a Minari dataset: ids are '(namespace/)name-v<version>', "
            "e.g. 'minari://cartpole/expert-v0'"
        )
    return dataset_id


def split_dataset_id(dataset_id: str) -> tuple[str | None, str, int | None]:
    """``(namespace, name, version)`` of a dataset id (``version`` None when it has none)."""
    match = _DATASET_ID.fullmatch(dataset_id)
    if match is None:
        raise ValueError(
            f"{dataset_id!r} is not a Minari dataset id: ids are '(namespace/)name-v<version>'"
        )
    version = match.group("version")
    return match.group("namespace"), match.group("name"), None if version is None else int(version)


def worker_part_id(dataset_id: str, worker_index: int) -> str:
    """The dataset that rollout worker ``worker_index`` writes for ``output=minari://<id>`` when
    there are remote workers: ``(namespace/)<name>-worker<i>-v<version>``, beside the id's own,
    so that workers in separate processes never write one dataset together."""
    namespace, name, version = split_dataset_id(dataset_id)
    if version is None:
        raise ValueError(
            f"Minari dataset id {dataset_id!r} has no version: Minari needs one to create a "
            f"dataset, e.g. '{dataset_id}-v0'"
        )
    prefix = f"{namespace}/" if namespace else ""
    return f"{prefix}{name}-worker{worker_index}-v{version}"


def worker_part_ids(dataset_id: str, root: Path | None = None) -> list[str]:
    """The per-worker datasets of ``dataset_id`` (``worker_part_id``) in the local root, by
    worker index: what an output run with remote workers left."""
    namespace, name, version = split_dataset_id(dataset_id)
    if version is None:
        return []
    folder = (root or minari_root()) / (namespace or "")
    if not folder.is_dir():
        return []
    pattern = re.compile(rf"{re.escape(name)}-worker(\d+)-v{version}")
    found: list[tuple[int, str]] = []
    for entry in folder.iterdir():
        match = pattern.fullmatch(entry.name)
        if match and (entry / "data").is_dir():
            prefix = f"{namespace}/" if namespace else ""
            found.append((int(match.group(1)), f"{prefix}{entry.name}"))
    return [part for _, part in sorted(found)]


def import_minari(what: str) -> Any:
    """The ``minari`` module, or an ImportError that says how to install it (``what``: the
    setting that needs it). Imported here, lazily, so ``runtime`` imports without it."""
    try:
        return importlib.import_module("minari")
    except ImportError as error:
        raise ImportError(
            f"{what} needs the minari package, which is not installed: {INSTALL_HINT} "
            f"(datasets are read from and written to the local Minari root {minari_root()}, "
            "set by MINARI_DATASETS_PATH)"
        ) from error


def load_dataset(minari: Any, dataset_id: str, what: str) -> Any:
    """``minari.load_dataset(dataset_id)`` from the local root, with errors that name the id,
    the root, what is there and how to get what is missing."""
    try:
        return minari.load_dataset(dataset_id)
    except FileNotFoundError:
        raise FileNotFoundError(
            f"{what}: there is no Minari dataset {dataset_id!r} in the local Minari root "
            f"{minari_root()} (MINARI_DATASETS_PATH, else ~/.minari/datasets); local datasets: "
            f"{_local_ids(minari)}. Download one with `minari download {dataset_id}` or point "
            "MINARI_DATASETS_PATH at the root that holds it"
        ) from None
    except ImportError as error:
        # A storage backend (h5py for hdf5, pyarrow for arrow) is missing.
        raise ImportError(
            f"{what}: Minari dataset {dataset_id!r} in {minari_root()} can't be read: {error}; "
            f"{INSTALL_HINT} installs the backends"
        ) from error


def _local_ids(minari: Any) -> list[str]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return sorted(minari.list_local_datasets())
        except Exception:  # the listing only decorates an error message
            return []


def observation_rows(space: gym.Space[Any], values: Any, count: int, where: str) -> Array:
    """``count`` observations of ``space`` (as a Minari episode holds them: an array with a
    leading time axis, or a dict / tuple of those) as rows of what the model sees: float32, a
    rank-3 Box kept as images, everything else flattened as ``gymnasium.spaces.flatten`` does."""
    if isinstance(space, gym.spaces.Box) and len(space.shape) == 3:
        return np.asarray(values, dtype=np.float32).reshape(count, *space.shape)
    return _flat_rows(space, values, count, where)


def _flat_rows(space: gym.Space[Any], values: Any, count: int, where: str) -> Array:
    if isinstance(space, gym.spaces.Box | gym.spaces.MultiBinary):
        return np.asarray(values, dtype=np.float32).reshape(count, -1)
    if isinstance(space, gym.spaces.Discrete):
        index = np.asarray(values, dtype=np.int64).reshape(count) - int(space.start)
        _check_range(index, int(space.n), space, where)
        out = np.zeros((count, int(space.n)), dtype=np.float32)
        out[np.arange(count), index] = 1.0
        return out
    if isinstance(space, gym.spaces.MultiDiscrete):
        nvec = np.asarray(space.nvec, dtype=np.int64).ravel()
        start = np.asarray(space.start, dtype=np.int64).ravel()
        index = np.asarray(values, dtype=np.int64).reshape(count, -1) - start
        for k, n in enumerate(nvec.tolist()):
            _check_range(index[:, k], int(n), space, where)
        offsets = np.concatenate([[0], np.cumsum(nvec)[:-1]])
        out = np.zeros((count, int(nvec.sum())), dtype=np.float32)
        out[np.repeat(np.arange(count), len(nvec)), (index + offsets).ravel()] = 1.0
        return out
    if isinstance(space, gym.spaces.Tuple):
        parts = [_flat_rows(sub, values[i], count, where) for i, sub in enumerate(space.spaces)]
        return np.concatenate(parts, axis=1) if parts else np.zeros((count, 0), np.float32)
    if isinstance(space, gym.spaces.Dict):
        parts = [_flat_rows(sub, values[key], count, where) for key, sub in space.spaces.items()]
        return np.concatenate(parts, axis=1) if parts else np.zeros((count, 0), np.float32)
    raise ValueError(
        f"{where}: observation space {space} can't be turned into rows: supported are Box, "
        "Discrete, MultiDiscrete, MultiBinary, and Dict / Tuple of these (flattened as "
        "gymnasium.spaces.flatten does)"
    )


def _check_range(index: Array, n: int, space: gym.Space[Any], where: str) -> None:
    if index.size and (index.min() < 0 or index.max() >= n):
        raise ValueError(f"{where}: an observation is outside its space {space}")


def action_rows(space: gym.Space[Any], values: Any, count: int, where: str) -> Array:
    """``count`` actions of ``space`` as the ``actions`` column: float32 for a Box, int64 for the
    discrete spaces a policy here acts in."""
    if isinstance(space, gym.spaces.Box):
        return np.asarray(values, dtype=np.float32).reshape(count, *space.shape)
    if isinstance(space, gym.spaces.Discrete):
        return np.asarray(values, dtype=np.int64).reshape(count)
    if isinstance(space, gym.spaces.MultiDiscrete | gym.spaces.MultiBinary):
        return np.asarray(values, dtype=np.int64).reshape(count, *space.shape)
    raise ValueError(
        f"{where}: action space {space} is not one a policy here acts in (Box, Discrete, "
        "MultiDiscrete, MultiBinary)"
    )


def row_observation_space(space: gym.Space[Any], where: str) -> gym.spaces.Box:
    """The space of the ``obs`` rows ``observation_rows`` makes of ``space``."""
    if isinstance(space, gym.spaces.Box) and len(space.shape) == 3:
        shape: tuple[int, ...] = tuple(int(d) for d in space.shape)
    else:
        sample = space.sample()
        shape = observation_rows(space, _batched(space, sample), 1, where).shape[1:]
    return gym.spaces.Box(-np.inf, np.inf, shape, np.float32)


def _batched(space: gym.Space[Any], sample: Any) -> Any:
    """One observation as a batch of one (a leading axis on every leaf)."""
    if isinstance(space, gym.spaces.Dict):
        return {key: _batched(sub, sample[key]) for key, sub in space.spaces.items()}
    if isinstance(space, gym.spaces.Tuple):
        return tuple(_batched(sub, sample[i]) for i, sub in enumerate(space.spaces))
    return np.asarray(sample)[None]


@dataclass(frozen=True)
class _Source:
    """One dataset read: its id, the ``MinariDataset``, and the first ``eps_id`` of its
    episodes."""

    dataset_id: str
    dataset: Any
    first_eps_id: int


class MinariReader(InputReader):
    """Batches of whole episodes of the Minari dataset ``dataset_id`` (``minari://<id>`` or the
    bare id; a list reads several as one, spaces alike) from the local Minari root, as the
    module's doc describes.

    ``ioctx``: a remote worker's context splits the episodes between the workers (all of them
    when there are fewer episodes than workers). ``batch_size``: the least rows of a batch.
    ``seed``: the order of the passes after the first (the worker's seed plus its index when an
    ``ioctx`` with a worker is given). ``include_infos``: add the ``infos`` column.

    An id that is not in the root but whose per-worker datasets are (``<name>-worker<i>-v<N>``,
    what ``MinariWriter`` writes with remote workers) is read as those datasets together.

    ``observation_space`` (the rows' ``obs``), ``dataset_observation_space`` and
    ``action_space`` tell a worker without an env what the policy acts on.
    """

    #: A dataset holds the env's actions, whatever ``actions_in_input_normalized`` says.
    rows_in_env_space = True

    def __init__(
        self,
        dataset_id: str | Sequence[str],
        ioctx: IOContext | None = None,
        batch_size: int = 1000,
        *,
        seed: int | None = None,
        include_infos: bool = False,
    ) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"MinariReader: batch_size must be an int >= 1, got {batch_size!r}")
        specs = [dataset_id] if isinstance(dataset_id, str) else list(dataset_id)
        if not specs:
            raise ValueError("MinariReader: no dataset id given")
        minari = import_minari(f"input={_describe(specs)}")
        self.batch_size = batch_size
        self.include_infos = include_infos
        self.sources = self._load(minari, [dataset_id_of(spec) for spec in specs])
        first = self.sources[0]
        self.dataset_observation_space: gym.Space[Any] = first.dataset.observation_space
        self.action_space: gym.Space[Any] = first.dataset.action_space
        where = f"Minari dataset {first.dataset_id!r}"
        self.observation_space = row_observation_space(self.dataset_observation_space, where)
        action_rows(self.action_space, self.action_space.sample(), 1, where)  # refused early
        for source in self.sources[1:]:
            if (
                source.dataset.observation_space != self.dataset_observation_space
                or source.dataset.action_space != self.action_space
            ):
                raise ValueError(
                    f"Minari datasets {first.dataset_id!r} and {source.dataset_id!r} can't be "
                    "read together: their spaces differ (observations "
                    f"{self.dataset_observation_space} vs {source.dataset.observation_space}, "
                    f"actions {self.action_space} vs {source.dataset.action_space})"
                )
        self.total_episodes = sum(len(s.dataset.episode_indices) for s in self.sources)
        #: The episodes this reader reads: (source, episode index in its storage).
        self.episodes = self._share(ioctx)
        if seed is None and ioctx is not None and ioctx.worker is not None:
            worker_seed = getattr(getattr(ioctx.worker, "settings", None), "seed", None)
            seed = None if worker_seed is None else int(worker_seed) + ioctx.worker_index
        self._rng = np.random.default_rng(seed)
        #: Added to the ``eps_id`` on every pass after the first.
        self._eps_stride = max(
            (s.first_eps_id + _storage_episodes(s.dataset) for s in self.sources), default=0
        )
        self._stream = self._iterate()

    @staticmethod
    def _load(minari: Any, ids: list[str]) -> list[_Source]:
        sources: list[_Source] = []
        first_eps_id = 0
        for dataset_id in ids:
            what = f"input='{SCHEME}{dataset_id}'"
            parts = [dataset_id]
            if not (minari_root() / dataset_id / "data").exists():
                found = worker_part_ids(dataset_id)
                if found:
                    logger.info(
                        "%s: reading the per-worker datasets %s (no dataset %r itself in %s)",
                        what,
                        found,
                        dataset_id,
                        minari_root(),
                    )
                    parts = found
            for part in parts:
                dataset = load_dataset(minari, part, what)
                sources.append(_Source(part, dataset, first_eps_id))
                first_eps_id += _storage_episodes(dataset)
        return sources

    def _share(self, ioctx: IOContext | None) -> list[tuple[int, int]]:
        episodes = [
            (k, int(index))
            for k, source in enumerate(self.sources)
            for index in source.dataset.episode_indices
        ]
        if not episodes:
            raise ValueError(
                f"input={_describe([s.dataset_id for s in self.sources])}: the Minari "
                f"dataset(s) in {minari_root()} hold no episodes"
            )
        index = ioctx.worker_index if ioctx is not None else 0
        workers = ioctx.num_workers if ioctx is not None else 0
        if index > 0 and workers > 0:
            share = episodes[index - 1 :: workers]
            if share:
                return share
            logger.info(
                "worker %d of %d reads all %d episodes of %s: there are fewer episodes than "
                "workers",
                index,
                workers,
                len(episodes),
                [s.dataset_id for s in self.sources],
            )
        return episodes

    def _iterate(self) -> Iterator[SampleBatch]:
        for pass_index in itertools.count():
            if pass_index == 0:
                order = self.episodes
            else:
                order = [self.episodes[int(i)] for i in self._rng.permutation(len(self.episodes))]
            rows = 0
            for k, group in itertools.groupby(order, key=lambda episode: episode[0]):
                source = self.sources[k]
                indices = [index for _, index in group]
                for episode in source.dataset.iterate_episodes(indices):
                    eps_id = source.first_eps_id + int(episode.id) + pass_index * self._eps_stride
                    batch = self._episode_rows(source, episode, eps_id)
                    rows += len(batch)
                    yield batch
            if rows == 0:
                raise ValueError(
                    f"input={_describe([s.dataset_id for s in self.sources])}: the episodes "
                    "read hold no steps"
                )

    def _episode_rows(self, source: _Source, episode: Any, eps_id: int) -> SampleBatch:
        """One Minari ``EpisodeData`` as rows."""
        where = f"Minari dataset {source.dataset_id!r}, episode {episode.id}"
        steps = len(episode.rewards)
        found = _leading(episode.observations)
        if found != steps + 1:
            raise ValueError(
                f"{where}: {steps} steps need {steps + 1} observations (the last one after the "
                f"last step), the episode has {found}"
            )
        observations = observation_rows(
            self.dataset_observation_space, episode.observations, steps + 1, where
        )
        columns: dict[str, Any] = {
            SampleBatch.OBS: observations[:-1],
            SampleBatch.NEXT_OBS: observations[1:],
            SampleBatch.ACTIONS: action_rows(self.action_space, episode.actions, steps, where),
            SampleBatch.REWARDS: np.asarray(episode.rewards, dtype=np.float32).reshape(steps),
            SampleBatch.TERMINATEDS: np.asarray(episode.terminations, dtype=bool).reshape(steps),
            SampleBatch.TRUNCATEDS: np.asarray(episode.truncations, dtype=bool).reshape(steps),
            SampleBatch.EPS_ID: np.full(steps, eps_id, dtype=np.int64),
            SampleBatch.T: np.arange(steps, dtype=np.int64),
        }
        if self.include_infos:
            columns[SampleBatch.INFOS] = _info_rows(episode.infos or {}, steps, where)
        return SampleBatch(columns)

    def next(self) -> SampleBatch:
        """Whole episodes, at least ``batch_size`` rows of them."""
        parts: list[SampleBatch] = []
        rows = 0
        while rows < self.batch_size:
            part = next(self._stream)
            parts.append(part)
            rows += len(part)
        return SampleBatch.concat_samples(parts)


def _storage_episodes(dataset: Any) -> int:
    """How many episode ids the dataset's storage has (its episodes may be a filtered part)."""
    indices = np.asarray(dataset.episode_indices)
    return int(indices.max()) + 1 if indices.size else 0


def _leading(values: Any) -> int:
    """The length of the time axis of observations (an array, or a dict / tuple of them)."""
    if isinstance(values, dict):
        return _leading(next(iter(values.values()))) if values else 0
    if isinstance(values, tuple):
        return _leading(values[0]) if values else 0
    return len(values)


def _info_rows(infos: dict[str, Any], steps: int, where: str) -> Array:
    """One dict per row from Minari's infos (a dict of arrays with a time axis, nested dicts
    alike): the info returned with row t's step is entry t+1 (entry 0 is the reset's) when
    there are T+1 entries, entry t when there are T."""
    column = np.empty(steps, dtype=object)
    offset = _info_offset(infos, steps, where)
    for t in range(steps):
        column[t] = _info_at(infos, t + offset)
    return column


def _info_offset(infos: dict[str, Any], steps: int, where: str) -> int:
    for values in infos.values():
        if isinstance(values, dict):
            return _info_offset(values, steps, where)
        length = len(values)
        if length == steps + 1:
            return 1
        if length == steps:
            return 0
        raise ValueError(f"{where}: infos have {length} entries for {steps} steps")
    return 0


def _info_at(infos: dict[str, Any], index: int) -> dict[str, Any]:
    return {
        key: _info_at(values, index) if isinstance(values, dict) else values[index]
        for key, values in infos.items()
    }


def _describe(specs: Sequence[str]) -> str:
    names = [spec if spec.startswith(SCHEME) else f"{SCHEME}{spec}" for spec in specs]
    return repr(names[0]) if len(names) == 1 else repr(names)
