"""The note a build logs when one training iteration will sample (and an on-policy algorithm
then train on) far more than ``train_batch_size``.

An on-policy iteration samples rounds of ``rollout_fragment_length`` steps of every sub-env of
every rollout worker (the local worker when there are none) until ``train_batch_size`` steps
are in, and learns on all of them: with a reference file's ``train_batch_size: 512`` and 20
sub-envs, the default fragment of 200 makes each iteration train on 4,000 rows. More than
twice ``train_batch_size`` is named in a warning with the fix (``rollout_fragment_length=
"auto"``, which sizes the fragment to fill ``train_batch_size``, or a smaller fragment).

Off-policy algorithms (their config class ``_replays``) replay minibatches of
``train_batch_size`` whatever they sample, and an iteration reading offline input reads the
input's batches: neither gets the note.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any

from rlconf.algorithm_config import AlgorithmConfig
from runtime.core.settings import settings_of

logger = logging.getLogger(__name__)

#: How many times ``train_batch_size`` one round may sample before the build warns.
OVERSIZE_FACTOR = 2


@dataclass(frozen=True)
class SampleSizeSettings:
    train_batch_size: int
    rollout_fragment_length: Any
    num_envs_per_worker: int
    num_workers: int
    input: Any
    count_steps_by: str


def oversized_sample_note(config: AlgorithmConfig, name: str) -> str | None:
    """The warning for ``config`` (None when an iteration samples at most twice
    ``train_batch_size``, for ``"auto"``, off-policy algorithms and offline input)."""
    if type(config)._replays:
        return None
    settings = settings_of(SampleSizeSettings, config, name)
    fragment = settings.rollout_fragment_length
    if fragment == "auto" or settings.input != "sampler":
        return None
    train = int(settings.train_batch_size)
    envs = int(settings.num_envs_per_worker)
    workers = max(1, int(settings.num_workers))
    per_round = envs * workers
    sampled = int(fragment) * per_round
    if sampled <= OVERSIZE_FACTOR * train:
        return None
    unit = "agent steps" if settings.count_steps_by == "agent_steps" else "env steps"
    shape = f"rollout_fragment_length={fragment} x num_envs_per_worker={envs}"
    shape += f" x num_workers={workers}" if settings.num_workers else " on the local worker"
    auto = math.ceil(train / per_round)
    if auto * per_round <= OVERSIZE_FACTOR * train:
        fix = (
            f"set rollout_fragment_length='auto' ({auto} here: {auto * per_round} {unit} per "
            "iteration) or a smaller fragment"
        )
    else:
        fix = (
            f"lower num_envs_per_worker or num_workers, or raise train_batch_size: even a "
            f"fragment of 1 samples {per_round} {unit} per round"
        )
    return (
        f"{name}: each training iteration samples and trains on at least {sampled} {unit} "
        f"({shape}), "
        f"{sampled / train:.1f} times train_batch_size={train}; to train on about "
        f"train_batch_size rows, {fix}"
    )


def note_oversized_sample(config: AlgorithmConfig, name: str) -> None:
    """Log ``oversized_sample_note`` as a warning when there is one."""
    note = oversized_sample_note(config, name)
    if note is not None:
        logger.warning("%s", note)
