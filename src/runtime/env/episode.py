"""``Episode``: what callbacks and mapping functions see of one running episode of a sub-env.

One class for single- and multi-agent envs, keyed by agent as the reference's
``MultiAgentEpisode`` (the name it gives the episode every callback receives, exported here as
the same class): a single-agent env's episode is the one-agent case, its agent
``SINGLE_AGENT_ID`` (``"agent0"``, the reference's dummy agent id) acting with
``default_policy``.
"""

from __future__ import annotations

import weakref
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rlconf.config_checks import DEFAULT_POLICY_ID
from runtime.env.episode_api import SINGLE_AGENT_ID, NewStackEpisode

__all__ = ["SINGLE_AGENT_ID", "Episode", "EpisodeMetrics", "MultiAgentEpisode", "faulty_episode"]

#: ``fn(agent_id, episode, worker=...) -> policy id``
MappingFn = Callable[..., str]


class AgentStepCounts(defaultdict[Any, int]):
    """Each agent's closed transitions (``episode.agent_steps[agent_id]``, 2.x), and called,
    the episode's agent steps (``episode.agent_steps()``, RLlib's new API stack)."""

    def __init__(self, episode: Episode) -> None:
        super().__init__(int)
        # (A weak reference: no reference cycle for the collector to find per episode.)
        self._episode = weakref.ref(episode)

    def __call__(self) -> int:
        episode = self._episode()
        return 0 if episode is None else episode._agent_steps_taken()


class Episode(NewStackEpisode):
    """One episode of one sub-env. ``length`` (env steps so far, those of earlier fragments
    included) and ``total_reward`` (every agent's rewards summed) are live while it runs.

    ``user_data`` is free for callbacks; ``custom_metrics`` (name -> float) is averaged into
    ``result["custom_metrics"]`` as ``<name>_mean/_min/_max``; ``hist_data`` lists go to
    ``result["hist_stats"]``.

    Each agent is mapped to a policy once, when it first appears (``policy_for``); the mapping
    holds for the rest of the episode even if the worker's mapping function changes.
    ``agent_rewards[(agent_id, policy_id)]`` sums each agent's rewards (every one the env gave
    it, those before its first action included, which no transition holds).

    What each agent's last step was (``last_observation_for``, ``last_raw_obs_for``,
    ``last_info_for``, ``last_action_for``, ``prev_action_for``, ``last_reward_for``,
    ``prev_reward_for``, ``last_extra_action_outs_for``, ``rnn_state_for``,
    ``last_terminated_for``, ``last_truncated_for``) is recorded, with ``length`` and the
    rewards, at every step while some hook receives episodes (a callback that overrides an
    episode hook or ``on_postprocess_trajectory``, or an ``observation_fn``), so each hook sees
    the same whichever others are overridden; the samplers skip the bookkeeping otherwise. The
    observations are the env's (after an ``observation_fn``), before preprocessing and
    filtering. ``on_postprocess_trajectory`` runs once the fragment's steps are taken: a
    finished episode shows its end, one the fragment cut its latest step.

    RLlib's new API stack reads the same episode through ``len(episode)``, ``get_return()``,
    ``get_observations()``, ``get_actions()``, ``custom_data``, ... (``episode_api``): the
    whole episode so far, recorded (``episode_records``) while some hook receives episodes.
    """

    def __init__(
        self,
        episode_id: int,
        env_index: int,
        worker_index: int,
        mapping_fn: MappingFn | None = None,
        worker: Any = None,
    ) -> None:
        self.episode_id = episode_id
        self.env_id = env_index
        self.worker_index = worker_index
        self.length = 0
        self.total_reward = 0.0
        self.user_data: dict[str, Any] = {}
        self.custom_metrics: dict[str, float] = {}
        self.hist_data: dict[str, list[float]] = {}
        self.media: dict[str, Any] = {}
        self._mapping_fn = mapping_fn
        self._worker = worker
        self._agent_to_policy: dict[Any, str] = {}
        if mapping_fn is None:
            # A single-agent env: one agent, acting with the one policy.
            self._agent_to_policy[SINGLE_AGENT_ID] = DEFAULT_POLICY_ID
        self.agent_rewards: dict[tuple[Any, str], float] = defaultdict(float)
        #: Each agent's transitions so far: the ``t`` of its next row (its own step index,
        #: 0 at its first action, however many env steps it waits between actions).
        self.agent_steps = AgentStepCounts(self)
        self._agent_obs: dict[Any, Any] = {}
        self._agent_infos: dict[Any, Any] = {}
        self._agent_actions: dict[Any, Any] = {}
        self._agent_prev_actions: dict[Any, Any] = {}
        self._agent_rewards_last: dict[Any, float] = {}
        self._agent_prev_rewards: dict[Any, float] = {}
        self._agent_extra: dict[Any, dict[str, Any]] = {}
        self._agent_state: dict[Any, list[Any]] = {}
        self._agent_terminated: dict[Any, bool] = {}
        self._agent_truncated: dict[Any, bool] = {}
        self._records = {}
        self._all_terminated = False
        self._all_truncated = False

    # ------------------------------------------------------------------ agents

    def policy_for(self, agent_id: Any = SINGLE_AGENT_ID) -> str:
        """The policy ``agent_id`` acts with in this episode (mapped on first use)."""
        policy_id = self._agent_to_policy.get(agent_id)
        if policy_id is None:
            if self._mapping_fn is None:
                policy_id = DEFAULT_POLICY_ID
            else:
                policy_id = self._mapping_fn(agent_id, self, worker=self._worker)
            self._agent_to_policy[agent_id] = policy_id
        return policy_id

    def get_agents(self) -> list[Any]:
        """The agents seen so far in this episode."""
        return list(self._agent_to_policy)

    @property
    def is_multi_agent(self) -> bool:
        """A multi-agent env's episode (its agents mapped by the mapping function)."""
        return self._mapping_fn is not None

    def _agent_steps_taken(self) -> int:
        """Agent steps so far: a single-agent env's env steps, else every agent's actions."""
        if self._mapping_fn is None:
            return self.length
        return sum(len(record.actions) for record in self._records.values())

    @property
    def total_env_steps(self) -> int:
        """Env steps so far (``length``)."""
        return self.length

    @property
    def total_agent_steps(self) -> int:
        """Agent steps so far: a single-agent env's env steps, else each agent's closed
        transitions summed."""
        if self._mapping_fn is None:
            return self.length
        return sum(self.agent_steps.values())

    # ------------------------------------------------------------------ the last step

    def _observe(self, agent_id: Any, obs: Any, info: Any) -> None:
        """An observation (and info) arrived for ``agent_id``: a reset's or a step's."""
        self._agent_obs[agent_id] = obs
        self._agent_infos[agent_id] = info
        self._record_of(agent_id).observe(obs, info, self.length)

    def _observe_agents(self, obs: dict[Any, Any], infos: dict[Any, Any]) -> None:
        """The observations (and infos) of a multi-agent env's reset or step."""
        for agent_id, ob in obs.items():
            self._record_of(agent_id).observe(ob, infos.get(agent_id), self.length)
        self._agent_obs.update(obs)
        self._agent_infos.update(infos)

    def _end(self, terminated: bool, truncated: bool) -> None:
        """A multi-agent episode ended (``__all__``, or cut by the horizon: truncated)."""
        self._all_terminated = terminated
        self._all_truncated = truncated

    def _act(
        self, agent_id: Any, action: Any, extra: dict[str, Any], state: list[Any] | None
    ) -> None:
        """``agent_id`` acted: its action (as the env gets it), the policy's extra outputs of
        its row and the state it acts from next (a model with memory)."""
        if agent_id in self._agent_actions:
            self._agent_prev_actions[agent_id] = self._agent_actions[agent_id]
        self._agent_actions[agent_id] = action
        self._agent_extra[agent_id] = extra
        self._record_of(agent_id).act(action, extra)
        if state is not None:
            self._agent_state[agent_id] = state

    def _reward(self, agent_id: Any, reward: float, terminated: bool, truncated: bool) -> None:
        """A step's reward (and done flags) for ``agent_id``."""
        if agent_id in self._agent_rewards_last:
            self._agent_prev_rewards[agent_id] = self._agent_rewards_last[agent_id]
        self._agent_rewards_last[agent_id] = float(reward)
        self._record_of(agent_id).reward(float(reward))
        self._agent_terminated[agent_id] = bool(terminated)
        self._agent_truncated[agent_id] = bool(truncated)

    def last_observation_for(self, agent_id: Any = SINGLE_AGENT_ID) -> Any:
        return self._agent_obs.get(agent_id)

    def last_raw_obs_for(self, agent_id: Any = SINGLE_AGENT_ID) -> Any:
        return self._agent_obs.get(agent_id)

    def last_info_for(self, agent_id: Any = SINGLE_AGENT_ID) -> dict[str, Any]:
        info = self._agent_infos.get(agent_id)
        return info if isinstance(info, dict) else {}

    def last_action_for(self, agent_id: Any = SINGLE_AGENT_ID) -> Any:
        return self._agent_actions.get(agent_id)

    def prev_action_for(self, agent_id: Any = SINGLE_AGENT_ID) -> Any:
        """The action before the last one (None before the agent's second action)."""
        return self._agent_prev_actions.get(agent_id)

    def last_reward_for(self, agent_id: Any = SINGLE_AGENT_ID) -> float:
        return self._agent_rewards_last.get(agent_id, 0.0)

    def prev_reward_for(self, agent_id: Any = SINGLE_AGENT_ID) -> float:
        return self._agent_prev_rewards.get(agent_id, 0.0)

    def last_extra_action_outs_for(self, agent_id: Any = SINGLE_AGENT_ID) -> dict[str, Any]:
        """The policy's extra outputs of the agent's last action (``action_logp``,
        ``action_dist_inputs``, ``vf_preds`` where computed while acting)."""
        return self._agent_extra.get(agent_id, {})

    #: The reference's earlier name of ``last_extra_action_outs_for``.
    last_pi_info_for = last_extra_action_outs_for

    def rnn_state_for(self, agent_id: Any = SINGLE_AGENT_ID) -> list[Any]:
        """The state a model with memory acts from at the agent's next step (empty without
        memory)."""
        return self._agent_state.get(agent_id, [])

    def last_terminated_for(self, agent_id: Any = SINGLE_AGENT_ID) -> bool:
        return self._agent_terminated.get(agent_id, False)

    def last_truncated_for(self, agent_id: Any = SINGLE_AGENT_ID) -> bool:
        return self._agent_truncated.get(agent_id, False)

    def last_done_for(self, agent_id: Any = SINGLE_AGENT_ID) -> bool:
        return self.last_terminated_for(agent_id) or self.last_truncated_for(agent_id)

    def __repr__(self) -> str:
        return (
            f"Episode(id={self.episode_id}, env={self.env_id}, length={self.length}, "
            f"agents={self.get_agents()!r}, total_reward={self.total_reward:g})"
        )


#: The reference's name of the episode callbacks receive: the same class.
MultiAgentEpisode = Episode


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
