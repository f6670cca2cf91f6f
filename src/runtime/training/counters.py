"""``Counters``: the algorithm's step counters, one object (``Algorithm._counters``, made by the
result bookkeeping and saved in checkpoints): env and agent steps sampled and trained, target
network updates, and any count a custom training step keeps (``self._counters["x"] += 1``).
A count never touched reads 0."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from runtime.core.multi_agent_batch import MultiAgentBatch

NUM_ENV_STEPS_SAMPLED = "num_env_steps_sampled"
NUM_AGENT_STEPS_SAMPLED = "num_agent_steps_sampled"
NUM_ENV_STEPS_TRAINED = "num_env_steps_trained"
NUM_AGENT_STEPS_TRAINED = "num_agent_steps_trained"
LAST_TARGET_UPDATE_TS = "last_target_update_ts"
NUM_TARGET_UPDATES = "num_target_updates"


class Counters(defaultdict[str, int]):
    def __init__(self, values: Mapping[str, Any] | Iterable[tuple[str, Any]] = ()) -> None:
        items = values.items() if isinstance(values, Mapping) else values
        super().__init__(int, {str(k): int(v) for k, v in items})

    def count_sampled(self, batch: MultiAgentBatch) -> None:
        self[NUM_ENV_STEPS_SAMPLED] += batch.env_steps()
        self[NUM_AGENT_STEPS_SAMPLED] += batch.agent_steps()

    def count_trained(self, batch: MultiAgentBatch) -> None:
        self[NUM_ENV_STEPS_TRAINED] += batch.env_steps()
        self[NUM_AGENT_STEPS_TRAINED] += batch.agent_steps()

    def count_target_update(self) -> None:
        self[LAST_TARGET_UPDATE_TS] = self[NUM_ENV_STEPS_SAMPLED]
        self[NUM_TARGET_UPDATES] += 1

    @property
    def env_steps_sampled(self) -> int:
        return self[NUM_ENV_STEPS_SAMPLED]

    @property
    def env_steps_trained(self) -> int:
        return self[NUM_ENV_STEPS_TRAINED]

    @property
    def env_steps_since_target_update(self) -> int:
        return self[NUM_ENV_STEPS_SAMPLED] - self[LAST_TARGET_UPDATE_TS]
