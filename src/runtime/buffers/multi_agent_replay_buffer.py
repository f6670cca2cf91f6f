"""``MultiAgentReplayBuffer``: the off-policy algorithms' buffers, one per policy id, as one
object: RLlib's ``algo.local_replay_buffer``, what custom ``training_step`` code and RLlib's own
tests reach for (``add`` a sampled batch, ``sample`` a minibatch, ``replay_buffers[pid]``).

It owns no rows: it is a view over ``OffPolicyAlgorithm.replay_buffers``, so what the training
loop stores is what it samples, and what is added through it is replayed by the loop."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from runtime.buffers.replay_buffer import ReplayBuffer
from runtime.core.multi_agent_batch import MultiAgentBatch
from runtime.core.sample_batch import SampleBatch


class MultiAgentReplayBuffer:
    def __init__(
        self, buffers: dict[str, ReplayBuffer], buffer_of: Callable[[str], ReplayBuffer]
    ) -> None:
        self._buffers = buffers
        # Makes a policy's buffer on its first batch (the algorithm's own settings and seed).
        self._buffer_of = buffer_of

    @property
    def replay_buffers(self) -> dict[str, ReplayBuffer]:
        """Policy id -> its buffer (made when its first batch arrived)."""
        return self._buffers

    def __len__(self) -> int:
        """Rows stored over all policies."""
        return sum(len(buffer) for buffer in self._buffers.values())

    def add(self, batch: SampleBatch | MultiAgentBatch) -> None:
        """Store each policy's rows in its buffer (a SampleBatch is the ``default_policy``'s)."""
        for policy_id, policy_batch in MultiAgentBatch.wrap(batch).policy_batches.items():
            self._buffer_of(policy_id).add(policy_batch)

    def sample(self, num_items: int, policy_id: str | None = None) -> MultiAgentBatch:
        """``num_items`` rows from the buffer of ``policy_id``, or from each buffer that holds
        rows; an empty batch when none does."""
        if policy_id is not None and policy_id not in self._buffers:
            known = ", ".join(repr(p) for p in self._buffers) or "none yet"
            raise KeyError(
                f"local_replay_buffer.sample: no buffer for policy {policy_id!r}; buffers: {known}"
            )
        chosen = [policy_id] if policy_id is not None else list(self._buffers)
        batches = {
            pid: self._buffers[pid].sample(int(num_items))
            for pid in chosen
            if len(self._buffers[pid]) > 0
        }
        return MultiAgentBatch(batches, int(num_items) if batches else 0)

    def stored_bytes(self) -> int:
        """Bytes the stored rows of all policies hold (``ReplayBuffer.stored_bytes``)."""
        return sum(buffer.stored_bytes() for buffer in self._buffers.values())

    def stats(self) -> dict[str, Any]:
        """Per policy: rows held, capacity, rows ever added and the bytes the rows hold
        (``est_size_bytes``, RLlib's name)."""
        return {
            pid: {
                "num_entries": len(buffer),
                "capacity": buffer.capacity,
                "num_added": buffer.num_added,
                "est_size_bytes": buffer.stored_bytes(),
            }
            for pid, buffer in self._buffers.items()
        }
