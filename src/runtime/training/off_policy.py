"""``OffPolicyAlgorithm``: the base of algorithms that learn from replayed experience (DQN,
SAC, TD3, DDPG). Each training step:

1. samples one round from the rollout workers (``rollout_fragment_length`` steps per sub-env,
   postprocessed by the workers with the algorithm's steps, e.g. n-step returns);
2. adds it to each policy's replay buffer;
3. once ``num_steps_sampled_before_learning_starts`` env steps are in, replays minibatches of
   ``train_batch_size`` rows and updates the learners on them: one per round, or as many as
   keep replayed / sampled steps at ``training_intensity``;
4. every ``target_network_update_freq`` sampled env steps, moves the learners' target networks
   towards their sources (``tau``: 1.0 copies);
5. sends the new weights out.

The settings are read from the config when the algorithm's config class has them, with the
defaults below otherwise (``replay_buffer_config``: ``{"capacity": ...}``).
"""

from __future__ import annotations

import math
from typing import Any

from runtime.algorithm import Algorithm
from runtime.buffers.replay_buffer import ReplayBuffer
from runtime.core.multi_agent_batch import MultiAgentBatch

DEFAULT_CAPACITY = 50_000


class OffPolicyAlgorithm(Algorithm):
    #: One buffer per policy id, made when the policy's first batch arrives.
    replay_buffers: dict[str, ReplayBuffer]

    def _build(self) -> None:
        self.replay_buffers = {}
        super()._build()

    def training_step(self) -> dict[str, Any]:
        sampled = self.sample_and_store()
        learner_info: dict[str, Any] = {}
        total = self._counters["num_env_steps_sampled"]
        if total >= int(self.config.get("num_steps_sampled_before_learning_starts", 0) or 0):
            for _ in range(self.replay_rounds(sampled.env_steps())):
                learner_info = self.learn_on_batch(self.replay())
            self.maybe_update_targets()
        self.sync_weights()
        return {"info": {"learner": learner_info}}

    # ------------------------------------------------------------------ stages

    def sample_and_store(self) -> MultiAgentBatch:
        """One sampling round, added to the replay buffers; returns it."""
        self.workers.local_worker().set_global_vars(
            {"timestep": self._counters["num_env_steps_sampled"]}
        )
        batch = MultiAgentBatch.concat_samples(self.sample_round())
        self._counters["num_env_steps_sampled"] += batch.env_steps()
        self._counters["num_agent_steps_sampled"] += batch.agent_steps()
        for pid, policy_batch in batch.items():
            self.replay_buffer(pid).add(policy_batch)
        return batch

    def replay_buffer(self, policy_id: str) -> ReplayBuffer:
        """The replay buffer of ``policy_id`` (made on first use)."""
        buffers = self.replay_buffers
        if policy_id not in buffers:
            settings = dict(self.config.get("replay_buffer_config") or {})
            seed = self.config.get("seed")
            buffers[policy_id] = ReplayBuffer(
                int(settings.get("capacity", DEFAULT_CAPACITY)),
                seed=None if seed is None else int(seed),
            )
        buffer: ReplayBuffer = buffers[policy_id]
        return buffer

    def replay_rounds(self, sampled: int) -> int:
        """How many minibatches to replay after sampling ``sampled`` env steps."""
        intensity = self.config.get("training_intensity")
        if intensity is None:
            return 1
        replayed_per_round = int(self.config["train_batch_size"])
        return max(1, math.floor(float(intensity) * sampled / replayed_per_round + 0.5))

    def replay(self) -> MultiAgentBatch:
        """A minibatch of ``train_batch_size`` rows from each policy's buffer."""
        size = int(self.config["train_batch_size"])
        return MultiAgentBatch(
            {pid: buffer.sample(size) for pid, buffer in self.replay_buffers.items()}, size
        )

    def maybe_update_targets(self) -> None:
        """Update the target networks when ``target_network_update_freq`` env steps have been
        sampled since the last update."""
        freq = int(self.config.get("target_network_update_freq", 0) or 0)
        total = self._counters["num_env_steps_sampled"]
        last = self._counters["last_target_update_ts"]
        if total - last < freq:
            return
        tau = float(self.config.get("tau", 1.0))
        for policy in self.workers.local_worker().policy_map.values():
            policy.learner.update_target_networks(tau)
        self._counters["last_target_update_ts"] = total
        self._counters["num_target_updates"] += 1
