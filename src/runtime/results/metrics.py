"""Episode metrics of an iteration, smoothed over the most recent episodes."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np

from runtime.env.episode import EpisodeMetrics


def summarize_episodes(
    episodes: list[EpisodeMetrics], new_episodes: int | None = None, num_faulty: int | None = None
) -> dict[str, Any]:
    """The reference's episode keys over ``episodes`` (nan when there are none). Faulty
    episodes (cut off by a failed sub-env) are left out of every metric and counted in
    ``num_faulty_episodes`` (``num_faulty``: that count, when they were taken out already)."""
    if num_faulty is None:
        num_faulty = sum(e.faulty for e in episodes)
    if num_faulty:
        episodes = [e for e in episodes if not e.faulty]
    rewards = [e.total_reward for e in episodes]
    lengths = [e.length for e in episodes]
    custom: dict[str, list[float]] = defaultdict(list)
    hist: dict[str, list[float]] = defaultdict(list)
    policy_rewards: dict[str, list[float]] = defaultdict(list)
    for episode in episodes:
        for (_, policy_id), reward in episode.agent_rewards.items():
            policy_rewards[policy_id].append(float(reward))
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
        "policy_reward_min": {p: float(np.min(r)) for p, r in policy_rewards.items()},
        "policy_reward_max": {p: float(np.max(r)) for p, r in policy_rewards.items()},
        "policy_reward_mean": {p: float(np.mean(r)) for p, r in policy_rewards.items()},
        "custom_metrics": custom_metrics,
        "hist_stats": {
            "episode_reward": rewards,
            "episode_lengths": lengths,
            **{f"policy_{p}_reward": r for p, r in policy_rewards.items()},
            **hist,
        },
        "num_faulty_episodes": num_faulty,
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

    def to_state(self) -> list[list[Any]]:
        """Rows ``[length, total_reward]``, with ``[[agent_id, policy_id, reward], ...]`` as a
        third item for multi-agent episodes (agent ids as JSON has them)."""
        rows: list[list[Any]] = []
        for e in self.episodes:
            row: list[Any] = [e.length, e.total_reward]
            if e.agent_rewards:
                row.append([[_jsonable_id(a), p, r] for (a, p), r in e.agent_rewards.items()])
            rows.append(row)
        return rows

    def set_state(self, rows: list[list[Any]]) -> None:
        self.episodes = [
            EpisodeMetrics(
                int(row[0]),
                float(row[1]),
                agent_rewards=(
                    {(a, str(p)): float(r) for a, p, r in row[2]} if len(row) > 2 else {}
                ),
            )
            for row in rows
        ]


def _jsonable_id(agent_id: Any) -> Any:
    return agent_id if isinstance(agent_id, str | int | float | bool) else str(agent_id)
