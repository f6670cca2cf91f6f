"""``EvaluationRunner``: an ``EnvRunner`` that runs exactly N episodes or exactly N steps.

Evaluation needs counts, not training batches: each sub-env is given its share of the episodes
up front and stops once it has run them, so short episodes are not favoured (taking the first
N to finish out of many running sub-envs would be biased towards them). No sample batch is
built, and observation filters are applied without being updated.
"""

from __future__ import annotations

import time

import numpy as np

from runtime.env.env_runner import EnvRunner
from runtime.env.episode import EpisodeMetrics


def split_evenly(total: int, parts: int) -> list[int]:
    """``total`` spread over ``parts``: the first ``total % parts`` get one more."""
    base, extra = divmod(total, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


class EvaluationRunner(EnvRunner):
    def run(
        self,
        *,
        episodes: int = 0,
        timesteps: int = 0,
        reset: bool = True,
        explore: bool | None = None,
    ) -> tuple[list[EpisodeMetrics], int]:
        """Run ``episodes`` complete episodes, or ``timesteps`` env steps (episodes then go on
        across calls made with ``reset=False``); returns the finished episodes and the steps.

        ``reset`` starts every sub-env that is used on a fresh episode.
        """
        self.pop_metrics()
        if episodes:
            quota = np.array(split_evenly(episodes, self.num_envs), dtype=np.int64)
            reset = True
        else:
            quota = np.zeros(self.num_envs, dtype=np.int64)
        first = self.obs is None
        active = quota > 0 if episodes else np.ones(self.num_envs, dtype=bool)
        if reset or first:
            start = time.perf_counter()
            starting = np.flatnonzero(active).tolist()
            raw = [self._reset(i, first=first) for i in starting]
            fresh = self._process(raw, update=False)
            if self.obs is None:
                self.obs = np.zeros((self.num_envs, *fresh.shape[1:]), dtype=fresh.dtype)
            self.obs[starting] = fresh
            self.perf["env_reset"] += time.perf_counter() - start
        assert self.obs is not None
        steps_left = timesteps
        steps = 0
        while active.any() and (episodes or steps_left > 0):
            idx = np.flatnonzero(active)
            if not episodes:
                idx = idx[:steps_left]
            steps += self._step(idx, quota, active, explore, by_episodes=bool(episodes))
            steps_left = timesteps - steps
        return self.pop_metrics(), steps

    def _step(
        self,
        idx: np.ndarray,
        quota: np.ndarray,
        active: np.ndarray,
        explore: bool | None,
        by_episodes: bool,
    ) -> int:
        assert self.obs is not None
        actions, _, _ = self.policy.compute_actions(
            self.obs[idx], explore=explore, value_preds=False
        )
        env_actions = self._action_fn(actions)
        raw: list[object] = []
        done = np.zeros(len(idx), dtype=bool)
        for j, i in enumerate(idx.tolist()):
            obs, reward, terminated, truncated, info = self.envs[i].step(env_actions[j])
            self.ep_len[i] += 1
            self.ep_ret[i] += float(reward)
            if self.horizon and self.ep_len[i] >= int(self.horizon):
                truncated = True
            done[j] = terminated or truncated
            raw.append(obs)
            if self._step_hook:
                episode = self.episodes[i]
                episode.length, episode.total_reward = int(self.ep_len[i]), float(self.ep_ret[i])
                episode._last_obs, episode._last_info = obs, info
                episode._last_action, episode._last_reward = env_actions[j], reward
                self._hook("on_episode_step", episode=episode, env_index=i)
        for j in np.flatnonzero(done).tolist():
            i = int(idx[j])
            self._finish_episode(i)
            if by_episodes:
                quota[i] -= 1
                if quota[i] == 0:
                    active[i] = False
                    continue
            raw[j] = self._reset(i, first=False)
        self.obs[idx] = self._process(raw, update=False)
        return len(idx)
