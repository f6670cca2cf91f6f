"""``Counters``: the algorithm's step counters, one object (``Algorithm._counters``, made by the
result bookkeeping and saved in checkpoints): env and agent steps sampled and trained, target
network updates, and any count a custom training step keeps (``self._counters["x"] += 1``).
A count never touched reads 0.

Each policy's (module's) sampled and trained rows are counted too, under
``num_module_steps_sampled:<policy id>`` and ``num_module_steps_trained:<policy id>`` (saved in
checkpoints with the rest; ``per_module`` reads them, ``step_counts`` leaves them out), and the
counts when the last result was compiled are kept, so a result can tell what this iteration
added (``since_result``)."""

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
NUM_MODULE_STEPS_SAMPLED = "num_module_steps_sampled"
NUM_MODULE_STEPS_TRAINED = "num_module_steps_trained"
#: The per-module counts: ``f"{name}{MODULE_SEPARATOR}{policy id}"``.
MODULE_SEPARATOR = ":"
_MODULE_PREFIXES = tuple(
    name + MODULE_SEPARATOR for name in (NUM_MODULE_STEPS_SAMPLED, NUM_MODULE_STEPS_TRAINED)
)


class Counters(defaultdict[str, int]):
    def __init__(self, values: Mapping[str, Any] | Iterable[tuple[str, Any]] = ()) -> None:
        items = values.items() if isinstance(values, Mapping) else values
        super().__init__(int, {str(k): int(v) for k, v in items})
        # Restored counters start from their own values: what an iteration adds is counted
        # from there.
        self._at_result: dict[str, int] = dict(self)

    def count_sampled(self, batch: MultiAgentBatch) -> None:
        self[NUM_ENV_STEPS_SAMPLED] += batch.env_steps()
        self[NUM_AGENT_STEPS_SAMPLED] += batch.agent_steps()
        self._count_modules(NUM_MODULE_STEPS_SAMPLED, batch)

    def count_trained(self, batch: MultiAgentBatch) -> None:
        self[NUM_ENV_STEPS_TRAINED] += batch.env_steps()
        self[NUM_AGENT_STEPS_TRAINED] += batch.agent_steps()
        self._count_modules(NUM_MODULE_STEPS_TRAINED, batch)

    def _count_modules(self, name: str, batch: MultiAgentBatch) -> None:
        for policy_id, rows in batch.items():
            self[f"{name}{MODULE_SEPARATOR}{policy_id}"] += len(rows)

    def per_module(self, name: str) -> dict[str, int]:
        """``{policy id: count}`` of ``NUM_MODULE_STEPS_SAMPLED`` or ``..._TRAINED``."""
        prefix = name + MODULE_SEPARATOR
        return {k[len(prefix) :]: v for k, v in self.items() if k.startswith(prefix)}

    def step_counts(self) -> dict[str, int]:
        """Every count but the per-module ones (what ``result["info"]`` shows)."""
        return {k: v for k, v in self.items() if not k.startswith(_MODULE_PREFIXES)}

    def since_result(self, name: str) -> int:
        """What count ``name`` grew by since the last result (``result_compiled``)."""
        return self[name] - self._at_result.get(name, 0)

    def module_since_result(self, name: str) -> dict[str, int]:
        """``per_module(name)``, each grown by since the last result."""
        prefix = name + MODULE_SEPARATOR
        return {m: n - self._at_result.get(prefix + m, 0) for m, n in self.per_module(name).items()}

    def result_compiled(self) -> None:
        """Mark the counts a result has reported."""
        self._at_result = dict(self)

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
