"""``MultiAgentEpisode``: what callbacks and mapping functions see of one running episode of a
multi-agent env."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from typing import Any

from runtime.env.episode import Episode

#: ``fn(agent_id, episode, worker=...) -> policy id``
MappingFn = Callable[..., str]


class MultiAgentEpisode(Episode):
    """One episode of one multi-agent sub-env.

    Each agent is mapped to a policy once, when it first appears (``policy_for``); the mapping
    holds for the rest of the episode even if the worker's mapping function changes.
    ``agent_rewards[(agent_id, policy_id)]`` sums each agent's rewards (every one the env gave
    it, those before its first action included, which no transition holds); ``total_reward`` is
    their sum over all agents and ``length`` counts env steps.
    """

    def __init__(
        self,
        episode_id: int,
        env_index: int,
        worker_index: int,
        mapping_fn: MappingFn,
        worker: Any,
    ) -> None:
        super().__init__(episode_id, env_index, worker_index)
        self._mapping_fn = mapping_fn
        self._worker = worker
        self._agent_to_policy: dict[Any, str] = {}
        self.agent_rewards: dict[tuple[Any, str], float] = defaultdict(float)
        self._agent_obs: dict[Any, Any] = {}
        self._agent_infos: dict[Any, Any] = {}
        self._agent_actions: dict[Any, Any] = {}
        self._agent_rewards_last: dict[Any, float] = {}
        #: Each agent's transitions so far: the ``t`` of its next row (its own step index,
        #: 0 at its first action, however many env steps it waits between actions).
        self.agent_steps: dict[Any, int] = defaultdict(int)

    def policy_for(self, agent_id: Any = 0) -> str:
        """The policy ``agent_id`` acts with in this episode (mapped on first use)."""
        policy_id = self._agent_to_policy.get(agent_id)
        if policy_id is None:
            policy_id = self._mapping_fn(agent_id, self, worker=self._worker)
            self._agent_to_policy[agent_id] = policy_id
        return policy_id

    def get_agents(self) -> list[Any]:
        """The agents seen so far in this episode."""
        return list(self._agent_to_policy)

    def last_observation_for(self, agent_id: Any = 0) -> Any:
        return self._agent_obs.get(agent_id)

    def last_info_for(self, agent_id: Any = 0) -> dict[str, Any]:
        info = self._agent_infos.get(agent_id)
        return info if isinstance(info, dict) else {}

    def last_action_for(self, agent_id: Any = 0) -> Any:
        return self._agent_actions.get(agent_id)

    def last_reward_for(self, agent_id: Any = 0) -> float:
        return self._agent_rewards_last.get(agent_id, 0.0)

    def __repr__(self) -> str:
        return (
            f"MultiAgentEpisode(id={self.episode_id}, env={self.env_id}, length={self.length}, "
            f"agents={self.get_agents()!r}, total_reward={self.total_reward:g})"
        )
