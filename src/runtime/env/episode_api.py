"""RLlib's new API stack episode API (``SingleAgentEpisode``, ``MultiAgentEpisode``) on the one
``Episode`` class every hook receives, beside its 2.x accessors.

A single-agent env's episode answers as a ``SingleAgentEpisode``: ``len(episode)``,
``get_return()``, ``get_observations(indices=None)`` (the reset's observation first, so one more
than the actions), ``get_infos()``, ``get_actions()``, ``get_rewards()``,
``get_extra_model_outputs(key=None, indices=None)``, ``is_terminated`` / ``is_truncated`` /
``is_done``, ``env_steps()``, ``agent_steps()``, ``id_`` and ``custom_data`` (the dict
``user_data`` is). ``indices``: None for everything, an int (negative from the end), a list of
ints or a slice; the values are the env's as it returned them (before preprocessing and
filtering), in lists.

A multi-agent env's answers as a ``MultiAgentEpisode``: the getters take ``agent_ids`` (one id
or a collection; None: every agent) and return ``{agent id: ...}``; with ``env_steps=True``
(the default) ``indices`` count env steps, and only the agents with data at those steps are in
the dict; with ``env_steps=False`` they count each agent's own steps. ``get_return()`` sums the
agents' rewards (``include_hanging_rewards=True`` adds those an agent got before its first
action), ``agent_ids``, ``module_for(agent_id)`` and ``agent_episodes`` (each agent's data as a
single-agent episode: ``AgentEpisode``). Left out: lookback buffers and their options
(``neg_index_as_lookback``, ``fill``, ``one_hot_discrete``), ``get_agents_to_act()`` /
``get_agents_that_stepped()``, ``get_terminateds()`` / ``get_truncateds()``, ``t_started``,
``get_duration_s()`` and the methods that build episodes (``add_env_step``, ``cut``,
``concat_episode``, ``to_numpy``).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from runtime.env.episode_records import AgentRecord, Indices, absent, pick, pick_env_steps

#: The agent of a single-agent env (the reference's ``_DUMMY_AGENT_ID``).
SINGLE_AGENT_ID = "agent0"

_OBSERVED = ("observations", "infos")


class NewStackEpisode:
    """The new API stack's getters; mixed into ``Episode`` (which holds the data)."""

    length: int
    total_reward: float
    episode_id: int
    user_data: dict[str, Any]
    _records: dict[Any, AgentRecord]
    #: Whether the records keep every observation and info (``AgentRecord``).
    _keeps_observations: bool = True
    #: A multi-agent episode's done flags (``__all__``, or the horizon); a single-agent
    #: episode's are its agent's.
    _all_terminated: bool
    _all_truncated: bool

    if TYPE_CHECKING:

        @property
        def is_multi_agent(self) -> bool: ...

        def policy_for(self, agent_id: Any = SINGLE_AGENT_ID) -> str: ...

        def last_terminated_for(self, agent_id: Any = SINGLE_AGENT_ID) -> bool: ...

        def last_truncated_for(self, agent_id: Any = SINGLE_AGENT_ID) -> bool: ...

        def get_agents(self) -> list[Any]: ...

        @property
        def total_agent_steps(self) -> int: ...

    def __len__(self) -> int:
        """Env steps so far."""
        return self.length

    @property
    def id_(self) -> str:
        """The episode's id as RLlib's string (``int(episode.id_) == episode.episode_id``)."""
        return str(self.episode_id)

    @property
    def custom_data(self) -> dict[str, Any]:
        """A dict for the hooks' own data (the same dict as 2.x's ``user_data``)."""
        return self.user_data

    def env_steps(self) -> int:
        return self.length

    @property
    def is_terminated(self) -> bool:
        if self.is_multi_agent:
            return self._all_terminated
        return self.last_terminated_for()

    @property
    def is_truncated(self) -> bool:
        if self.is_multi_agent:
            return self._all_truncated
        return self.last_truncated_for()

    @property
    def is_done(self) -> bool:
        return self.is_terminated or self.is_truncated

    def get_return(self, include_hanging_rewards: bool = False) -> float:
        """The rewards so far, summed (every agent's)."""
        if not self.is_multi_agent:
            return self.total_reward
        total = sum(sum(r.rewards) for r in self._records.values())
        if include_hanging_rewards:
            total += sum(r.hanging for r in self._records.values())
        return float(total)

    @property
    def agent_ids(self) -> set[Any]:
        return set(self.get_agents())

    def module_for(self, agent_id: Any) -> str:
        """The policy (RLlib's module) ``agent_id`` acts with."""
        return self.policy_for(agent_id)

    @property
    def agent_episodes(self) -> dict[Any, AgentEpisode]:
        """Each agent's data as a single-agent episode."""
        return {agent: AgentEpisode(self, agent) for agent in self._records}

    def get_observations(
        self, indices: Indices = None, agent_ids: Any = None, *, env_steps: bool = True
    ) -> Any:
        return self._get("observations", indices, agent_ids, env_steps)

    def get_infos(
        self, indices: Indices = None, agent_ids: Any = None, *, env_steps: bool = True
    ) -> Any:
        return self._get("infos", indices, agent_ids, env_steps)

    def get_actions(
        self, indices: Indices = None, agent_ids: Any = None, *, env_steps: bool = True
    ) -> Any:
        return self._get("actions", indices, agent_ids, env_steps)

    def get_rewards(
        self, indices: Indices = None, agent_ids: Any = None, *, env_steps: bool = True
    ) -> Any:
        return self._get("rewards", indices, agent_ids, env_steps)

    def get_extra_model_outputs(
        self,
        key: str | None = None,
        indices: Indices = None,
        agent_ids: Any = None,
        *,
        env_steps: bool = True,
    ) -> Any:
        """The policy's extra outputs of each action (``action_logp``, ``action_dist_inputs``,
        ``vf_preds`` where computed while acting): output ``key``'s, or all by name."""
        if not self.is_multi_agent:
            self._single("get_extra_model_outputs", agent_ids)
            return _pick_extra(self._record_of(SINGLE_AGENT_ID).extra_column(key), indices)
        out: dict[Any, Any] = {}
        missing: KeyError | None = None
        for agent in self._agents_asked(agent_ids):
            record = self._records[agent]
            try:
                column = record.extra_column(key)
            except KeyError as error:
                missing = error
                continue
            if env_steps and indices is not None:
                got = _pick_extra_at(column, record.act_t, indices, self.length)
                if got is None:
                    continue
            else:
                got = _pick_extra(column, indices)
            out[agent] = got
        if not out and missing is not None:
            raise missing
        return out

    # ------------------------------------------------------------------ helpers

    def _record_of(self, agent_id: Any) -> AgentRecord:
        record = self._records.get(agent_id)
        if record is None:
            record = self._records[agent_id] = AgentRecord(self._keeps_observations)
        return record

    def _single(self, getter: str, agent_ids: Any) -> None:
        if agent_ids is not None:
            raise ValueError(
                f"{getter}(agent_ids={agent_ids!r}): a single-agent env's episode has one agent; "
                "allowed: agent_ids=None (agent_ids is a multi-agent episode's)"
            )

    def _agents_asked(self, agent_ids: Any) -> list[Any]:
        if agent_ids is None:
            return list(self._records)
        if isinstance(agent_ids, list | set | frozenset) or (
            isinstance(agent_ids, tuple) and agent_ids not in self._records
        ):
            asked: Collection[Any] = agent_ids
        else:
            asked = [agent_ids]
        return [agent for agent in asked if agent in self._records]

    def _get(self, column: str, indices: Indices, agent_ids: Any, env_steps: bool) -> Any:
        if not self.is_multi_agent:
            self._single(f"get_{column}", agent_ids)
            return pick(self._record_of(SINGLE_AGENT_ID).column(column)[0], indices)
        span = self.length + 1 if column in _OBSERVED else self.length
        out: dict[Any, Any] = {}
        for agent in self._agents_asked(agent_ids):
            values, times = self._records[agent].column(column)
            if env_steps and indices is not None:
                got = pick_env_steps(values, times, indices, span)
                if absent(got):
                    continue
            else:
                got = pick(values, indices)
            out[agent] = got
        return out


class AgentEpisode:
    """One agent's steps of a multi-agent episode, read as a single-agent episode (RLlib's
    ``MultiAgentEpisode.agent_episodes[agent_id]``); its length is the agent's actions."""

    def __init__(self, episode: NewStackEpisode, agent_id: Any) -> None:
        self._episode = episode
        self.agent_id = agent_id
        self._record = episode._record_of(agent_id)

    @property
    def module_id(self) -> str:
        return self._episode.module_for(self.agent_id)

    @property
    def id_(self) -> str:
        return self._episode.id_

    def __len__(self) -> int:
        return len(self._record.actions)

    def env_steps(self) -> int:
        return len(self._record.actions)

    def agent_steps(self) -> int:
        return len(self._record.actions)

    @property
    def is_terminated(self) -> bool:
        return self._episode.last_terminated_for(self.agent_id)

    @property
    def is_truncated(self) -> bool:
        return self._episode.last_truncated_for(self.agent_id)

    @property
    def is_done(self) -> bool:
        return self.is_terminated or self.is_truncated

    def get_return(self) -> float:
        return float(sum(self._record.rewards))

    def get_observations(self, indices: Indices = None) -> Any:
        return pick(self._record.observations, indices)

    def get_infos(self, indices: Indices = None) -> Any:
        return pick(self._record.infos, indices)

    def get_actions(self, indices: Indices = None) -> Any:
        return pick(self._record.actions, indices)

    def get_rewards(self, indices: Indices = None) -> Any:
        return pick(self._record.rewards, indices)

    def get_extra_model_outputs(self, key: str | None = None, indices: Indices = None) -> Any:
        return _pick_extra(self._record.extra_column(key), indices)

    def __repr__(self) -> str:
        return (
            f"AgentEpisode(agent={self.agent_id!r}, len={len(self)}, return={self.get_return():g})"
        )


def _pick_extra(column: list[Any] | dict[str, list[Any]], indices: Indices) -> Any:
    if isinstance(column, dict):
        return {name: pick(values, indices) for name, values in column.items()}
    return pick(column, indices)


def _pick_extra_at(
    column: list[Any] | dict[str, list[Any]], times: list[int], indices: Indices, span: int
) -> Any:
    """``_pick_extra`` on the env's timeline; None where the agent has no action at an int
    index's env step."""
    if isinstance(column, dict):
        picked = {name: pick_env_steps(v, times, indices, span) for name, v in column.items()}
        return None if any(absent(v) for v in picked.values()) else picked
    got = pick_env_steps(column, times, indices, span)
    return None if absent(got) else got
