"""Which checkpoints of a run are kept: ``keep_checkpoints_num`` and ``checkpoint_score_attr``,
the reference's names (experiment-file keys, ``rlconf train`` flags, ``rlconf.sweep.run``
arguments).

``checkpoint_score_attr`` is a numeric result key, nested keys joined with ``/``
(``evaluation/episode_reward_mean``); higher is better, and a leading ``min-`` makes lower
better (``min-episode_len_mean``), as in Tune and RLlib. Without it checkpoints rank by
recency: the newest are kept.

A checkpoint's score is the key's value in the result it was written after. A result without
the key (an iteration that did not evaluate) or whose value is not a number (nan before the
first episode) gives the checkpoint the score of the latest result that had one: the policy's
last measurement, which is what RLlib's ``always_attach_evaluation_results`` attaches too. A
checkpoint written before any result had the key is unscored: it ranks below every scored
one, so it is the first to go; it never stops the run. Ties go to the newer checkpoint: the
older one is deleted first.

The latest checkpoint is always kept, as Tune keeps it (it is where a run goes on from, and
``rlconf train``'s Ctrl-C checkpoint is one): when it ranks below the best N it stays beside
them until a newer one replaces it, so at most N + 1 folders are there at any time.

``CheckpointKeeper`` applies this to the ``checkpoint_<iteration>`` folders ``rlconf train``
writes; sweeps hand the same rules to Tune (``runtime.sweeps.tune_run``), each trial scoring
its checkpoints with ``ScoreTracker``.
"""

from __future__ import annotations

import logging
import math
import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from rlconf.algorithm_config import AlgorithmConfig
from rlconf.errors import FieldIssue
from rlconf.stop_criteria import lookup, result_key_issues

logger = logging.getLogger(__name__)

#: The prefix of a ``checkpoint_score_attr`` whose lower values are better.
MIN_PREFIX = "min-"

_SCORE_ALLOWED = (
    "a numeric result key, nested keys joined with '/', higher is better: episode_reward_mean, "
    "evaluation/episode_reward_mean, ...; min-KEY when lower is better (min-episode_len_mean); "
    "`rlconf result-keys` lists them"
)

ScoreOrder = Literal["max", "min"]


def parse_score_attr(attr: str) -> tuple[str, ScoreOrder]:
    """``("evaluation/episode_reward_mean", "max")`` for ``"evaluation/episode_reward_mean"``,
    ``("episode_len_mean", "min")`` for ``"min-episode_len_mean"``."""
    if attr.startswith(MIN_PREFIX):
        return attr[len(MIN_PREFIX) :], "min"
    return attr, "max"


def keep_num_issues(value: Any, name: str) -> list[FieldIssue]:
    """The problem of a ``keep_checkpoints_num`` (None: keep every checkpoint)."""
    if value is None:
        return []
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        return [
            FieldIssue(
                name,
                "must be an integer >= 1",
                value,
                allowed="N: keep the best N checkpoints (and the latest); unset: keep all",
            )
        ]
    return []


def score_attr_issues(value: Any, name: str, config: AlgorithmConfig | None) -> list[FieldIssue]:
    """The problems of a ``checkpoint_score_attr`` (None: rank by recency), checked as a stop
    key is: a numeric result key, an evaluation key only where evaluation runs."""
    if value is None:
        return []
    if not isinstance(value, str) or not parse_score_attr(value)[0]:
        return [FieldIssue(name, "must be a result key", value, allowed=_SCORE_ALLOWED)]
    key, _ = parse_score_attr(value)
    return result_key_issues(
        key, name, config, value=value, has_value=True, use="ranked", allowed=_SCORE_ALLOWED
    )


def unsaved_score_issues(
    value: Any, name: str, checkpoint_freq: Any, checkpoint_at_end: bool
) -> list[FieldIssue]:
    """A ``checkpoint_score_attr`` where no checkpoint is saved: nothing would be kept, which
    is almost certainly not what was meant."""
    if value is None or checkpoint_freq or checkpoint_at_end:
        return []
    return [
        FieldIssue(
            name,
            "ranks the checkpoints to keep, but none are saved (checkpoint_freq is 0 and "
            "checkpoint_at_end is off): nothing would be kept",
            value,
            allowed="checkpoint_freq: N or checkpoint_at_end: true (--checkpoint-freq N, "
            "--checkpoint-at-end)",
        )
    ]


def as_score(value: Any) -> float | None:
    """``value`` as a checkpoint's score: a number, not nan (nan and anything else: None)."""
    if isinstance(value, int | float) and not isinstance(value, bool) and not math.isnan(value):
        return float(value)
    return None


class ScoreTracker:
    """The score of each result for one ``checkpoint_score_attr``: the key's value, or the
    latest one a result had (see the module docstring); None before any had one."""

    def __init__(self, attr: str) -> None:
        self.attr = attr
        self.key, self.order = parse_score_attr(attr)
        self._latest: float | None = None

    def observe(self, result: Mapping[str, Any]) -> float | None:
        """The score of ``result``, remembered for the results after it."""
        score = as_score(lookup(result, self.key))
        if score is not None:
            self._latest = score
        return self._latest

    def reset(self) -> None:
        """Forget the scores seen (a new trial in the same actor, a restored checkpoint)."""
        self._latest = None


def rank(score: float | None, order: ScoreOrder, sequence: int) -> tuple[bool, float, int]:
    """What orders checkpoints, worst first: unscored below scored, then by score (negated for
    ``min``), then by ``sequence`` (the save order: on a tie the older one is worse)."""
    if score is None:
        return (False, 0.0, sequence)
    return (True, score if order == "max" else -score, sequence)


@dataclass(frozen=True)
class KeptCheckpoint:
    """A checkpoint folder the keeper holds."""

    path: str
    #: None when no score attr is given, or no result had the key yet.
    score: float | None
    #: The order it was saved in (0, 1, ...).
    sequence: int


class CheckpointKeeper:
    """Keeps the best ``keep_num`` checkpoint folders of a run (all when None) by
    ``score_attr`` (the newest when None), and always the latest; deletes the others.

    Call ``saved(path, result)`` after each checkpoint is written, with the result it was
    written after; ``observe(result)`` with every other result lets an iteration without the
    score key (no evaluation) carry the latest score to the next checkpoint. Only folders given
    to ``saved`` are ever deleted.
    """

    def __init__(self, keep_num: int | None, score_attr: str | None) -> None:
        self.keep_num = keep_num
        self.score_attr = score_attr
        self._tracker = ScoreTracker(score_attr) if score_attr is not None else None
        self._kept: list[KeptCheckpoint] = []
        self._sequence = 0
        self._noted_unscored = False

    @property
    def order(self) -> ScoreOrder:
        return self._tracker.order if self._tracker is not None else "max"

    def observe(self, result: Mapping[str, Any]) -> None:
        """Note ``result``'s score (for the next checkpoint, should it have none)."""
        if self._tracker is not None:
            self._tracker.observe(result)

    def saved(self, path: str | os.PathLike[str], result: Mapping[str, Any]) -> list[str]:
        """Record the checkpoint just written to ``path`` after ``result``; delete the
        folders that fall out of the kept set. Returns the paths deleted."""
        folder = os.fspath(path)
        score = self._tracker.observe(result) if self._tracker is not None else None
        if self._tracker is not None and score is None:
            self._note_unscored(folder, self._tracker.key)
        # The same folder written again (checkpoint_at_end right after a checkpoint_freq
        # save, Ctrl-C's checkpoint): one checkpoint, now the newest.
        self._kept = [k for k in self._kept if k.path != folder]
        self._kept.append(KeptCheckpoint(folder, score, self._sequence))
        self._sequence += 1
        if self.keep_num is None:
            return []
        latest = self._kept[-1]
        ranked = sorted(self._kept, key=self._rank, reverse=True)
        keep = {k.path for k in ranked[: self.keep_num]} | {latest.path}
        dropped = [k for k in self._kept if k.path not in keep]
        self._kept = [k for k in self._kept if k.path in keep]
        for checkpoint in dropped:
            _delete(checkpoint.path)
        return [k.path for k in dropped]

    @property
    def kept(self) -> list[KeptCheckpoint]:
        """The checkpoints kept, oldest first."""
        return list(self._kept)

    @property
    def best(self) -> str | None:
        """The best kept checkpoint by the score attr (on a tie the newer; an unscored one
        only when none has a score); the latest without a score attr; None before the
        first."""
        if not self._kept:
            return None
        if self._tracker is None:
            return self._kept[-1].path
        return max(self._kept, key=self._rank).path

    def _rank(self, checkpoint: KeptCheckpoint) -> tuple[bool, float, int]:
        return rank(checkpoint.score, self.order, checkpoint.sequence)

    def _note_unscored(self, folder: str, key: str) -> None:
        if not self._noted_unscored:  # once: every checkpoint before the first score is one
            self._noted_unscored = True
            logger.warning(
                "%s: no result so far has %s, so this checkpoint is unscored: it ranks below "
                "every scored one",
                folder,
                key,
            )


def _delete(path: str) -> None:
    try:
        shutil.rmtree(path)
    except FileNotFoundError:
        pass  # already gone: nothing to keep or free
    except OSError as exc:
        # A folder that can't be removed must not stop the training that made it.
        logger.warning("could not delete the checkpoint %s: %s", path, exc)
