"""Our own versions of the reference's multi-agent test envs (its ``examples/env/multi_agent.py``),
written for the runtime's ``MultiAgentEnv`` API, behaving as the reference's do:

- ``RoundRobinMultiAgent``: N agents take turns, one acts per env step; each gets its
  observation (and the reward of its last action) only when its turn comes again, so agents are
  rewarded before they first act (0) and their rewards arrive turns after their actions.
- ``FlexAgentsMultiAgent``: agents join (acting at once, with the action of the last agent that
  acted) and are removed (terminated without a last observation) at random.
- ``EarlyDoneMultiAgent``: two agents take turns; the episode ends when agent 0 is done, while
  agent 1 waits for its next observation.
- ``SometimesZeroAgentsMultiAgent``: at each step a random subset of the agents (possibly none)
  observes and so acts next; random agents, acting or not, are rewarded at every step.

Each agent's own little env is a ``_Counter``: observation 0 (or its step count), reward 1 (or
100 with a counting observation) per step, terminated after a given number of steps. Random
choices come from the env's own generator, seeded by ``reset(seed=...)``.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

import gymnasium as gym

from runtime import MultiAgentEnv

ALL = "__all__"
Out = tuple[dict[Any, Any], dict[Any, Any], dict[Any, Any], dict[Any, Any], dict[Any, Any]]


class _Counter:
    """One agent's env: observation 0 (``counting``: its step count) and reward 1.0 (100.0)
    per step; terminated after ``length`` steps."""

    def __init__(self, length: int, counting: bool = False) -> None:
        self.length = length
        self.counting = counting
        self.k = 0

    def reset(self) -> tuple[int, dict[str, Any]]:
        self.k = 0
        return 0, {}

    def step(self, action: Any) -> tuple[int, float, bool, bool, dict[str, Any]]:
        self.k += 1
        obs = self.k if self.counting else 0
        return obs, (100.0 if self.counting else 1.0), self.k >= self.length, False, {}


class RoundRobinMultiAgent(MultiAgentEnv):
    """``config["num_agents"]`` (default 4) agents ``0..n-1`` that act in turn, each for 5 of
    its own steps; ``config["increment_obs"]``: observations count the agent's steps."""

    observation_space = gym.spaces.Discrete(10)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, config: Mapping[str, Any] | None = None) -> None:
        config = config or {}
        self.num = int(config.get("num_agents", 4))
        self.possible_agents = list(range(self.num))
        super().__init__(config)
        counting = bool(config.get("increment_obs", False))
        self.agents = [_Counter(5, counting) for _ in range(self.num)]
        self.turn = 0
        self.done: set[int] = set()
        self.last: dict[int, tuple[Any, float, bool, dict[str, Any]]] = {}

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[Any, Any], dict[Any, Any]]:
        self.done = set()
        self.last = {}
        for i, agent in enumerate(self.agents):
            obs, info = agent.reset()
            self.last[i] = (obs, 0.0, False, info)
        self.turn = 1 % self.num
        return {0: self.last[0][0]}, {0: self.last[0][3]}

    def step(self, action_dict: dict[Any, Any]) -> Out:
        for i, action in action_dict.items():
            obs, reward, terminated, _, info = self.agents[i].step(action)
            self.last[i] = (obs, reward, terminated, info)
        i = self.turn
        obs, reward, terminated, info = self.last[i]
        if terminated:
            # The reference's env gives a done agent reward 0 with its last observation.
            reward = 0.0
            self.done.add(i)
        self.turn = (i + 1) % self.num
        over = len(self.done) == self.num
        return (
            {i: obs},
            {i: reward},
            {i: terminated, ALL: over},
            {i: False, ALL: False},
            {i: info},
        )


class EarlyDoneMultiAgent(MultiAgentEnv):
    """Agents 0 (3 steps) and 1 (5 steps) act in turn; the episode is over once agent 0 is
    done, agent 1 still waiting for the observation after its last action."""

    observation_space = gym.spaces.Discrete(10)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, config: Mapping[str, Any] | None = None) -> None:
        self.possible_agents = [0, 1]
        super().__init__(config)
        self.agents = [_Counter(3), _Counter(5)]
        self.turn = 0
        self.done: set[int] = set()
        self.last: dict[int, tuple[Any, float, bool, dict[str, Any]]] = {}

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[Any, Any], dict[Any, Any]]:
        self.done = set()
        self.last = {}
        for i, agent in enumerate(self.agents):
            obs, info = agent.reset()
            self.last[i] = (obs, 0.0, False, info)
        self.turn = 1
        return {0: self.last[0][0]}, {0: self.last[0][3]}

    def step(self, action_dict: dict[Any, Any]) -> Out:
        for i, action in action_dict.items():
            obs, reward, terminated, _, info = self.agents[i].step(action)
            self.last[i] = (obs, reward, terminated, info)
        i = self.turn
        obs, reward, terminated, info = self.last[i]
        if terminated:
            reward = 0.0
            self.done.add(i)
        self.turn = (i + 1) % 2
        over = len(self.done) == 1
        return {i: obs}, {i: reward}, {i: terminated, ALL: over}, {i: False, ALL: False}, {i: info}


class FlexAgentsMultiAgent(MultiAgentEnv):
    """Starts with one agent (25 steps each); after a step with actions a new agent joins with
    probability 0.25 (acting at once with the last action), and with more than one agent a
    random one is removed with probability 0.75 (terminated, no last observation)."""

    observation_space = gym.spaces.Discrete(2)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, config: Mapping[str, Any] | None = None) -> None:
        super().__init__(config)
        self.agents: dict[int, _Counter] = {}
        self.next_id = 0
        self.done: set[int] = set()
        self.rng = random.Random(0)

    def _spawn(self) -> int:
        agent = self.next_id
        self.agents[agent] = _Counter(25)
        self.next_id += 1
        return agent

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[Any, Any], dict[Any, Any]]:
        if seed is not None:
            self.rng.seed(seed)
        self.agents = {}
        self.done = set()
        first = self._spawn()
        obs, info = self.agents[first].reset()
        return {first: obs}, {first: info}

    def step(self, action_dict: dict[Any, Any]) -> Out:
        obs: dict[Any, Any] = {}
        rewards: dict[Any, Any] = {}
        terms: dict[Any, Any] = {}
        infos: dict[Any, Any] = {}
        action = None
        for i, action in action_dict.items():
            obs[i], rewards[i], terms[i], _, infos[i] = self.agents[i].step(action)
            if terms[i]:
                self.done.add(i)
        if action_dict and self.rng.random() > 0.75:
            i = self._spawn()
            obs[i], rewards[i], terms[i], _, infos[i] = self.agents[i].step(action)
            if terms[i]:
                self.done.add(i)
        if len(self.agents) > 1 and self.rng.random() > 0.25:
            removed = self.rng.choice(list(self.agents))
            terms[removed] = True
            del self.agents[removed]
        terms[ALL] = len(self.done) == len(self.agents)
        return obs, rewards, terms, {ALL: False}, infos


class SometimesZeroAgentsMultiAgent(MultiAgentEnv):
    """``config["num_agents"]`` (default 3) agents of 25 steps each; after every step (and
    at reset) a random subset of the agents that are not done, possibly empty, gets an
    observation (a random one if it has none pending: it has not acted yet) and acts next;
    and a random subset of them gets a random reward in [0, 1), in place of any reward of its
    own action. The episode is over when every agent is done."""

    observation_space = gym.spaces.Discrete(2)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, config: Mapping[str, Any] | None = None) -> None:
        config = config or {}
        self.num = int(config.get("num_agents", 3))
        self.possible_agents = list(range(self.num))
        super().__init__(config)
        self.agents = [_Counter(25) for _ in range(self.num)]
        self.pending: dict[int, Any] = {}
        self.done: set[int] = set()
        self.rng = random.Random(0)

    def _random_agents(self) -> set[int]:
        count = self.rng.randrange(self.num)
        picked = self.rng.sample(range(self.num), self.num)[:count]
        return {agent for agent in picked if agent not in self.done}

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[Any, Any], dict[Any, Any]]:
        if seed is not None:
            self.rng.seed(seed)
        self.done = set()
        self.pending = {}
        # (Every agent starts afresh; only some observe.)
        first = [agent.reset() for agent in self.agents]
        observing = self._random_agents()
        return {a: first[a][0] for a in observing}, {a: first[a][1] for a in observing}

    def step(self, action_dict: dict[Any, Any]) -> Out:
        rewards: dict[Any, Any] = {}
        terms: dict[Any, Any] = {}
        for agent, action in action_dict.items():
            ob, rewards[agent], terms[agent], _, _ = self.agents[agent].step(action)
            self.pending[agent] = ob
            if terms[agent]:
                self.done.add(agent)
        terms[ALL] = len(self.done) == self.num
        obs: dict[Any, Any] = {}
        infos: dict[Any, Any] = {}
        for agent in self._random_agents():
            if agent not in self.pending:
                self.pending[agent] = self.rng.randrange(2)
                infos[agent] = {"fourty-two": 42}
            obs[agent] = self.pending.pop(agent)
        for agent in self._random_agents():
            rewards[agent] = self.rng.random()
        return obs, rewards, terms, {ALL: False}, infos
