"""PettingZoo envs as ``MultiAgentEnv``: ``ParallelPettingZooEnv`` for the parallel API and
``PettingZooEnv`` for the AEC (turn-based) API.

PettingZoo is an optional dependency (``pip install -e ".[pettingzoo]"``): this module never
imports it; the wrappers take the env object and use only its documented attributes.
"""

from __future__ import annotations

import warnings
from typing import Any

from runtime.env.multi_agent_env import MultiAgentDict, MultiAgentEnv, MultiAgentEnvError

__all__ = ["ParallelPettingZooEnv", "PettingZooEnv"]


class _PettingZooBase(MultiAgentEnv):
    """What both wrappers share: ``.env``, the spaces of ``env.possible_agents``, close and
    render."""

    def __init__(self, env: Any) -> None:
        super().__init__()
        #: The wrapped PettingZoo env.
        self.env = env
        self.possible_agents = list(env.possible_agents)
        self.observation_spaces = {a: env.observation_space(a) for a in self.possible_agents}
        self.action_spaces = {a: env.action_space(a) for a in self.possible_agents}
        self._any_truncated = False

    def get_sub_environments(self) -> list[Any]:
        return [self.env]

    def close(self) -> None:
        self.env.close()

    def render(self) -> Any:
        return self.env.render()

    def _all_flags(self, terminateds: MultiAgentDict, truncateds: MultiAgentDict) -> None:
        """Set ``"__all__"`` once the episode is over: terminated when no agent ended by
        truncation alone, else truncated."""
        truncated_all = self._any_truncated
        terminateds["__all__"] = not truncated_all
        truncateds["__all__"] = truncated_all

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.env})"


class ParallelPettingZooEnv(_PettingZooBase):
    """A PettingZoo ``ParallelEnv`` (every live agent acts at each step) as a ``MultiAgentEnv``.

    ``reset`` and ``step`` pass PettingZoo's dicts through (obs of agents that are done
    included: that is their last observation), with ``"__all__"`` added to copies of
    ``terminateds`` and ``truncateds``: the episode is over when ``env.agents`` is empty or
    every agent stepped is done.
    """

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[MultiAgentDict, MultiAgentDict]:
        output = self.env.reset(seed=seed, options=options)
        if not isinstance(output, tuple) or len(output) != 2:
            raise MultiAgentEnvError(
                f"{self!r}: the PettingZoo env's reset() returned {type(output).__name__}, not "
                "(observations, infos); ParallelPettingZooEnv needs PettingZoo >= 1.23's "
                "parallel API"
            )
        self._any_truncated = False
        obs, infos = output
        return obs, infos

    def step(
        self, action_dict: MultiAgentDict
    ) -> tuple[MultiAgentDict, MultiAgentDict, MultiAgentDict, MultiAgentDict, MultiAgentDict]:
        obs, rewards, terms, truncs, infos = self.env.step(action_dict)
        # Copies: a PettingZoo env may return (and keep using) its own dicts.
        terminateds = dict(terms)
        truncateds = dict(truncs)
        if not self._any_truncated:
            for agent, truncated in truncs.items():
                if truncated and not terms.get(agent):
                    self._any_truncated = True
                    break
        if not self.env.agents or (
            terms and all(done or truncs.get(agent) for agent, done in terms.items())
        ):
            self._all_flags(terminateds, truncateds)
        else:
            terminateds["__all__"] = truncateds["__all__"] = False
        return obs, rewards, terminateds, truncateds, infos


class PettingZooEnv(_PettingZooBase):
    """A PettingZoo ``AECEnv`` (agents take turns) as a ``MultiAgentEnv``.

    ``obs`` holds the agent whose turn it is (``env.agent_selection``), so the action dict of a
    step holds that agent only. After its action, agents that are done are stepped with None
    (PettingZoo's rule for removing them) here, so only agents that need a real action are
    asked for one.

    Rewards are PettingZoo's per-step ``env.rewards``, read right after the action, for every
    agent that has acted in this episode (the agent whose turn it is need not be among them):
    an agent gets a reward at the step whose action gave it (in rock-paper-scissors both
    players get the round's reward when the second one moves). A reward for an agent that has
    not acted yet has no action to go to and is dropped (with a warning when it is not 0).

    An agent is done at the step where PettingZoo removes it (steps it with None), which may
    come later than its ``terminations`` entry turning True: so every reward PettingZoo gives
    it reaches it before or with its done flag. At that step it is in ``obs`` with its last
    observation and in ``terminateds`` / ``truncateds`` with PettingZoo's flags; those dicts
    also hold the agent that acted (False unless it was removed). The episode is over when
    ``env.agents`` is empty: ``terminateds["__all__"]`` unless an agent ended by truncation,
    else ``truncateds["__all__"]``.
    """

    def __init__(self, env: Any) -> None:
        super().__init__(env)
        self._acted: set[Any] = set()
        self._has_reset = False
        self._warned_dropped = False

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[MultiAgentDict, MultiAgentDict]:
        env = self.env
        env.reset(seed=seed, options=options)
        self._acted = set()
        self._any_truncated = False
        self._has_reset = True
        self._step_done_agents()
        if not env.agents:
            return {}, {}
        agent = env.agent_selection
        return {agent: env.observe(agent)}, {agent: env.infos.get(agent, {})}

    def step(
        self, action_dict: MultiAgentDict
    ) -> tuple[MultiAgentDict, MultiAgentDict, MultiAgentDict, MultiAgentDict, MultiAgentDict]:
        env = self.env
        if not self._has_reset or not env.agents:
            raise MultiAgentEnvError(
                f"{self!r}: step() called "
                + ("before reset()" if not self._has_reset else "after the episode ended")
                + "; call reset() first"
            )
        agent = env.agent_selection
        if len(action_dict) != 1 or agent not in action_dict:
            raise MultiAgentEnvError(
                f"{self!r}: step() got actions for {list(action_dict)!r}, but it is agent "
                f"{agent!r}'s turn; an AEC env takes the action of the agent in the last obs "
                "only"
            )
        acted = self._acted
        acted.add(agent)
        env.step(action_dict[agent])

        obs: MultiAgentDict = {}
        rewards: MultiAgentDict = {}
        terminateds: MultiAgentDict = {agent: False}
        truncateds: MultiAgentDict = {agent: False}
        infos: MultiAgentDict = {}
        # env.rewards is this step's reward of each agent; stepping done agents with None
        # deletes or zeroes it, so read it now.
        for other, reward in env.rewards.items():
            if other in acted:
                rewards[other] = reward
            elif reward:
                self._warn_dropped(other, reward)
        self._step_done_agents((obs, terminateds, truncateds, infos))
        if env.agents:
            nxt = env.agent_selection
            obs[nxt] = env.observe(nxt)
            infos[nxt] = env.infos.get(nxt, {})
            terminateds["__all__"] = truncateds["__all__"] = False
        else:
            self._all_flags(terminateds, truncateds)
        return obs, rewards, terminateds, truncateds, infos

    def _step_done_agents(
        self,
        out: tuple[MultiAgentDict, MultiAgentDict, MultiAgentDict, MultiAgentDict] | None = None,
    ) -> None:
        """Step the selected agent with None while it is done, which makes PettingZoo remove
        it; an agent that has acted gets its last obs and its flags in ``out`` (obs,
        terminateds, truncateds, infos)."""
        env = self.env
        acted = self._acted
        limit = len(env.agents)
        while env.agents:
            agent = env.agent_selection
            terminated = env.terminations[agent]
            truncated = env.truncations[agent]
            if not (terminated or truncated):
                return
            if truncated and not terminated:
                self._any_truncated = True
            if out is not None and agent in acted:
                obs, terminateds, truncateds, infos = out
                obs[agent] = env.observe(agent)
                terminateds[agent] = terminated
                truncateds[agent] = truncated
                infos[agent] = env.infos.get(agent, {})
            env.step(None)
            limit -= 1
            if limit < 0:
                raise MultiAgentEnvError(
                    f"{self!r}: stepping done agents with None did not remove them (agent "
                    f"{agent!r} is still selected); the AEC env must remove a done agent "
                    "when it is stepped with None"
                )

    def _warn_dropped(self, agent: Any, reward: Any) -> None:
        if self._warned_dropped:
            return
        self._warned_dropped = True
        warnings.warn(
            f"{self!r}: agent {agent!r} got reward {reward!r} before it ever acted in this "
            "episode; such rewards have no action to go to and are dropped (warned once)",
            RuntimeWarning,
            stacklevel=3,
        )
