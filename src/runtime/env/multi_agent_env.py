"""``MultiAgentEnv``: the multi-agent env API of the runtime (gymnasium-style, dicts keyed by
agent id), and ``make_multi_agent``, which turns a single-agent env into one with N
independent copies.

The contract, which the sampler relies on (and checks with ``runtime.env.multi_agent_checks``
unless told not to: fully in each sub-env's first steps, then what it relies on):

- ``reset(seed=, options=)`` returns ``(obs, infos)``: dicts keyed by agent id.
- ``step(action_dict)`` returns ``(obs, rewards, terminateds, truncateds, infos)``: dicts keyed
  by agent id; ``terminateds`` and ``truncateds`` also hold ``"__all__"``, True once the episode
  is over for every agent.
- Rewards may be for any agent, at any step. The rewards an agent gets from its action until
  its next observation (or its end) add up into that transition's reward, so a turn-based env
  may reward an agent while others move. Rewards before an agent's first action (and after it
  is done) have no transition to go to: they count in the episode's returns only, as in the
  reference's sampler (a reward that no action of the agent led to teaches it nothing).
- The agents that act next are those in the returned ``obs`` whose ``terminateds`` /
  ``truncateds`` entry is not True. Agents may join late (they first appear in ``obs``) and
  leave early: at the step where an agent is done, ``obs`` may hold its last observation
  along with ``terminateds[agent]`` or ``truncateds[agent]`` True, and it does not appear in
  ``obs`` again in this episode.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, TypeAlias

import gymnasium as gym

from runtime.env.env_classes import refuse_unread_env_config, takes_env_config
from runtime.env.multi_agent_checks import MultiAgentEnvError

__all__ = [
    "AgentID",
    "MultiAgentDict",
    "MultiAgentEnv",
    "MultiAgentEnvCopies",
    "MultiAgentEnvError",
    "make_multi_agent",
]

#: Any hashable value; ints and strings are usual.
AgentID: TypeAlias = Any
#: A dict keyed by agent id (and, for terminateds / truncateds, ``"__all__"``).
MultiAgentDict: TypeAlias = dict[Any, Any]
#: ``make_multi_agent``'s argument: a gymnasium id, or a callable taking the env config.
EnvSource: TypeAlias = str | Callable[[Any], Any] | type[Any]


class MultiAgentEnv:
    """Base class of multi-agent envs: subclass it and implement ``reset`` and ``step``.

    Spaces: set EITHER ``observation_spaces`` / ``action_spaces`` (dicts agent id -> space)
    OR one shared ``observation_space`` / ``action_space``, as class or instance attributes;
    ``get_observation_space(agent_id)`` / ``get_action_space(agent_id)`` look them up in that
    order. Set ``possible_agents`` to every agent id that can appear, when known.

    See the module docstring for what ``reset`` and ``step`` return.
    """

    #: The space shared by all agents (used when ``observation_spaces`` lacks the agent).
    observation_space: gym.Space[Any] | None = None
    #: The space shared by all agents (used when ``action_spaces`` lacks the agent).
    action_space: gym.Space[Any] | None = None
    #: Per-agent spaces, agent id -> space.
    observation_spaces: dict[AgentID, gym.Space[Any]] | None = None
    action_spaces: dict[AgentID, gym.Space[Any]] | None = None
    #: Every agent id that can appear in an episode (empty when not known in advance).
    possible_agents: list[AgentID]

    def __init__(self, config: Mapping[str, Any] | None = None) -> None:
        # Set only when a subclass has not set it (as a class attribute, or before calling
        # super().__init__()): a fresh list per instance, never a shared mutable default.
        if not hasattr(self, "possible_agents"):
            self.possible_agents = []

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[MultiAgentDict, MultiAgentDict]:
        """Start an episode; return ``(obs, infos)`` keyed by agent id."""
        raise NotImplementedError(f"{type(self).__name__} must implement reset()")

    def step(
        self, action_dict: MultiAgentDict
    ) -> tuple[MultiAgentDict, MultiAgentDict, MultiAgentDict, MultiAgentDict, MultiAgentDict]:
        """Apply the actions of the agents in ``action_dict``; return ``(obs, rewards,
        terminateds, truncateds, infos)`` keyed by agent id, with ``"__all__"`` in
        ``terminateds`` and ``truncateds``."""
        raise NotImplementedError(f"{type(self).__name__} must implement step()")

    def get_observation_space(self, agent_id: AgentID) -> gym.Space[Any]:
        """The agent's entry in ``observation_spaces``, else the shared ``observation_space``;
        raises :class:`MultiAgentEnvError` when neither is there."""
        spaces = self.observation_spaces
        if spaces is not None and agent_id in spaces:
            return spaces[agent_id]
        if self.observation_space is not None:
            return self.observation_space
        raise self._no_space_error("observation", agent_id, spaces)

    def get_action_space(self, agent_id: AgentID) -> gym.Space[Any]:
        """The agent's entry in ``action_spaces``, else the shared ``action_space``; raises
        :class:`MultiAgentEnvError` when neither is there."""
        spaces = self.action_spaces
        if spaces is not None and agent_id in spaces:
            return spaces[agent_id]
        if self.action_space is not None:
            return self.action_space
        raise self._no_space_error("action", agent_id, spaces)

    def get_agent_ids(self) -> list[AgentID]:
        """``possible_agents`` if set, else the keys of ``observation_spaces`` if set, else
        ``[]``."""
        possible = getattr(self, "possible_agents", None)
        if possible:
            return list(possible)
        if self.observation_spaces:
            return list(self.observation_spaces)
        return []

    def get_sub_environments(self) -> list[Any]:
        """The envs this one wraps or is made of (``[]`` for a plain env)."""
        return []

    # The reference's space helpers: per-agent dicts, each agent's value in its own space.

    def observation_space_sample(self, agent_ids: list[AgentID] | None = None) -> MultiAgentDict:
        """A random observation per agent of ``agent_ids`` (None: ``get_agent_ids()``), each
        from the agent's observation space."""
        agents = self._sampled_agents("observation_space_sample", agent_ids)
        return {agent: self.get_observation_space(agent).sample() for agent in agents}

    def action_space_sample(self, agent_ids: list[AgentID] | None = None) -> MultiAgentDict:
        """A random action per agent of ``agent_ids`` (None: ``get_agent_ids()``), each from
        the agent's action space."""
        agents = self._sampled_agents("action_space_sample", agent_ids)
        return {agent: self.get_action_space(agent).sample() for agent in agents}

    def observation_space_contains(self, x: MultiAgentDict) -> bool:
        """Whether ``x`` is a dict whose every value is in its agent's observation space (it
        may hold any subset of the agents: in a turn-based env only some observe)."""
        return isinstance(x, dict) and all(
            self.get_observation_space(agent).contains(value) for agent, value in x.items()
        )

    def action_space_contains(self, x: MultiAgentDict) -> bool:
        """Whether ``x`` is a dict whose every value is in its agent's action space (any
        subset of the agents, as an action dict holds only the agents that act)."""
        return isinstance(x, dict) and all(
            self.get_action_space(agent).contains(value) for agent, value in x.items()
        )

    def _sampled_agents(self, method: str, agent_ids: list[AgentID] | None) -> list[AgentID]:
        if agent_ids is not None:
            return [agent for agent in agent_ids if agent != "__all__"]
        agents = self.get_agent_ids()
        if not agents:
            raise MultiAgentEnvError(
                f"env {type(self).__name__!r}: {method}() without agent_ids needs the env's "
                "agent ids, and it has none (possible_agents and observation_spaces are not "
                "set); pass agent_ids=[...] or set possible_agents"
            )
        return agents

    def close(self) -> None:
        """Release resources; nothing to do by default."""

    def render(self) -> Any:
        """Render the env; None by default."""
        return None

    @property
    def unwrapped(self) -> MultiAgentEnv:
        return self

    def _no_space_error(
        self, kind: str, agent_id: AgentID, spaces: dict[AgentID, gym.Space[Any]] | None
    ) -> MultiAgentEnvError:
        plural, shared = f"{kind}_spaces", f"{kind}_space"
        if spaces is None:
            per_agent = f"{plural} is not set"
        else:
            keys = list(spaces)
            shown = ", ".join(repr(key) for key in keys[:10]) + (", ..." if len(keys) > 10 else "")
            per_agent = f"{plural} has no key {agent_id!r} (its keys: [{shown}])"
        return MultiAgentEnvError(
            f"env {type(self).__name__!r}: no {kind} space for agent {agent_id!r}: {per_agent} "
            f"and the shared {shared} is None; set {plural}[{agent_id!r}] or {shared}"
        )


class MultiAgentEnvCopies(MultiAgentEnv):
    """N independent copies of a single-agent env, agent ids ``0..N-1``; the base of the
    classes ``make_multi_agent`` returns (they set ``env_source``).

    ``config["num_agents"]`` (default 1) is the number of copies. With a gymnasium id as the
    source, each copy is ``gymnasium.make(id)`` and the config is used for ``num_agents`` only;
    with a callable, each copy is ``source(config)``, the config passed as given (an
    ``EnvContext`` stays one; None becomes ``{}``), but for a class whose constructor takes no
    argument: each copy is ``source()``, and a key other than ``num_agents`` is a
    ``ConfigError``.

    ``reset(seed=s)`` resets copy ``i`` with seed ``s + i``. ``step`` steps the agents in the
    action dict; an agent whose copy terminated or truncated is done: it is in that step's
    obs with its last observation and not after. ``"__all__"`` is done once every agent is:
    ``terminateds["__all__"]`` if all of them terminated, else ``truncateds["__all__"]``.
    """

    #: The gymnasium id or env creator; set by ``make_multi_agent``.
    env_source: ClassVar[EnvSource | None] = None

    def __init__(self, config: Mapping[str, Any] | None = None) -> None:
        super().__init__(config)
        # The env's own config (an EnvContext or dict), not the algorithm's.
        env_config: Mapping[str, Any] = {} if config is None else config
        num_agents = env_config.get("num_agents", 1)
        if type(num_agents) is not int or num_agents < 1:
            raise MultiAgentEnvError(
                f"{type(self).__name__}: config['num_agents'] = {num_agents!r} "
                f"({type(num_agents).__name__}); allowed: an int >= 1 (the number of copies)"
            )
        source = type(self).env_source
        if source is None:
            raise MultiAgentEnvError(
                f"{type(self).__name__} has no env_source; make the class with "
                "make_multi_agent(env_name_or_creator)"
            )
        envs: list[Any]
        if isinstance(source, str):
            envs = [gym.make(source) for _ in range(num_agents)]
        elif isinstance(source, type) and not takes_env_config(source):
            # A class taking no argument is made as a gymnasium id is: the config is for
            # num_agents only, and another key would never reach the copies.
            refuse_unread_env_config(
                source, env_config, f"make_multi_agent({source.__name__})", read=("num_agents",)
            )
            envs = [source() for _ in range(num_agents)]
        else:
            envs = [source(env_config) for _ in range(num_agents)]
        for env in envs:
            if isinstance(env, MultiAgentEnv) or not (
                callable(getattr(env, "reset", None)) and callable(getattr(env, "step", None))
            ):
                raise MultiAgentEnvError(
                    f"{type(self).__name__}: the env creator returned {type(env).__name__}; "
                    "make_multi_agent needs a single-agent gymnasium env (reset() and step())"
                )
        #: The copies, agent i's at index i.
        self.envs: list[Any] = envs
        self.possible_agents = list(range(num_agents))
        self.observation_space = envs[0].observation_space
        self.action_space = envs[0].action_space
        self._live: dict[int, Any] = {}
        self._any_truncated = False
        self._has_reset = False

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[MultiAgentDict, MultiAgentDict]:
        obs: MultiAgentDict = {}
        infos: MultiAgentDict = {}
        for i, env in enumerate(self.envs):
            obs[i], infos[i] = env.reset(seed=None if seed is None else seed + i, options=options)
        self._live = dict(enumerate(self.envs))
        self._any_truncated = False
        self._has_reset = True
        return obs, infos

    def step(
        self, action_dict: MultiAgentDict
    ) -> tuple[MultiAgentDict, MultiAgentDict, MultiAgentDict, MultiAgentDict, MultiAgentDict]:
        obs: MultiAgentDict = {}
        rewards: MultiAgentDict = {}
        terminateds: MultiAgentDict = {}
        truncateds: MultiAgentDict = {}
        infos: MultiAgentDict = {}
        live = self._live
        for agent, action in action_dict.items():
            env = live.get(agent)
            if env is None:
                raise self._cannot_act_error(agent)
            ob, reward, terminated, truncated, info = env.step(action)
            obs[agent] = ob
            rewards[agent] = reward
            terminateds[agent] = terminated
            truncateds[agent] = truncated
            infos[agent] = info
            if terminated or truncated:
                del live[agent]
                if not terminated:
                    self._any_truncated = True
        if live:
            terminateds["__all__"] = truncateds["__all__"] = False
        else:
            truncated_all = self._any_truncated
            terminateds["__all__"] = not truncated_all
            truncateds["__all__"] = truncated_all
        return obs, rewards, terminateds, truncateds, infos

    def get_sub_environments(self) -> list[Any]:
        return list(self.envs)

    def close(self) -> None:
        for env in self.envs:
            env.close()

    def render(self) -> Any:
        """Agent 0's env's render()."""
        return self.envs[0].render()

    def _cannot_act_error(self, agent: Any) -> MultiAgentEnvError:
        name = type(self).__name__
        ids = f"0..{len(self.envs) - 1}"
        if type(agent) is not int or not 0 <= agent < len(self.envs):
            why = f"there is no agent {agent!r} (agent ids are the ints {ids})"
        elif not self._has_reset:
            why = "reset() has not been called yet"
        else:
            why = (
                f"agent {agent!r} is done (its env terminated or truncated) and cannot act "
                "until reset()"
            )
        return MultiAgentEnvError(
            f"env {name!r}: step() got an action for agent {agent!r}, but {why}"
        )


def make_multi_agent(env_name_or_creator: EnvSource) -> type[MultiAgentEnvCopies]:
    """A ``MultiAgentEnv`` class whose instances hold ``config["num_agents"]`` (default 1)
    independent copies of a single-agent env, agent ids ``0..n-1``.

    ``env_name_or_creator`` is a gymnasium id (each copy is ``gymnasium.make(id)``; the config
    is for ``num_agents`` only and none of its keys is passed on) or a callable that takes the
    env config (an ``EnvContext`` or dict, passed as given) and returns a gymnasium env (an env
    class taking no argument is made as ``source()``, with ``num_agents`` its only key). See
    :class:`MultiAgentEnvCopies` for seeding and done handling.

    The class is created here, so cloudpickle (and so Ray) carries it by value; plain
    ``pickle`` cannot.
    """
    if not isinstance(env_name_or_creator, str) and not callable(env_name_or_creator):
        raise MultiAgentEnvError(
            f"make_multi_agent: env_name_or_creator = {env_name_or_creator!r}; allowed: a "
            "gymnasium env id (str) or a callable taking the env config and returning an env"
        )
    if isinstance(env_name_or_creator, str) and not env_name_or_creator:
        raise MultiAgentEnvError("make_multi_agent: the env id is an empty string")

    class _Copies(MultiAgentEnvCopies):
        pass

    _Copies.env_source = env_name_or_creator

    name = _class_name(env_name_or_creator)
    _Copies.__name__ = name
    _Copies.__qualname__ = name
    _Copies.__doc__ = f"{MultiAgentEnvCopies.__doc__}\n    Source: {env_name_or_creator!r}.\n"
    return _Copies


def _class_name(source: EnvSource) -> str:
    """``"CartPole-v1"`` -> ``MultiAgentCartPoleV1``; a creator ``make_walker`` ->
    ``MultiAgentMakeWalker``; a lambda -> ``MultiAgentLambda``."""
    raw = source if isinstance(source, str) else getattr(source, "__name__", "")
    raw = raw.rsplit("/", 1)[-1].rsplit(":", 1)[-1]  # "ns/Name-v0", "module:Name-v0"
    parts = [part for part in re.split(r"[^0-9A-Za-z]+", raw) if part]
    if not parts:
        return "MultiAgentCopies"
    return "MultiAgent" + "".join(part[0].upper() + part[1:] for part in parts)
