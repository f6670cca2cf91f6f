"""Training input read from files (``input``), with the reference's action normalisation:
unless ``actions_in_input_normalized``, Box actions in the files are taken to be env actions
and, with ``normalize_actions``, mapped into the policy's [-1, 1] space as they are read."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

from rlconf.algorithm_config import AlgorithmConfig
from runtime.core.sample_batch import SampleBatch
from runtime.core.settings import settings_of
from runtime.offline.batch_files import BatchReader, input_files


@dataclass(frozen=True)
class InputSettings:
    """What the training input is read from (``"sampler"``: no files) and whether its actions
    are normalised as they are read."""

    input: Any
    actions_in_input_normalized: bool
    normalize_actions: bool


class NormalizingReader:
    """A reader whose batches have their actions normalised into the policy's space (the
    inverse of the unsquashing the env runner applies to the policy's actions)."""

    def __init__(self, reader: BatchReader, space: gym.spaces.Box) -> None:
        self.reader = reader
        self.low = space.low
        self.span = space.high - space.low

    def next(self) -> SampleBatch:
        batch = self.reader.next()
        actions = np.asarray(batch[SampleBatch.ACTIONS], dtype=np.float64)
        batch[SampleBatch.ACTIONS] = (2.0 * (actions - self.low) / self.span - 1.0).astype(
            np.float32
        )
        return batch


def input_reader(
    config: AlgorithmConfig, action_space: gym.Space[Any]
) -> BatchReader | NormalizingReader | None:
    """The reader of the configured input files; None when the input is the sampler."""
    settings = settings_of(InputSettings, config, "input reader")
    if settings.input == "sampler":
        return None
    reader = BatchReader(input_files(settings.input))
    if (
        not settings.actions_in_input_normalized
        and settings.normalize_actions
        and isinstance(action_space, gym.spaces.Box)
        and np.all(np.isfinite(action_space.low))
        and np.all(np.isfinite(action_space.high))
    ):
        return NormalizingReader(reader, action_space)
    return reader
