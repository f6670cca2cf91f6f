"""``OffPolicyAlgorithm``: the base of algorithms that learn from replayed experience (DQN,
SAC, TD3, DDPG). Each training step:

1. samples one round from the rollout workers (``rollout_fragment_length`` steps per sub-env,
   postprocessed by the workers with the algorithm's steps, e.g. n-step returns);
2. adds it to each policy's replay buffer;
3. once ``num_steps_sampled_before_learning_starts`` env steps are in, replays minibatches of
   ``train_batch_size`` rows from each policy's buffer that holds at least
   ``replay_buffer_config["min_size_for_sampling"]`` rows (none before both hold) and updates
   the learners on them (each minibatch through ``before_learn_on_batch`` first, where set):
   one per round, or as many as
   keep replayed / sampled steps at ``training_intensity``; after each update a prioritized
   buffer gets its rows' new priorities from the TD errors the learner returns
   (``info["td_error"]``, one per replayed row, taken out of the reported info);
4. every ``target_network_update_freq`` sampled env steps, moves the learners' target networks
   towards their sources (``tau``: 1.0 copies);
5. sends the new weights out.

The settings (``OffPolicySettings``: the config's off-policy section, ``OffPolicyArgs``) are
built at build; a config class without one of them is refused there, naming it
(``replay_buffer_config``: ``rlconf.replay_buffer_config``, its keys left out taking
``REPLAY_BUFFER_DEFAULTS``). With ``store_buffer_in_checkpoints`` the buffers
go into checkpoints as ``.npz`` arrays (``replay_buffers/<n>.npz``, their bookkeeping in the
checkpoint's JSON) and come back on restore.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from rlconf.replay_buffer_config import complete_replay_buffer_config
from runtime.algorithm import Algorithm
from runtime.buffers.factory import make_replay_buffer
from runtime.buffers.multi_agent_replay_buffer import MultiAgentReplayBuffer
from runtime.buffers.prioritized_replay_buffer import PrioritizedReplayBuffer
from runtime.buffers.replay_buffer import BATCH_INDEXES, ReplayBuffer
from runtime.core.multi_agent_batch import MultiAgentBatch
from runtime.core.settings import settings_of
from runtime.training.checkpoint_files import Arrays, read_arrays

#: The learner info key of the per-row TD errors (a numpy array aligned with the batch's rows).
TD_ERROR = "td_error"
#: The folder of the buffer files in a checkpoint.
BUFFERS_FOLDER = "replay_buffers"


@dataclass(frozen=True)
class OffPolicySettings:
    """What the off-policy training step reads: every replay algorithm's config declares it
    (``rlconf.algorithms.off_policy_fields.OffPolicyArgs``)."""

    replay_buffer_config: Mapping[str, Any]
    num_steps_sampled_before_learning_starts: int
    training_intensity: float | None
    target_network_update_freq: int
    tau: float
    store_buffer_in_checkpoints: bool
    train_batch_size: int
    seed: int | None
    #: Configs without the key (custom ones that declare only the others) have no hook.
    before_learn_on_batch: Callable[..., Any] | None = None


class OffPolicyAlgorithm(Algorithm):
    #: One buffer per policy id, made when the policy's first batch arrives.
    replay_buffers: dict[str, ReplayBuffer]

    def _build(self) -> None:
        # Read once, at build: a step runs every few env steps.
        self.off_policy = settings = settings_of(
            OffPolicySettings, self.config, type(self).__name__
        )
        self.replay_buffers = {}
        #: RLlib's name for the buffers, as one object (``add``, ``sample``, ``replay_buffers``).
        self.local_replay_buffer = MultiAgentReplayBuffer(self.replay_buffers, self.replay_buffer)
        self.learning_starts = int(settings.num_steps_sampled_before_learning_starts)
        intensity = settings.training_intensity
        self.training_intensity = None if intensity is None else float(intensity)
        self.target_update_freq = int(settings.target_network_update_freq)
        self.tau = float(settings.tau)
        self.buffer_settings = complete_replay_buffer_config(settings.replay_buffer_config)
        self.min_size_for_sampling = int(self.buffer_settings["min_size_for_sampling"])
        self.store_buffers = bool(settings.store_buffer_in_checkpoints)
        self.before_learn_on_batch = settings.before_learn_on_batch
        super()._build()

    def training_step(self) -> dict[str, Any]:
        sampled = self.sample_and_store()
        learner_info: dict[str, Any] = {}
        total = self._counters["num_env_steps_sampled"]
        if total >= self.learning_starts and self.buffers_to_replay():
            for _ in range(self.replay_rounds(sampled.env_steps())):
                replayed = self.replay()
                learner_info = self.learn_on_batch(replayed)
                self.update_priorities(replayed, learner_info)
            self.maybe_update_targets()
        self.sync_weights()
        return {"info": {"learner": learner_info}}

    # ------------------------------------------------------------------ stages

    def sample_and_store(self) -> MultiAgentBatch:
        """One sampling round, added to the replay buffers of the policies to train; returns
        it."""
        self.workers.local_worker().set_global_vars(
            {"timestep": self._counters["num_env_steps_sampled"]}
        )
        batch = MultiAgentBatch.concat_samples(self.sample_round())
        self._counters.count_sampled(batch)
        for pid, policy_batch in self.to_train(batch).items():
            self.replay_buffer(pid).add(policy_batch)
        return batch

    def replay_buffer(self, policy_id: str) -> ReplayBuffer:
        """The replay buffer of ``policy_id`` (made on first use)."""
        buffers = self.replay_buffers
        if policy_id not in buffers:
            seed = self.off_policy.seed
            buffers[policy_id] = make_replay_buffer(
                self.buffer_settings, seed=None if seed is None else int(seed)
            )
        buffer: ReplayBuffer = buffers[policy_id]
        return buffer

    def buffers_to_replay(self) -> dict[str, ReplayBuffer]:
        """The buffers of the policies to train that hold enough rows to replay from (at
        least one, and ``min_size_for_sampling``)."""
        worker = self.workers.local_worker()
        least = max(1, self.min_size_for_sampling)
        return {
            pid: buffer
            for pid, buffer in self.replay_buffers.items()
            if len(buffer) >= least and worker.is_policy_to_train(pid)
        }

    def replay_rounds(self, sampled: int) -> int:
        """How many minibatches to replay after sampling ``sampled`` env steps."""
        if self.training_intensity is None:
            return 1
        replayed_per_round = int(self.off_policy.train_batch_size)
        return max(1, math.floor(self.training_intensity * sampled / replayed_per_round + 0.5))

    def replay(self) -> MultiAgentBatch:
        """A minibatch of ``train_batch_size`` rows from the buffer of each policy to train
        that holds enough rows (``buffers_to_replay``), through ``before_learn_on_batch``
        where set."""
        size = int(self.off_policy.train_batch_size)
        batch = MultiAgentBatch(
            {pid: buffer.sample(size) for pid, buffer in self.buffers_to_replay().items()},
            size,
        )
        hook = self.before_learn_on_batch
        if hook is None:
            return batch
        changed = hook(batch, self.workers.local_worker().policy_map, size)
        if not isinstance(changed, MultiAgentBatch):
            raise TypeError(
                f"before_learn_on_batch {getattr(hook, '__qualname__', hook)!r} returned "
                f"{type(changed).__name__}; it must return the MultiAgentBatch to learn on"
            )
        return changed

    def update_priorities(self, replayed: MultiAgentBatch, learner_info: dict[str, Any]) -> None:
        """Give the replayed rows of each prioritized buffer the priorities of their TD errors
        (``learner_info[pid]["td_error"]``), and take the TD errors out of ``learner_info``:
        an array per update is no metric to report."""
        for pid, info in learner_info.items():
            td_error = info.pop(TD_ERROR, None) if isinstance(info, dict) else None
            buffer = self.replay_buffers.get(pid)
            if not isinstance(buffer, PrioritizedReplayBuffer):
                continue
            if td_error is None:
                # Without TD errors every row would keep the priority it was added with:
                # uniform replay that still pays for importance weights.
                raise RuntimeError(
                    f"policy {pid!r} replays from a PrioritizedReplayBuffer but its learner's "
                    f"update() returned no {TD_ERROR!r} (one TD error per row, as a numpy "
                    "array) in its info; return it, or use replay_buffer_config "
                    "{'type': 'ReplayBuffer'}"
                )
            buffer.update_priorities(replayed[pid][BATCH_INDEXES], np.asarray(td_error))

    def maybe_update_targets(self) -> None:
        """Update the target networks when ``target_network_update_freq`` env steps have been
        sampled since the last update."""
        if self._counters.env_steps_since_target_update < self.target_update_freq:
            return
        worker = self.workers.local_worker()
        trained = [
            pid
            for pid in worker.policy_map
            if worker.is_policy_to_train(pid) and self.learner_group.has_learner(pid)
        ]
        self.learner_group.update_target_networks(trained, self.tau)
        self._counters.count_target_update()

    # ------------------------------------------------------------------ checkpoints

    def extra_checkpoint_state(self) -> tuple[dict[str, Any], dict[str, Arrays]]:
        """With ``store_buffer_in_checkpoints``: each buffer's rows as arrays (one ``.npz`` per
        policy, numbered: policy ids need not be file names) and its bookkeeping as JSON."""
        if not self.store_buffers:
            return {}, {}
        entries: dict[str, Any] = {}
        files: dict[str, Arrays] = {}
        for number, (pid, buffer) in enumerate(self.replay_buffers.items()):
            meta, arrays = buffer.get_state()
            stem = f"{BUFFERS_FOLDER}/{number}"
            entries[pid] = {"file": stem, "type": type(buffer).__name__, "meta": meta}
            files[stem] = arrays
        return {"replay_buffers": entries}, files

    def load_extra_checkpoint_state(self, path: str, extra: Mapping[str, Any]) -> None:
        """Refill the buffers a checkpoint holds (whatever ``store_buffer_in_checkpoints`` says
        now: it decides what is saved), each into a buffer made from the current config."""
        for pid, entry in (extra.get("replay_buffers") or {}).items():
            arrays = read_arrays(path, str(entry["file"]))
            self.replay_buffer(pid).set_state(dict(entry["meta"]), arrays)
