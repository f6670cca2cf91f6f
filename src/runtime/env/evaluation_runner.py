"""``EvaluationRunner``: an ``EnvRunner`` that runs exactly N episodes or exactly N steps.

Evaluation needs counts, not training batches: each sub-env is given its share of the episodes
up front and stops once it has run them, so short episodes are not favoured (taking the first
N to finish out of many running sub-envs would be biased towards them). No sample batch is
built, and observation filters are applied without being updated.
"""

from __future__ import annotations

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
            self._start_envs(np.flatnonzero(active).tolist(), first=first, update=False)
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
        """One step of the sub-envs at ``idx``; those that finish their quota of episodes
        (``by_episodes``) are deactivated and not reset."""
        assert self.obs is not None
        step = self._step_envs(idx, explore, value_preds=False, update=False)
        if step.faulty is not None:
            # A failed sub-env's episode is not one of its quota: it runs another.
            self._restart_episodes(idx[step.faulty].tolist(), step.faulty, step.next_obs, False)
            self._faulty_ids.clear()  # (no rows are kept here)
            step.done[step.faulty] = False
        ended_rows = np.flatnonzero(step.done).tolist()
        ended = idx[ended_rows].tolist()
        stop: set[int] = set()
        if by_episodes:
            for i in ended:
                quota[i] -= 1
                if quota[i] == 0:
                    active[i] = False
                    stop.add(i)
        self._end_episodes(ended, ended_rows, step.next_obs, False, stop=stop)
        self.obs[idx] = step.next_obs
        self._count_step(step.stepped_at)
        return len(idx)
