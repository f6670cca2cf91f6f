"""Episode metrics of an iteration, smoothed over the most recent episodes."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np

from runtime.env.episode import EpisodeMetrics


def summarize_episodes(
    episodes: list[EpisodeMetrics], new_episodes: int | None = None
) -> dict[str, Any]:
    """The reference's episode keys over ``episodes`` (nan when there are none)."""
    rewards = [e.total_reward for e in episodes]
    lengths = [e.length for e in episodes]
    custom: dict[str, list[float]] = defaultdict(list)
    hist: dict[str, list[float]] = defaultdict(list)
    for episode in episodes:
        for name, value in episode.custom_metrics.items():
            custom[name].append(float(value))
        for name, values in episode.hist_data.items():
            hist[name].extend(values)
    custom_metrics: dict[str, float] = {}
    for name, values in custom.items():
        finite = [v for v in values if np.isfinite(v)]
        custom_metrics[f"{name}_mean"] = float(np.mean(finite)) if finite else float("nan")
        custom_metrics[f"{name}_min"] = float(np.min(finite)) if finite else float("nan")
        custom_metrics[f"{name}_max"] = float(np.max(finite)) if finite else float("nan")
    return {
        "episode_reward_max": float(np.max(rewards)) if rewards else float("nan"),
        "episode_reward_min": float(np.min(rewards)) if rewards else float("nan"),
        "episode_reward_mean": float(np.mean(rewards)) if rewards else float("nan"),
        "episode_len_mean": float(np.mean(lengths)) if lengths else float("nan"),
        "episodes_this_iter": len(episodes) if new_episodes is None else new_episodes,
        "policy_reward_min": {},
        "policy_reward_max": {},
        "policy_reward_mean": {},
        "custom_metrics": custom_metrics,
        "hist_stats": {"episode_reward": rewards, "episode_lengths": lengths, **hist},
    }


class EpisodeHistory:
    """Keeps the last ``size`` finished episodes for smoothing across iterations."""

    def __init__(self, size: int) -> None:
        self.size = max(1, size)
        self.episodes: list[EpisodeMetrics] = []

    def smoothed(self, new: list[EpisodeMetrics]) -> list[EpisodeMetrics]:
        """The new episodes, topped up with older ones to ``size`` when there are fewer."""
        missing = self.size - len(new)
        window = (self.episodes[-missing:] if missing > 0 else []) + new
        self.episodes = (self.episodes + new)[-self.size :]
        return window

    def to_state(self) -> list[list[float]]:
        return [[e.length, e.total_reward] for e in self.episodes]

    def set_state(self, rows: list[list[float]]) -> None:
        self.episodes = [EpisodeMetrics(int(n), float(r)) for n, r in rows]
