"""One set of columns per policy for the batches of a mixed input (``input={source: p, ...}``).

What consumes a worker's batches needs every batch of a policy to hold the same columns: the
on-policy algorithms concatenate them into a train batch, the off-policy ones store them in a
replay buffer whose columns are fixed by its first rows. The sources of a mix rarely agree:
each reader's rows are already completed for the reading policy (the columns its
postprocessing adds are computed where missing: ``PostprocessedInput``), but what is left
differs with who wrote them: another algorithm's postprocessing (PG's ``advantages`` and
``value_targets`` in files DQN reads), a writer's bookkeeping (``SampleBatchBuilder``'s
``agent_index``, ``prev_actions``, ``action_prob``), or the sampler's own (``env_id``,
``action_dist_inputs``).

So a mix keeps, for each policy, the columns that every source gives it (learned from one batch
of each source before the first batch is handed out) and drops the others from every batch. A
column only some sources have can't be filled in for the others (nothing computes a writer's
``agent_index`` or the behaviour policy's ``action_dist_inputs`` after the fact), so it is
dropped from all of them alike.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from rlconf.config_checks import DEFAULT_POLICY_ID
from runtime.core.multi_agent_batch import MultiAgentBatch
from runtime.core.sample_batch import SampleBatch

Batch = SampleBatch | MultiAgentBatch


def columns_by_policy(batch: Batch) -> dict[str, frozenset[str]]:
    """Each policy's columns in ``batch`` (a ``SampleBatch`` is the ``default_policy``'s, as
    every consumer of a worker's batches takes it)."""
    return {pid: frozenset(rows.columns) for pid, rows in MultiAgentBatch.wrap(batch).items()}


def common_columns(batches: Iterable[Batch]) -> dict[str, frozenset[str]]:
    """For each policy any of ``batches`` has rows of, the columns all of those that have its
    rows give it."""
    common: dict[str, frozenset[str]] = {}
    for batch in batches:
        for pid, columns in columns_by_policy(batch).items():
            common[pid] = common[pid] & columns if pid in common else columns
    return common


def dropped_columns(
    batches: Mapping[str, Batch], common: Mapping[str, frozenset[str]]
) -> dict[str, list[str]]:
    """By source name, the columns (``"policy: column"`` with several policies) its batch has
    beyond ``common``."""
    out: dict[str, list[str]] = {}
    several = len(common) > 1
    for name, batch in batches.items():
        extra = [
            f"{pid}: {column}" if several else column
            for pid, columns in columns_by_policy(batch).items()
            for column in sorted(columns - common.get(pid, columns))
        ]
        if extra:
            out[name] = extra
    return out


def keep_columns(batch: Batch, common: Mapping[str, frozenset[str]], source: str) -> Batch:
    """``batch`` with each policy's rows cut down to ``common``'s columns for it (a policy that
    ``common`` does not name keeps its rows as they are). Raises ``ValueError`` when a batch
    lacks a column its source's first batch (or every other source) gave that policy."""
    if isinstance(batch, SampleBatch):
        return _kept(batch, DEFAULT_POLICY_ID, common, source)
    return MultiAgentBatch(
        {pid: _kept(rows, pid, common, source) for pid, rows in batch.items()}, batch.env_steps()
    )


def _kept(
    rows: SampleBatch, pid: str, common: Mapping[str, frozenset[str]], source: str
) -> SampleBatch:
    keep = common.get(pid)
    if keep is None or (len(rows) == 0 and not rows.columns):
        return rows
    missing = sorted(keep - set(rows.columns))
    if missing:
        raise ValueError(
            f"input source {source!r} gave rows of policy {pid!r} without the columns "
            f"{missing}, which every source of the mixed input gave before (its rows have "
            f"{sorted(rows.columns)}): a source's batches must hold the same columns"
        )
    if len(keep) == len(rows.columns):
        return rows
    return SampleBatch({name: values for name, values in rows.items() if name in keep})
