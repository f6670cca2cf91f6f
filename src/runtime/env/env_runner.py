"""``EnvRunner``: steps a worker's single-agent sub-envs in lockstep, one batched forward pass
per step, for training fragments (``sample()``) and for evaluations (``run()``).

Training: rows are kept as ``(T, N)`` columns (time x sub-env) while sampling, advantages are
computed on those columns for all sub-envs at once, and the result is flattened sub-env by
sub-env so that each episode's rows are contiguous.

Evaluation (``EpisodeRunner.run()``: exactly N episodes, each sub-env its share, or N steps)
steps the same sub-envs without keeping rows or updating observation filters.

The stepping itself is ``StepLoop``'s (step_loop.py).
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from rlconf.config_checks import DEFAULT_POLICY_ID
from runtime.callbacks import DefaultCallbacks, overrides
from runtime.core.policy import TorchPolicy
from runtime.core.sample_batch import SampleBatch
from runtime.env.action_processing import reward_clipper
from runtime.env.episode import SINGLE_AGENT_ID
from runtime.env.filters import ObservationFilter
from runtime.env.preprocessors import Preprocessor
from runtime.env.step_loop import StepLoop

if TYPE_CHECKING:
    from rlconf.algorithm_config import AlgorithmConfig
    from runtime.env.rollout_worker import RolloutWorker

Array = npt.NDArray[Any]
SB = SampleBatch

_PRIVATE = (SB.SEGMENT_ENDS, SB.BOOTSTRAP_VALUES)


class EnvRunner(StepLoop):
    def __init__(
        self,
        worker: RolloutWorker,
        envs: list[Any],
        policy: TorchPolicy,
        preprocessor: Preprocessor,
        obs_filter: ObservationFilter,
        config: AlgorithmConfig,
        callbacks: DefaultCallbacks,
    ) -> None:
        super().__init__(worker, envs, policy, preprocessor, obs_filter, config, callbacks)
        settings = self.settings
        self.fragment = config.get_rollout_fragment_length()
        self.complete_episodes = settings.batch_mode == "complete_episodes"
        self.soft_horizon = bool(settings.soft_horizon)
        self.no_done_at_end = bool(settings.no_done_at_end)
        self._reward_clip = reward_clipper(settings.clip_rewards)
        self._postprocess_hook = overrides(callbacks, "on_postprocess_trajectory")
        self._batched_values = policy.has_critic and policy.module.separate_value_network
        self._pending: list[dict[str, Array]] = [{} for _ in envs]

    # ------------------------------------------------------------------ sampling

    def sample(self, explore: bool | None = None) -> SampleBatch:
        """``rollout_fragment_length`` steps of every sub-env (``truncate_episodes``), or at
        least that many rows of complete episodes (``complete_episodes``)."""
        if self.obs is None:
            self._start_envs(list(range(self.num_envs)), first=True, update=True)
        assert self.obs is not None
        self._recent = {e.episode_id: e for e in self.episodes}
        rows: dict[str, list[Any]] = defaultdict(list)
        finals: dict[tuple[int, int], Array] = {}
        bootstrap: list[tuple[int, int]] = []
        #: A policy with memory: the inputs each bootstrapped final observation is valued with.
        final_memory: list[tuple[list[Array], Array, Array]] = []
        target = self.fragment * self.num_envs
        completed = 0
        step = 0
        env_ids = np.arange(self.num_envs)
        value_preds = not self._batched_values
        while True:
            obs = self.obs
            step_out = self._step_envs(None, explore, value_preds, update=True)
            actions, extra, rewards, terms, truncs, infos, done, next_obs = step_out[:8]
            stepped_at, faulty = step_out.stepped_at, step_out.faulty
            rows[SB.OBS].append(obs)
            rows[SB.ACTIONS].append(actions)
            rows[SB.REWARDS].append(self._reward_clip(rewards))
            rows[SB.TERMINATEDS].append(np.zeros_like(terms) if self.no_done_at_end else terms)
            rows[SB.TRUNCATEDS].append(truncs)
            rows[SB.INFOS].append(infos)
            rows[SB.EPS_ID].append(self.eps_ids.copy())
            rows[SB.T].append(self.ep_len - 1)
            rows[SB.ENV_ID].append(env_ids)
            for name, values in extra.items():
                rows[name].append(values)
            if step_out.memory_in is not None:
                for name, values in step_out.memory_in.items():
                    rows[name].append(values)
            if faulty is not None:
                # Their rows are dropped (_flatten); the row is an episode end all the same, so
                # that nothing is computed across it.
                self._restart_episodes(faulty, faulty, next_obs, True)
                done[faulty] = False
            if done.any():
                ended = np.flatnonzero(done).tolist()
                for i in ended:
                    # A copy: the row of next_obs gets the reset observation below.
                    finals[(step, i)] = next_obs[i].copy()
                    if truncs[i] or self.no_done_at_end:
                        bootstrap.append((step, i))
                        if self.memory is not None:
                            final_memory.append(self.memory.row(i))
                go_on = ~terms if self.soft_horizon else None
                completed += self._end_episodes(ended, ended, next_obs, True, go_on=go_on)
            self.obs = next_obs
            step += 1
            self._count_step(stepped_at)
            if self.complete_episodes:
                if completed >= target:
                    break
            elif step >= self.fragment:
                break
        columns = self._stack(rows, finals, bootstrap, final_memory)
        batch = self._postprocess(columns)
        self._sample_end(batch)
        return batch

    def _stack(
        self,
        rows: dict[str, list[Any]],
        finals: dict[tuple[int, int], Array],
        bootstrap: list[tuple[int, int]],
        final_memory: list[tuple[list[Array], Array, Array]],
    ) -> dict[str, Array]:
        assert self.obs is not None
        columns: dict[str, Array] = {}
        for name, values in rows.items():
            if name == SB.INFOS:
                column = np.empty((len(values), self.num_envs), dtype=object)
                for t, infos in enumerate(values):
                    column[t, :] = infos
                columns[name] = column
            else:
                columns[name] = np.stack(values)
        obs = columns[SB.OBS]
        new_obs = np.concatenate([obs[1:], self.obs[None]])
        for (t, i), final in finals.items():
            new_obs[t, i] = final
        columns[SB.NEXT_OBS] = new_obs
        ends = columns[SB.TERMINATEDS] | columns[SB.TRUNCATEDS]
        for t, i in finals:
            ends[t, i] = True
        # V(s) is needed for the final observations of truncated episodes, for the last
        # observation of every episode still running at the fragment's end, and (with a separate
        # value network, left out of the steps) for every observation: one batch for all.
        open_envs = ~ends[-1] if not self.complete_episodes else np.zeros(self.num_envs, bool)
        if not self.complete_episodes:
            ends[-1] = True
        extra_obs = [finals[k] for k in bootstrap] + list(self.obs[open_envs])
        parts = ([obs.reshape(-1, *obs.shape[2:])] if self._batched_values else []) + (
            [np.stack(extra_obs)] if extra_obs else []
        )
        if self.memory is not None:
            predicted = self._memory_values(extra_obs, final_memory, open_envs)
        else:
            predicted = self.policy.compute_values(np.concatenate(parts)) if parts else np.zeros(0)
        if self._batched_values:
            size = obs.shape[0] * obs.shape[1]
            columns[SB.VF_PREDS] = predicted[:size].reshape(obs.shape[:2])
            predicted = predicted[size:]
        next_values = np.zeros(ends.shape, dtype=np.float32)
        for (t, i), value in zip(bootstrap, predicted[: len(bootstrap)], strict=True):
            next_values[t, i] = value
        next_values[-1, open_envs] = predicted[len(bootstrap) :]
        columns[SB.SEGMENT_ENDS] = ends
        columns[SB.BOOTSTRAP_VALUES] = next_values
        return columns

    def _memory_values(
        self,
        extra_obs: list[Array],
        final_memory: list[tuple[list[Array], Array, Array]],
        open_envs: Array,
    ) -> Array:
        """V of the bootstrapped observations for a policy with memory: each valued from the
        state and previous inputs that followed its step (the final ones of truncated
        episodes, recorded before their reset; the current ones of the running episodes)."""
        assert self.memory is not None
        if not extra_obs:
            return np.zeros(0)
        state, prev_actions, prev_rewards = self.memory.inputs(np.flatnonzero(open_envs))
        states = [[m[0][k] for m in final_memory] + [state[k]] for k in range(len(state))]
        return self.policy.compute_values(
            np.stack(extra_obs),
            [np.concatenate(parts) for parts in states],
            None
            if prev_actions is None
            else np.concatenate([m[1] for m in final_memory] + [prev_actions]),
            None
            if prev_rewards is None
            else np.concatenate([m[2] for m in final_memory] + [prev_rewards]),
        )

    def _postprocess(self, columns: dict[str, Array]) -> SampleBatch:
        if not self.complete_episodes:
            self.policy.postprocess_fragment(columns)
            return self._flatten([columns])
        parts = []
        for i in range(self.num_envs):
            column_i = {k: v[:, i : i + 1] for k, v in columns.items()}
            pending = self._pending[i]
            if pending:
                column_i = {k: np.concatenate([pending[k], v]) for k, v in column_i.items()}
            ends = np.flatnonzero(column_i[SB.SEGMENT_ENDS][:, 0])
            cut = int(ends[-1]) + 1 if len(ends) else 0
            self._pending[i] = (
                {k: v[cut:] for k, v in column_i.items()} if cut < len(column_i[SB.OBS]) else {}
            )
            if cut:
                done_part = {k: v[:cut] for k, v in column_i.items()}
                self.policy.postprocess_fragment(done_part)
                parts.append(done_part)
        return self._flatten(parts)

    def _flatten(self, parts: list[dict[str, Array]]) -> SampleBatch:
        """(T, N) columns -> one row per step, each sub-env's rows contiguous."""
        flat: dict[str, list[Array]] = defaultdict(list)
        for columns in parts:
            for name, values in columns.items():
                if name in _PRIVATE:
                    continue
                swapped = np.swapaxes(values, 0, 1)
                flat[name].append(swapped.reshape(-1, *values.shape[2:]))
        columns = {k: np.concatenate(v) for k, v in flat.items()}
        if self._faulty_ids:
            # Every row of a faulty episode left is in this batch: its last row ends a segment,
            # and the rows before it (complete_episodes: held back till then) come with it.
            kept = ~np.isin(columns[SB.EPS_ID], list(self._faulty_ids))
            columns = {k: v[kept] for k, v in columns.items()}
            self._faulty_ids.clear()
        batch = SampleBatch(columns)
        if self._postprocess_hook and len(batch):
            for segment_rows in _episode_slices(batch):
                segment = batch[segment_rows]
                episode_id = int(segment[SB.EPS_ID][0])
                self.callbacks.on_postprocess_trajectory(
                    worker=self.worker,
                    episode=self._recent.get(episode_id),
                    agent_id=SINGLE_AGENT_ID,
                    policy_id=DEFAULT_POLICY_ID,
                    policies=self.worker.policy_map,
                    postprocessed_batch=segment,
                    original_batches={},
                )
        return batch

    # ------------------------------------------------------------------ evaluation

    def _start_evaluation(self, active: list[int], reset: bool) -> None:
        first = self.obs is None
        if reset or first:
            self._start_envs(active, first=first, update=False)

    def _evaluation_step(self, envs: list[int], explore: bool | None, last: set[int]) -> list[int]:
        assert self.obs is not None
        idx = np.asarray(envs, dtype=np.int64)
        step = self._step_envs(idx, explore, value_preds=False, update=False)
        if step.faulty is not None:
            self._restart_episodes(idx[step.faulty].tolist(), step.faulty, step.next_obs, False)
            step.done[step.faulty] = False
        ended_rows = np.flatnonzero(step.done).tolist()
        ended: list[int] = idx[ended_rows].tolist()
        self._end_episodes(ended, ended_rows, step.next_obs, False, stop=last)
        self.obs[idx] = step.next_obs
        self._count_step(step.stepped_at)
        return ended


def _episode_slices(batch: SampleBatch) -> list[slice]:
    ids = batch[SB.EPS_ID]
    starts = np.flatnonzero(ids[1:] != ids[:-1]) + 1
    bounds = [0, *starts.tolist(), len(batch)]
    return [slice(a, b) for a, b in itertools.pairwise(bounds)]
