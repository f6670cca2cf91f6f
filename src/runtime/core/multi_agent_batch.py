"""``MultiAgentBatch``: sample batches keyed by policy id, with the env steps they came from.

Every batch on its way from the samplers to the learners is one of these; a single-agent run is
the case of one policy (``default_policy``). Agent steps (rows over all policies) and env steps
are counted apart: in a multi-agent env one env step yields a row for every acting agent.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

from rlconf.config_checks import DEFAULT_POLICY_ID
from runtime.core.sample_batch import SampleBatch


class MultiAgentBatch:
    def __init__(self, policy_batches: Mapping[str, SampleBatch], env_steps: int) -> None:
        self.policy_batches: dict[str, SampleBatch] = dict(policy_batches)
        self.count = int(env_steps)

    @staticmethod
    def wrap(batch: SampleBatch | MultiAgentBatch) -> MultiAgentBatch:
        """``batch`` keyed by policy id: a SampleBatch becomes the ``default_policy``'s."""
        if isinstance(batch, MultiAgentBatch):
            return batch
        return MultiAgentBatch({DEFAULT_POLICY_ID: batch}, len(batch))

    def env_steps(self) -> int:
        return self.count

    def agent_steps(self) -> int:
        return sum(len(b) for b in self.policy_batches.values())

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, policy_id: str) -> SampleBatch:
        try:
            return self.policy_batches[policy_id]
        except KeyError:
            known = ", ".join(self.policy_batches) or "none"
            raise KeyError(f"no batch for policy {policy_id!r}; policies: {known}") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self.policy_batches)

    def __contains__(self, policy_id: object) -> bool:
        return policy_id in self.policy_batches

    def items(self) -> Iterable[tuple[str, SampleBatch]]:
        return self.policy_batches.items()

    def __repr__(self) -> str:
        parts = ", ".join(f"{pid}: {len(b)}" for pid, b in self.policy_batches.items())
        return f"MultiAgentBatch({self.count} env steps; {parts})"

    @staticmethod
    def concat_samples(batches: Iterable[SampleBatch | MultiAgentBatch]) -> MultiAgentBatch:
        """One batch with each policy's rows of ``batches`` in order."""
        per_policy: dict[str, list[SampleBatch]] = {}
        env_steps = 0
        for batch in batches:
            wrapped = MultiAgentBatch.wrap(batch)
            env_steps += wrapped.count
            for pid, part in wrapped.items():
                per_policy.setdefault(pid, []).append(part)
        return MultiAgentBatch(
            {pid: SampleBatch.concat_samples(parts) for pid, parts in per_policy.items()},
            env_steps,
        )
