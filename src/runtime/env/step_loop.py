"""The env step loop, shared by ``EnvRunner.sample()`` (training fragments) and
``EnvRunner.run()`` (exactly N episodes or N steps).

``StepLoop`` holds a worker's sub-envs, their running episodes (``episodes``, ``eps_ids``,
``ep_len``, ``ep_ret``) and their current observations, preprocessed and filtered (``obs``):

- ``_step_envs(idx, ...)`` steps the sub-envs at ``idx`` (all of them for ``None``) once: the
  policy's actions for their observations, action processing, ``env.step``, the episode
  counters, ``horizon`` truncation, preprocessing and filtering of the new observations, and
  (while some hook receives episodes) the step's record in its episode and the
  ``on_episode_step`` hook; it returns a ``Step``. What is kept of it is up to the caller.
- ``_end_episodes(...)`` finishes the episodes that ended (``on_episode_end``, metrics) and
  starts the next ones: a reset, or with a soft horizon a new episode on the running env.
- ``_start_envs(...)`` resets sub-envs onto fresh episodes and puts their observations in ``obs``.
- A sub-env that raises in ``step()`` or ``reset()`` is made again (``SubEnvRestarts``, with
  ``restart_failed_sub_environments``; else the error goes on): its row of the step is marked
  in ``Step.faulty``, and the caller drops its episode and starts the next with
  ``_restart_episodes``.
- ``_reset``, ``_start_episode`` and ``_finish_episode`` are the episode bookkeeping of these
  arrays, on ``EpisodeRunner``'s (episode_runner.py: new episodes, hooks, seeded resets,
  finished episodes' metrics, ``pop_metrics`` and ``pop_perf``).
"""

from __future__ import annotations

import time
from collections.abc import Container
from typing import TYPE_CHECKING, Any, NamedTuple

import gymnasium as gym
import numpy as np
import numpy.typing as npt

from rlconf.config_checks import DEFAULT_POLICY_ID
from runtime.callbacks import DefaultCallbacks
from runtime.core.exploration import Exploration
from runtime.core.policy import TorchPolicy
from runtime.env.action_processing import action_processor
from runtime.env.episode import SINGLE_AGENT_ID, Episode, faulty_episode
from runtime.env.episode_runner import EpisodeRunner
from runtime.env.filters import ObservationFilter
from runtime.env.multi_agent_checks import check_observations
from runtime.env.preprocessors import Preprocessor
from runtime.env.sub_env_memory import SubEnvMemory

if TYPE_CHECKING:
    from rlconf.algorithm_config import AlgorithmConfig
    from runtime.env.ale_vector import AleVectorBatch
    from runtime.env.rollout_worker import RolloutWorker

Array = npt.NDArray[Any]


class Step(NamedTuple):
    """One step of some sub-envs; row ``j`` of each field is the ``j``-th stepped sub-env's."""

    actions: Array  #: as the policy computed them (before action processing)
    extra: dict[str, Array]  #: the policy's extra outputs (e.g. action logp, value predictions)
    rewards: Array  #: float64, unclipped
    terminateds: Array
    truncateds: Array  #: with ``horizon`` truncation
    infos: list[Any]
    done: Array  #: ``terminateds | truncateds``
    next_obs: Array  #: the new observations, preprocessed and filtered (the final ones)
    stepped_at: float  #: ``time.perf_counter()`` when the envs had stepped (for ``_count_step``)
    #: Rows whose sub-env raised and was made again (None: none did): their episode is over
    #: (``done``, truncated, reward 0, a zero ``next_obs``) and is to be dropped
    #: (``_restart_episodes``).
    faulty: list[int] | None = None
    #: A policy with memory: each row's inputs besides the observation (``state_in_k``,
    #: ``prev_actions``, ``prev_rewards``) as training columns; None without memory.
    memory_in: dict[str, Array] | None = None


class StepLoop(EpisodeRunner):
    """A worker's single-agent sub-envs and their episodes, stepped by ``_step_envs``."""

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
        super().__init__(worker, envs, config, callbacks)
        settings = self.settings
        self.policy = policy
        self.preprocessor = preprocessor
        self.filter = obs_filter
        self.horizon = settings.horizon
        self.action_space = policy.action_space
        #: The space reset observations are checked against (None: not checked).
        self._obs_space: gym.Space[Any] | None = None
        if envs and not settings.disable_env_checking:
            space = envs[0].observation_space
            self._obs_space = space if isinstance(space, gym.Space) else None
        self._action_fn = action_processor(
            self.action_space, bool(settings.normalize_actions), bool(settings.clip_actions)
        )
        # The exploration's episode hooks are called only where overridden (e.g. OU noise
        # resets a sub-env's state).
        exploration = type(policy.exploration)
        self._exploration_starts = exploration.on_episode_start is not Exploration.on_episode_start
        self._exploration_ends = exploration.on_episode_end is not Exploration.on_episode_end
        #: The sub-envs' one ale-py vector env (``vector_entry_point``), else None.
        self._batch: AleVectorBatch | None = getattr(envs[0], "vector_batch", None)
        self.obs: Array | None = None
        self.eps_ids = np.zeros(self.num_envs, dtype=np.int64)
        self.ep_len = np.zeros(self.num_envs, dtype=np.int64)
        self.ep_ret = np.zeros(self.num_envs, dtype=np.float64)
        #: A policy with memory: its state and previous inputs in each sub-env.
        self.memory = SubEnvMemory.of(policy, self.num_envs)

    def _rl_module(self) -> Any:
        return self.policy.module

    # ------------------------------------------------------------------ stepping

    def _step_envs(
        self, idx: Array | None, explore: bool | None, value_preds: bool, update: bool
    ) -> Step:
        """One step of the sub-envs at ``idx`` (an index array, or ``None`` for all, in order),
        with ``update`` for the observation filter. Episodes that ended are left to the caller
        (``_end_episodes``), and so is ``obs``."""
        assert self.obs is not None
        env_ids: list[int] | None = None
        if idx is None:
            obs, envs = self.obs, self.envs
        else:
            env_ids = idx.tolist()
            obs, envs = self.obs[idx], [self.envs[i] for i in env_ids]
        t0 = time.perf_counter()
        memory = self.memory
        memory_in: dict[str, Array] | None = None
        if memory is None:
            actions, _, extra = self.policy.compute_actions(
                obs, explore=explore, value_preds=value_preds, env_indices=env_ids
            )
        else:
            state, prev_actions, prev_rewards = memory.inputs(idx)
            memory_in = memory.columns(idx)
            actions, state_out, extra = self.policy.compute_actions(
                obs,
                state,
                prev_actions,
                prev_rewards,
                explore=explore,
                value_preds=value_preds,
                env_indices=env_ids,
            )
        t1 = time.perf_counter()
        env_actions = self._action_fn(actions)
        n = len(envs)
        rewards = np.empty(n, dtype=np.float64)
        terms = np.zeros(n, dtype=bool)
        truncs = np.zeros(n, dtype=bool)
        infos: list[Any] = [None] * n
        raw: list[Any] = [None] * n
        faulty: list[int] | None = None
        t2 = time.perf_counter()
        if self._batch is not None:
            # Evaluation workers, which step some sub-envs and not others, are never batched.
            assert idx is None, "a vector env steps all of its sub-envs"
            frames, rewards, terms, truncs, infos = self._batch.step(env_actions)
            raw = list(frames)
        else:
            try:
                for j, env in enumerate(envs):
                    raw[j], rewards[j], terms[j], truncs[j], infos[j] = env.step(env_actions[j])
            except Exception as error:
                # (The try costs the loop nothing while no sub-env raises.)
                faulty = self._step_after_failure(
                    envs, env_ids, env_actions, j, error, raw, rewards, terms, truncs, infos
                )
        t3 = time.perf_counter()
        if memory is not None:
            memory.advance(idx, state_out, actions, rewards)
        if idx is None:
            self.ep_len += 1
            self.ep_ret += rewards
            ep_len = self.ep_len
        else:
            self.ep_len[idx] += 1
            self.ep_ret[idx] += rewards
            ep_len = self.ep_len[idx]
        if self.horizon:
            truncs |= (ep_len >= int(self.horizon)) & ~terms
        done = terms | truncs
        if faulty is None:
            next_obs = self._process(raw, update)
        else:
            next_obs = self._process_around(raw, faulty, update)
        if self._track_steps:
            self._record_steps(
                env_ids, faulty, raw, infos, env_actions, extra, rewards, terms, truncs
            )
        perf = self.perf
        perf["inference"] += t1 - t0
        perf["action_processing"] += t2 - t1
        perf["env_wait"] += t3 - t2
        return Step(
            actions, extra, rewards, terms, truncs, infos, done, next_obs, t3, faulty, memory_in
        )

    def _record_steps(
        self,
        env_ids: list[int] | None,
        faulty: list[int] | None,
        raw: list[Any],
        infos: list[Any],
        env_actions: Any,
        extra: dict[str, Array],
        rewards: Array,
        terms: Array,
        truncs: Array,
    ) -> None:
        """Some hook receives episodes: record the step in each sub-env's episode (its length,
        rewards, and its one agent's observation, action, the policy's extra outputs, the state
        it acts from next, reward) and call ``on_episode_step`` where overridden."""
        state = self.memory.state if self.memory is not None else None
        for j, i in enumerate(range(len(raw)) if env_ids is None else env_ids):
            if faulty is not None and j in faulty:
                continue
            episode = self.episodes[i]
            episode.length = int(self.ep_len[i])
            episode.total_reward = float(self.ep_ret[i])
            episode.agent_rewards[(SINGLE_AGENT_ID, DEFAULT_POLICY_ID)] = episode.total_reward
            # The action first: it was taken on the observation before this step's.
            episode._act(
                SINGLE_AGENT_ID,
                env_actions[j],
                {name: values[j] for name, values in extra.items()},
                None if state is None else [s[i].copy() for s in state],
            )
            episode._reward(SINGLE_AGENT_ID, float(rewards[j]), bool(terms[j]), bool(truncs[j]))
            episode._observe(SINGLE_AGENT_ID, raw[j], infos[j])
            self._hook("on_episode_step", episode=episode, env_index=i)

    def _step_after_failure(
        self,
        envs: list[Any],
        env_ids: list[int] | None,
        env_actions: Any,
        failed: int,
        error: Exception,
        raw: list[Any],
        rewards: Array,
        terms: Array,
        truncs: Array,
        infos: list[Any],
    ) -> list[int]:
        """The rest of a step in which the sub-env of row ``failed`` raised ``error``: make it
        again (or raise, without restarts), then step the rows after it one by one, each
        guarded the same way. Returns the rows whose sub-env failed; each ends its episode
        (truncated, reward 0)."""
        faulty: list[int] = []
        j: int | None = failed
        while j is not None:
            i = j if env_ids is None else env_ids[j]
            self._restarts.restart(i, "step()", error)
            if envs is not self.envs:
                envs[j] = self.envs[i]
            faulty.append(j)
            rewards[j], terms[j], truncs[j], infos[j] = 0.0, False, True, {}
            j = None
            for k in range(faulty[-1] + 1, len(envs)):
                try:
                    raw[k], rewards[k], terms[k], truncs[k], infos[k] = envs[k].step(env_actions[k])
                except Exception as next_error:
                    j, error = k, next_error
                    break
        return faulty

    def _process_around(self, raw: list[Any], faulty: list[int], update: bool) -> Array:
        """``_process`` of the rows that have an observation; the faulty rows (no observation)
        get zeros, which ``_restart_episodes`` replaces with their new episodes' first ones."""
        assert self.obs is not None
        out = np.zeros((len(raw), *self.obs.shape[1:]), dtype=self.obs.dtype)
        kept = [j for j in range(len(raw)) if j not in faulty]
        if kept:
            out[kept] = self._process([raw[j] for j in kept], update)
        return out

    def _count_step(self, stepped_at: float) -> None:
        """Closes a step's timers: the time since ``Step.stepped_at`` was observation processing
        (with the caller's bookkeeping, resets included)."""
        self.perf["raw_obs_processing"] += time.perf_counter() - stepped_at
        self.perf_steps += 1

    def _end_episodes(
        self,
        envs: list[int],
        rows: list[int],
        next_obs: Array,
        update: bool,
        *,
        stop: Container[int] = (),
        go_on: Array | None = None,
    ) -> int:
        """Finish the episodes of the sub-envs ``envs``, in order, and start their next ones:
        a reset, whose first observation replaces the final one in ``next_obs`` (row ``rows[k]``
        is ``envs[k]``'s), or where ``go_on[row]`` (soft horizon) a new episode on the running
        env. Sub-envs in ``stop`` are left as they are. Returns the finished episodes' length."""
        total = 0
        reset_rows: list[int] = []
        reset_obs: list[Any] = []
        for i, j in zip(envs, rows, strict=True):
            total += self._finish_episode(i)
            if i in stop:
                continue
            if go_on is not None and go_on[j]:
                episode = self._new_episode(i)
                if self._track_steps:
                    # The running env's last observation is the new episode's first.
                    last = self.episodes[i]
                    episode._observe(
                        SINGLE_AGENT_ID,
                        last.last_raw_obs_for(),
                        last._agent_infos.get(SINGLE_AGENT_ID),
                    )
                self._start_episode(i, episode)
            else:
                reset_rows.append(j)
                reset_obs.append(self._reset(i, first=False))
        if reset_rows:
            next_obs[reset_rows] = self._process(reset_obs, update)
        return total

    def _restart_episodes(
        self, envs: list[int], rows: list[int], next_obs: Array, update: bool
    ) -> None:
        """Drop the episodes of the sub-envs ``envs``, which failed and were made again (each a
        faulty episode; no ``on_episode_end``: the episode did not end), and start their next
        ones: the first observations go to ``next_obs`` (row ``rows[k]`` is ``envs[k]``'s)."""
        reset_obs: list[Any] = []
        for i in envs:
            self._faulty_ids.add(int(self.eps_ids[i]))
            self.finished.append(faulty_episode())
            reset_obs.append(self._reset(i, first=False))
        next_obs[rows] = self._process(reset_obs, update)

    def _start_envs(self, envs: list[int], first: bool, update: bool) -> None:
        """Reset the sub-envs ``envs`` onto fresh episodes (seeded if ``first``) and put their
        observations in ``obs``."""
        start = time.perf_counter()
        fresh = self._process([self._reset(i, first=first) for i in envs], update)
        if self.obs is None:
            self.obs = np.zeros((self.num_envs, *fresh.shape[1:]), dtype=fresh.dtype)
        self.obs[envs] = fresh
        self.perf["env_reset"] += time.perf_counter() - start

    def _process(self, raw: list[Any], update: bool = True) -> Array:
        return self.filter(self.preprocessor.transform_many(raw), update)  # type: ignore[no-any-return]

    # ------------------------------------------------------------------ episodes

    def _reset(self, index: int, first: bool) -> Any:
        episode = self._new_episode(index)
        (obs, info), seed = self._reset_env(index, first)
        if self._obs_space is not None:
            # (A per-step check would cost the sampling loop; one per episode is cheap.)
            label = type(getattr(self.envs[index], "unwrapped", self.envs[index])).__name__
            check_observations(self._obs_space, [obs], lambda _: (label, "reset()", 0))
        if seed is not None:
            self.envs[index].action_space.seed(seed)
        episode._observe(SINGLE_AGENT_ID, obs, info)
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
        if self.memory is not None:
            self.memory.reset(index)
            episode._agent_state[SINGLE_AGENT_ID] = list(self.memory.initial)
        if self._exploration_starts:
            self.policy.exploration.on_episode_start(self.policy, environment=self, episode=episode)
        self._hook("on_episode_start", episode=episode, env_index=index)

    def _finish_episode(self, index: int) -> int:
        episode = self.episodes[index]
        episode.length = int(self.ep_len[index])
        episode.total_reward = float(self.ep_ret[index])
        episode.agent_rewards[(SINGLE_AGENT_ID, DEFAULT_POLICY_ID)] = episode.total_reward
        self._hook("on_episode_end", episode=episode, env_index=index)
        if self._exploration_ends:
            self.policy.exploration.on_episode_end(self.policy, environment=self, episode=episode)
        # (A single-agent result has no per-policy rewards, as the reference's.)
        self.finished.append(self._metrics_of(episode, agent_rewards=False))
        return episode.length
