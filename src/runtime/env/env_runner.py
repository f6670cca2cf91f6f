"""``EnvRunner``: steps a worker's sub-envs in lockstep, one batched forward pass per step.

Rows are kept as ``(T, N)`` columns (time x sub-env) while sampling, advantages are computed
on those columns for all sub-envs at once, and the result is flattened sub-env by sub-env so
that each episode's rows are contiguous.
"""

from __future__ import annotations

import itertools
import time
from collections import defaultdict
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np
import numpy.typing as npt

from runtime.callbacks import DefaultCallbacks, overrides
from runtime.core.policy import TorchPolicy
from runtime.core.sample_batch import SampleBatch
from runtime.env.episode import Episode, EpisodeMetrics
from runtime.env.filters import ObservationFilter
from runtime.env.preprocessors import Preprocessor

if TYPE_CHECKING:
    from rlconf.algorithm_config import AlgorithmConfig
    from runtime.env.rollout_worker import RolloutWorker

Array = npt.NDArray[Any]
SB = SampleBatch

_PRIVATE = ("_segment_ends", "_next_values")
_EPISODE_HOOKS = ("on_episode_created", "on_episode_start", "on_episode_step", "on_episode_end")


class EnvRunner:
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
        self.worker = worker
        self.envs = envs
        self.policy = policy
        self.preprocessor = preprocessor
        self.filter = obs_filter
        self.config = config
        self.callbacks = callbacks
        self.num_envs = len(envs)
        self.fragment = config.get_rollout_fragment_length()
        self.complete_episodes = config["batch_mode"] == "complete_episodes"
        self.horizon = config.get("horizon")
        self.soft_horizon = bool(config.get("soft_horizon"))
        self.no_done_at_end = bool(config.get("no_done_at_end"))
        self.seed = config.get("seed")
        self.action_space = policy.action_space
        self._reward_clip = _reward_clipper(config.get("clip_rewards"))
        self._action_fn = action_processor(
            self.action_space, bool(config["normalize_actions"]), bool(config["clip_actions"])
        )
        # Hooks the callbacks do not override are not called: episode boundaries are frequent.
        self._overridden = {
            hook
            for hook in _EPISODE_HOOKS
            if overrides(callbacks, hook)
        }
        self._step_hook = "on_episode_step" in self._overridden
        self._postprocess_hook = overrides(callbacks, "on_postprocess_trajectory")
        self._batched_values = policy.has_critic and policy.model.separate_value_network
        self._next_episode = 0
        self.obs: Array | None = None
        self.episodes: list[Episode] = []
        self.eps_ids = np.zeros(self.num_envs, dtype=np.int64)
        self.ep_len = np.zeros(self.num_envs, dtype=np.int64)
        self.ep_ret = np.zeros(self.num_envs, dtype=np.float64)
        self.finished: list[EpisodeMetrics] = []
        self._pending: list[dict[str, Array]] = [{} for _ in envs]
        self._recent: dict[int, Episode] = {}
        self.perf: dict[str, float] = defaultdict(float)
        self.perf_steps = 0

    # ------------------------------------------------------------------ episodes

    def get_sub_environments(self) -> list[Any]:
        return self.envs

    def _policies(self) -> dict[str, TorchPolicy]:
        return self.worker.policy_map

    def _hook(self, name: str, **kwargs: Any) -> None:
        if name in self._overridden:
            getattr(self.callbacks, name)(
                worker=self.worker, base_env=self, policies=self._policies(), **kwargs
            )

    def _new_episode(self, index: int) -> Episode:
        episode_id = (self.worker.worker_index << 40) + self._next_episode
        self._next_episode += 1
        episode = Episode(episode_id, index, self.worker.worker_index)
        self._recent[episode_id] = episode
        self._hook("on_episode_created", env_index=index, episode=episode)
        return episode

    def _reset(self, index: int, first: bool) -> Any:
        episode = self._new_episode(index)
        seed = None
        if first and self.seed is not None:
            seed = int(self.seed) + 1000 * self.worker.worker_index + index
        obs, info = self.envs[index].reset(seed=seed)
        if seed is not None:
            self.envs[index].action_space.seed(seed)
        episode._last_obs, episode._last_info = obs, info
        self._start_episode(index, episode)
        return obs

    def _start_episode(self, index: int, episode: Episode) -> None:
        if index < len(self.episodes):
            self.episodes[index] = episode
        else:
            self.episodes.append(episode)
        self.eps_ids[index] = episode.episode_id
        self.ep_len[index] = 0
        self.ep_ret[index] = 0.0
        self._hook("on_episode_start", episode=episode, env_index=index)

    def _finish_episode(self, index: int) -> int:
        episode = self.episodes[index]
        episode.length = int(self.ep_len[index])
        episode.total_reward = float(self.ep_ret[index])
        self._hook("on_episode_end", episode=episode, env_index=index)
        self.finished.append(
            EpisodeMetrics(
                episode.length,
                episode.total_reward,
                dict(episode.custom_metrics),
                {k: list(v) for k, v in episode.hist_data.items()},
            )
        )
        return episode.length

    def _process(self, raw: list[Any], update: bool = True) -> Array:
        return self.filter(self.preprocessor.transform_many(raw), update)  # type: ignore[no-any-return]

    def _ensure_started(self) -> None:
        if self.obs is None:
            start = time.perf_counter()
            raw = [self._reset(i, first=True) for i in range(self.num_envs)]
            self.obs = self._process(raw)
            self.perf["env_reset"] += time.perf_counter() - start

    # ------------------------------------------------------------------ sampling

    def sample(self, explore: bool | None = None) -> SampleBatch:
        """``rollout_fragment_length`` steps of every sub-env (``truncate_episodes``), or at
        least that many rows of complete episodes (``complete_episodes``)."""
        self._ensure_started()
        assert self.obs is not None
        self._recent = {e.episode_id: e for e in self.episodes}
        rows: dict[str, list[Any]] = defaultdict(list)
        finals: dict[tuple[int, int], Array] = {}
        bootstrap: list[tuple[int, int]] = []
        target = self.fragment * self.num_envs
        completed = 0
        step = 0
        perf = self.perf
        env_ids = np.arange(self.num_envs)
        while True:
            obs = self.obs
            t0 = time.perf_counter()
            actions, _, extra = self.policy.compute_actions(
                obs, explore=explore, value_preds=not self._batched_values
            )
            t1 = time.perf_counter()
            env_actions = self._action_fn(actions)
            rewards = np.empty(self.num_envs, dtype=np.float64)
            terms = np.zeros(self.num_envs, dtype=bool)
            truncs = np.zeros(self.num_envs, dtype=bool)
            infos: list[Any] = [None] * self.num_envs
            raw: list[Any] = [None] * self.num_envs
            t2 = time.perf_counter()
            for i, env in enumerate(self.envs):
                raw[i], rewards[i], terms[i], truncs[i], infos[i] = env.step(env_actions[i])
            t3 = time.perf_counter()
            self.ep_len += 1
            self.ep_ret += rewards
            if self.horizon:
                truncs |= (self.ep_len >= int(self.horizon)) & ~terms
            done = terms | truncs
            next_obs = self._process(raw)
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
            if self._step_hook:
                for i, episode in enumerate(self.episodes):
                    episode.length = int(self.ep_len[i])
                    episode.total_reward = float(self.ep_ret[i])
                    episode._last_obs, episode._last_info = raw[i], infos[i]
                    episode._last_action, episode._last_reward = env_actions[i], rewards[i]
                    self._hook("on_episode_step", episode=episode, env_index=i)
            if done.any():
                reset_envs, reset_obs = [], []
                for i in np.flatnonzero(done).tolist():
                    finals[(step, i)] = next_obs[i]
                    if truncs[i] or self.no_done_at_end:
                        bootstrap.append((step, i))
                    completed += self._finish_episode(i)
                    if self.soft_horizon and not terms[i]:
                        self._start_episode(i, self._new_episode(i))
                    else:
                        reset_envs.append(i)
                        reset_obs.append(self._reset(i, first=False))
                if reset_envs:
                    next_obs[reset_envs] = self._process(reset_obs)
            self.obs = next_obs
            step += 1
            t4 = time.perf_counter()
            perf["inference"] += t1 - t0
            perf["action_processing"] += t2 - t1
            perf["env_wait"] += t3 - t2
            perf["raw_obs_processing"] += t4 - t3
            self.perf_steps += 1
            if self.complete_episodes:
                if completed >= target:
                    break
            elif step >= self.fragment:
                break
        columns = self._stack(rows, finals, bootstrap)
        batch = self._postprocess(columns)
        self.worker.callbacks.on_sample_end(worker=self.worker, samples=batch)
        return batch

    def _stack(
        self,
        rows: dict[str, list[Any]],
        finals: dict[tuple[int, int], Array],
        bootstrap: list[tuple[int, int]],
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
        predicted = self.policy.compute_values(np.concatenate(parts)) if parts else np.zeros(0)
        if self._batched_values:
            size = obs.shape[0] * obs.shape[1]
            columns[SB.VF_PREDS] = predicted[:size].reshape(obs.shape[:2])
            predicted = predicted[size:]
        next_values = np.zeros(ends.shape, dtype=np.float32)
        for (t, i), value in zip(bootstrap, predicted[: len(bootstrap)], strict=True):
            next_values[t, i] = value
        next_values[-1, open_envs] = predicted[len(bootstrap) :]
        columns["_segment_ends"] = ends
        columns["_next_values"] = next_values
        return columns

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
            ends = np.flatnonzero(column_i["_segment_ends"][:, 0])
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
        batch = SampleBatch({k: np.concatenate(v) for k, v in flat.items()})
        if self._postprocess_hook and len(batch):
            for segment_rows in _episode_slices(batch):
                segment = batch[segment_rows]
                episode_id = int(segment[SB.EPS_ID][0])
                self.callbacks.on_postprocess_trajectory(
                    worker=self.worker,
                    episode=self._recent.get(episode_id),
                    agent_id=0,
                    policy_id="default_policy",
                    policies=self._policies(),
                    postprocessed_batch=segment,
                    original_batches={},
                )
        return batch

    # ------------------------------------------------------------------ metrics

    def pop_metrics(self) -> list[EpisodeMetrics]:
        out, self.finished = self.finished, []
        return out

    def pop_perf(self) -> dict[str, float]:
        steps = max(1, self.perf_steps)
        out = {f"mean_{k}_ms": 1000.0 * v / steps for k, v in self.perf.items()}
        self.perf = defaultdict(float)
        self.perf_steps = 0
        return out


def _episode_slices(batch: SampleBatch) -> list[slice]:
    ids = batch[SB.EPS_ID]
    starts = np.flatnonzero(ids[1:] != ids[:-1]) + 1
    bounds = [0, *starts.tolist(), len(batch)]
    return [slice(a, b) for a, b in itertools.pairwise(bounds)]


def _reward_clipper(setting: Any) -> Any:
    if setting is True:
        return lambda r: np.sign(r).astype(np.float32)
    if setting is None or setting is False:
        return lambda r: r.astype(np.float32)
    low, high = (-float(setting), float(setting)) if not isinstance(setting, list) else setting
    return lambda r: np.clip(r, low, high).astype(np.float32)


def action_processor(space: gym.Space[Any], normalize: bool, clip: bool) -> Any:
    if isinstance(space, gym.spaces.Box):
        low, high = space.low, space.high
        if normalize and np.all(np.isfinite(low)) and np.all(np.isfinite(high)):
            return lambda a: (low + (np.clip(a, -1.0, 1.0) + 1.0) * 0.5 * (high - low)).astype(
                space.dtype
            )
        if clip:
            return lambda a: np.clip(a, low, high).astype(space.dtype)
    return lambda a: a
