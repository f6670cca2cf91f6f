"""``Episode``: what callbacks see of one running episode."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


class Episode:
    """One episode of one sub-env. ``length`` and ``total_reward`` are live while it runs.

    ``user_data`` is free for callbacks; ``custom_metrics`` (name -> float) is averaged into
    ``result["custom_metrics"]`` as ``<name>_mean/_min/_max``; ``hist_data`` lists go to
    ``result["hist_stats"]``.
    """

    def __init__(self, episode_id: int, env_index: int, worker_index: int) -> None:
        self.episode_id = episode_id
        self.env_id = env_index
        self.worker_index = worker_index
        self.length = 0
        self.total_reward = 0.0
        self.user_data: dict[str, Any] = {}
        self.custom_metrics: dict[str, float] = {}
        self.hist_data: dict[str, list[float]] = {}
        self.media: dict[str, Any] = {}
        self._last_obs: Any = None
        self._last_info: dict[str, Any] = {}
        self._last_action: Any = None
        self._last_reward = 0.0

    def last_observation_for(self, agent_id: Any = None) -> Any:
        return self._last_obs

    def last_info_for(self, agent_id: Any = None) -> dict[str, Any]:
        return self._last_info

    def last_action_for(self, agent_id: Any = None) -> Any:
        return self._last_action

    def last_reward_for(self, agent_id: Any = None) -> float:
        return self._last_reward

    def __repr__(self) -> str:
        return (
            f"Episode(id={self.episode_id}, env={self.env_id}, length={self.length}, "
            f"total_reward={self.total_reward:g})"
        )


@dataclass
class EpisodeMetrics:
    """The summary of a finished episode that a worker reports to the driver."""

    length: int
    total_reward: float
    custom_metrics: dict[str, float] = field(default_factory=dict)
    hist_data: dict[str, list[float]] = field(default_factory=dict)
    #: Multi-agent episodes: each agent's summed reward, keyed by (agent id, policy id).
    agent_rewards: dict[tuple[Any, str], float] = field(default_factory=dict)
    #: An episode its sub-env's exception cut off (``restart_failed_sub_environments``): its
    #: rows were dropped and it counts only in ``num_faulty_episodes``.
    faulty: bool = False


def faulty_episode() -> EpisodeMetrics:
    """What a runner reports for an episode its sub-env's exception cut off."""
    return EpisodeMetrics(0, 0.0, faulty=True)
