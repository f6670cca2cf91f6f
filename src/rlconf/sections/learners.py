"""``AlgorithmConfig.learners()``: RLlib's new API stack home of the learner workers' settings,
each one setting with its ``resources()`` twin (``num_learners`` is ``num_learner_workers``)."""

from __future__ import annotations

from typing_extensions import TypedDict

from rlconf.section import Section


class LearnersArgs(TypedDict, total=False):
    """No fields of its own: every keyword sets a key of ``resources()``."""


LEARNERS = Section(
    method="learners",
    fields=LearnersArgs,
    doc="Sets the learner workers: the settings of resources(), under the new API stack's names.",
    defaults={},
    keywords=("num_learners", "num_cpus_per_learner", "num_gpus_per_learner"),
)
