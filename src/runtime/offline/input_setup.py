"""What a rollout worker trains on when ``input`` is not ``"sampler"``: the reader each kind of
setting makes, and the steps every batch read goes through before the algorithm sees it.

- a file, folder, glob or list of them: ``JsonReader`` (also ``"dataset"`` with
  ``input_config={"format": "json", "path": ...}``, RLlib 2.x's spelling); ``"minari://<id>"``:
  ``MinariReader``;
- ``{source: probability, ...}``: ``MixedInput`` over those (``"sampler"`` among them samples
  the worker's envs);
- a function: called with the worker's ``IOContext``; it returns a reader (anything with
  ``next()``), or None for a worker that samples its envs (a server on remote workers only);

then, for every source but the sampler: Box actions mapped into the policy's space
(``actions_in_input_normalized``), the columns the policy's postprocessing adds computed where
missing, or always with ``postprocess_inputs`` (``episode_columns``); and the whole input
shuffled through ``shuffle_buffer_size`` batches.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from runtime.core.multi_agent_batch import MultiAgentBatch
from runtime.core.sample_batch import SampleBatch
from runtime.core.settings import settings_of
from runtime.env.episode import EpisodeMetrics
from runtime.offline.episode_columns import (
    needs_postprocessing,
    postprocess_rows,
    standard_columns,
)
from runtime.offline.input_reader import (
    InputReader,
    NormalizingReader,
    close_reader,
    needs_normalizing,
)
from runtime.offline.io_context import IOContext
from runtime.offline.json_reader import JsonReader
from runtime.offline.mixed_input import MixedInput
from runtime.offline.shuffled_input import ShuffledInput

logger = logging.getLogger(__name__)

MINARI_SCHEME = "minari://"


@dataclass(frozen=True)
class InputSettings:
    """What a worker reads of the config to make its input."""

    input: Any
    input_config: Mapping[str, Any]
    actions_in_input_normalized: bool
    normalize_actions: bool
    postprocess_inputs: bool
    shuffle_buffer_size: int
    seed: int | None


class SamplerInput(InputReader):
    """The worker's own envs as a source among others (``{"sampler": p, ...}``): its batches
    are sampled and postprocessed as in training without input."""

    def __init__(self, sample: Callable[[], SampleBatch | MultiAgentBatch]) -> None:
        self._sample = sample

    def next(self) -> SampleBatch | MultiAgentBatch:
        return self._sample()


class PostprocessedInput(InputReader):
    """Rows read from a source other than the sampler, completed for the worker's policies:
    the reference's older columns renamed, and the columns the policy's postprocessing adds
    computed where any is missing (always with ``postprocess_inputs``)."""

    def __init__(self, child: Any, worker: Any, always: bool) -> None:
        self.child = child
        self.worker = worker
        self.always = always

    def next(self) -> SampleBatch | MultiAgentBatch:
        batch = self.child.next()
        if isinstance(batch, MultiAgentBatch):
            return MultiAgentBatch(
                {pid: self._complete(pid, rows) for pid, rows in batch.items()},
                batch.env_steps(),
            )
        if not isinstance(batch, SampleBatch):
            raise TypeError(
                f"{type(self.child).__name__}.next() returned a {type(batch).__name__}; "
                "allowed: a SampleBatch or a MultiAgentBatch"
            )
        return self._complete(_single_policy_id(self.worker), batch)

    def _complete(self, policy_id: str, rows: SampleBatch) -> SampleBatch:
        if policy_id not in self.worker.policy_map:
            raise ValueError(
                f"input holds rows of policy {policy_id!r}, which this worker does not have "
                f"(its policies: {sorted(self.worker.policy_map.keys())})"
            )
        policy = self.worker.policy_map[policy_id]
        rows = standard_columns(rows)
        if self.always or needs_postprocessing(policy, rows):
            return postprocess_rows(policy, rows)
        return rows

    def pop_metrics(self) -> list[EpisodeMetrics]:
        pop = getattr(self.child, "pop_metrics", None)
        return list(pop()) if pop is not None else []

    def close(self) -> None:
        close_reader(self.child)


def _single_policy_id(worker: Any) -> str:
    ids = list(worker.policy_map.keys())
    if len(ids) != 1:
        raise ValueError(
            f"input returned a SampleBatch but the worker has {len(ids)} policies "
            f"({sorted(ids)}); a multi-agent input gives a MultiAgentBatch keyed by policy id"
        )
    return str(ids[0])


def make_input_reader(
    worker: Any,
    ioctx: IOContext,
    sample: Callable[[], SampleBatch | MultiAgentBatch],
) -> InputReader | None:
    """The worker's input, or None when it samples its envs (``input="sampler"``, or a
    function that returned None for it)."""
    settings = settings_of(InputSettings, worker.config, "input")
    source = settings.input
    seed = None if settings.seed is None else int(settings.seed) + ioctx.worker_index
    if isinstance(source, str) and source == "sampler":
        return None
    reader: Any
    if isinstance(source, Mapping):
        readers = {
            str(name): (
                SamplerInput(sample)
                if name == "sampler"
                else _completed(_source_reader(str(name), ioctx, settings), worker, settings)
            )
            for name in source
        }
        reader = MixedInput(readers, {str(k): float(v) for k, v in source.items()}, seed)
    elif callable(source):
        made = source(ioctx)
        if made is None:
            return None
        if not callable(getattr(made, "next", None)):
            raise TypeError(
                f"input={source!r} returned a {type(made).__name__}; allowed: a reader with a "
                "next() method (runtime.offline.InputReader), or None for a worker that samples "
                "its envs"
            )
        reader = _completed(made, worker, settings)
    else:
        reader = _completed(_source_reader(source, ioctx, settings), worker, settings)
    if int(settings.shuffle_buffer_size) > 0:
        reader = ShuffledInput(reader, int(settings.shuffle_buffer_size), seed)
    return reader  # type: ignore[no-any-return]


def _source_reader(source: Any, ioctx: IOContext, settings: InputSettings) -> Any:
    if source == "dataset":
        # RLlib 2.x's dataset input: the files are named by input_config.
        options = dict(settings.input_config)
        if options.get("format") != "json" or not options.get("path"):
            raise ValueError(
                f"input='dataset' with input_config={options!r}: rlconf reads datasets of "
                "experience files, input_config={'format': 'json', 'path': <file, folder or "
                "glob>}; or give the path as input itself"
            )
        return JsonReader(options["path"], ioctx)
    if isinstance(source, str) and source.startswith(MINARI_SCHEME):
        from runtime.offline.minari_input import MinariReader

        return MinariReader(source[len(MINARI_SCHEME) :], ioctx)
    return JsonReader(source, ioctx)


def _completed(reader: Any, worker: Any, settings: InputSettings) -> InputReader:
    space = worker.action_space
    # A reader may say which space its actions are in (a Minari dataset: the env's).
    normalized = bool(settings.actions_in_input_normalized) and not getattr(
        reader, "rows_in_env_space", False
    )
    # A policy server's or external env's rows hold the policy's own actions, as sampled rows.
    normalized = normalized or bool(getattr(reader, "rows_in_policy_space", False))
    if not worker.multi_agent and needs_normalizing(
        space, bool(settings.normalize_actions), normalized
    ):
        reader = NormalizingReader(reader, space)
    return PostprocessedInput(reader, worker, bool(settings.postprocess_inputs))


def external_input(worker: Any, sampler: Any) -> InputReader:
    """The input of a worker serving an ``ExternalEnv``: its sampler's rows (in the policy's
    coordinates already), completed for the worker's policies."""
    settings = settings_of(InputSettings, worker.config, "input")
    return PostprocessedInput(sampler, worker, bool(settings.postprocess_inputs))
