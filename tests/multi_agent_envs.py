"""Small ``MultiAgentEnv``s for the multi-agent tests (module level, so that configs and
checkpoints can name them and their mapping functions by import path).

- ``ScriptedEnv``: deterministic; each agent has a (join, leave) script, so a test can count
  the rows every agent must produce; agents join late and leave early.
- ``TurnEnv``: two agents take turns; every agent that has acted is rewarded at every step,
  so each transition's reward is the sum of two steps' rewards.
- ``MalformedEnv``: breaks the ``MultiAgentEnv`` contract in one chosen way (``"mistake"``)
  at one chosen step.

Observations are ``[agent number, env time]`` (float32), so a test can tell from a row which
agent and which step it came from.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np

from runtime import MultiAgentEnv

ALL = "__all__"
#: The space of every observation of these envs: ``[agent number, env time]``.
OBS_SPACE = gym.spaces.Box(0.0, 100.0, (2,), np.float32)
ACTION_SPACE = gym.spaces.Discrete(2)

#: ``ScriptedEnv``'s default script: agent -> (env time of its first obs, env time of its
#: last obs). It acts at env times ``join .. leave - 1``: ``leave - join`` rows. An agent
#: whose ``leave`` is before the episode's end is terminated there.
SCRIPT: dict[str, tuple[int, int]] = {
    "a": (0, 6),  # the whole episode
    "b": (2, 6),  # joins late
    "c": (0, 3),  # leaves early
    "d": (1, 4),  # joins late and leaves early
}
SCRIPT_LENGTH = 6
AGENT_NUMBER = {"a": 1, "b": 2, "c": 3, "d": 4, "x": 1, "y": 2, "agent_0": 1, "agent_1": 2}


def obs_of(agent: str, t: int) -> np.ndarray[Any, np.dtype[np.float32]]:
    return np.array([AGENT_NUMBER[agent], t], np.float32)


def scripted_reward(agent: str, t: int) -> float:
    """The reward ``agent`` gets for acting at env time ``t`` (paid at ``t + 1``)."""
    return float(AGENT_NUMBER[agent]) + 0.1 * t


class ScriptedEnv(MultiAgentEnv):
    """Agents follow ``config["script"]`` (default ``SCRIPT``) over ``config["length"]``
    (default ``SCRIPT_LENGTH``) env steps; the episode then ends for all: terminated, or
    truncated with ``config["truncate_at_end"]``. With ``config["per_agent_spaces"]`` the
    spaces are per agent (``observation_spaces`` / ``action_spaces``) and there are no shared
    ones."""

    def __init__(self, config: Mapping[str, Any] | None = None) -> None:
        config = dict(config or {})
        self.script: dict[str, tuple[int, int]] = dict(config.get("script", SCRIPT))
        self.length = int(config.get("length", SCRIPT_LENGTH))
        self.truncate_at_end = bool(config.get("truncate_at_end", False))
        self.possible_agents = list(self.script)
        if config.get("per_agent_spaces"):
            self.observation_spaces = {agent: OBS_SPACE for agent in self.script}
            self.action_spaces = {agent: ACTION_SPACE for agent in self.script}
            if config["per_agent_spaces"] == "distinct":
                # No space common to all agents: a policy no agent maps to gets none.
                self.action_spaces = {
                    agent: gym.spaces.Discrete(2 + k) for k, agent in enumerate(self.script)
                }
        else:
            self.observation_space = OBS_SPACE
            self.action_space = ACTION_SPACE
        super().__init__(config)
        self.t = 0

    def expected_rows(self) -> dict[str, int]:
        """The rows each agent produces per episode."""
        return {
            agent: min(leave, self.length) - join for agent, (join, leave) in self.script.items()
        }

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[Any, Any], dict[Any, Any]]:
        self.t = 0
        obs = {a: obs_of(a, 0) for a, (join, _) in self.script.items() if join == 0}
        return obs, {a: {} for a in obs}

    def step(
        self, action_dict: dict[Any, Any]
    ) -> tuple[dict[Any, Any], dict[Any, Any], dict[Any, Any], dict[Any, Any], dict[Any, Any]]:
        acting = {a for a, (join, leave) in self.script.items() if join <= self.t < leave}
        if set(action_dict) != acting:
            raise AssertionError(f"t={self.t}: actions for {sorted(action_dict)}, not {acting}")
        rewards = {a: scripted_reward(a, self.t) for a in action_dict}
        self.t += 1
        end = self.t >= self.length
        obs: dict[Any, Any] = {}
        terms: dict[Any, Any] = {}
        truncs: dict[Any, Any] = {}
        for agent, (join, leave) in self.script.items():
            last = min(leave, self.length)
            if not join <= self.t <= last:
                continue  # not joined yet, or left at an earlier step
            obs[agent] = obs_of(agent, self.t)
            if self.t == last:
                truncated = end and self.truncate_at_end
                terms[agent] = not truncated
                truncs[agent] = truncated
        terms[ALL] = end and not self.truncate_at_end
        truncs[ALL] = end and self.truncate_at_end
        return obs, rewards, terms, truncs, {a: {"t": self.t} for a in obs}


class TurnEnv(MultiAgentEnv):
    """Agents ``"x"`` and ``"y"`` take turns, ``"x"`` first, for ``config["turns"]``
    (default 6) env steps. At env step ``k`` (1-based) every agent that has acted so far gets
    reward ``k`` (``"y"`` gets ``100 * k``). At the end both agents get a last observation,
    terminated. So ``"x"`` (acting at steps 1, 3, 5) has rewards ``[1+2, 3+4, 5+6]`` and
    ``"y"`` (acting at 2, 4, 6) ``[100*(2+3), 100*(4+5), 100*6]``."""

    observation_space = OBS_SPACE
    action_space = ACTION_SPACE

    def __init__(self, config: Mapping[str, Any] | None = None) -> None:
        self.possible_agents = ["x", "y"]
        super().__init__(config)
        self.turns = int((config or {}).get("turns", 6))
        self.k = 0
        self.acted: set[str] = set()

    @staticmethod
    def expected_rewards(turns: int = 6) -> dict[str, list[float]]:
        x: list[float] = []
        y: list[float] = []
        for k in range(1, turns + 1):
            rows, scale = (x, 1.0) if k % 2 == 1 else (y, 100.0)
            rows.append(scale * (k + (k + 1 if k < turns else 0)))
        return {"x": x, "y": y}

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[Any, Any], dict[Any, Any]]:
        self.k = 0
        self.acted = set()
        return {"x": obs_of("x", 0)}, {"x": {}}

    def step(
        self, action_dict: dict[Any, Any]
    ) -> tuple[dict[Any, Any], dict[Any, Any], dict[Any, Any], dict[Any, Any], dict[Any, Any]]:
        self.k += 1
        mover = "x" if self.k % 2 == 1 else "y"
        if set(action_dict) != {mover}:
            raise AssertionError(f"step {self.k}: actions for {sorted(action_dict)}, not {mover}")
        self.acted.add(mover)
        rewards = {a: (1.0 if a == "x" else 100.0) * self.k for a in self.acted}
        if self.k >= self.turns:
            obs = {a: obs_of(a, self.k) for a in ("x", "y")}
            done = {"x": True, "y": True, ALL: True}
            return obs, rewards, done, {"x": False, "y": False, ALL: False}, {}
        other = "y" if mover == "x" else "x"
        return {other: obs_of(other, self.k)}, rewards, {ALL: False}, {ALL: False}, {}


#: What ``MalformedEnv`` can get wrong.
MISTAKES = ("no_all_in_terminateds", "no_all_in_truncateds", "obs_outside")


class MalformedEnv(MultiAgentEnv):
    """Agents ``"agent_0"`` and ``"agent_1"`` act every step for ``config["length"]``
    (default 10) steps; at env step ``config["at_step"]`` (default 2, 1-based) the output has
    ``config["mistake"]`` (one of ``MISTAKES``; None: no mistake):

    - ``no_all_in_terminateds`` / ``no_all_in_truncateds``: that dict lacks ``"__all__"``;
    - ``obs_outside``: ``obs["agent_1"]`` is ``[50, 500]``, outside ``OBS_SPACE``.
    """

    observation_space = OBS_SPACE
    action_space = ACTION_SPACE

    def __init__(self, config: Mapping[str, Any] | None = None) -> None:
        self.possible_agents = ["agent_0", "agent_1"]
        super().__init__(config)
        config = config or {}
        self.mistake = config.get("mistake")
        if self.mistake is not None and self.mistake not in MISTAKES:
            raise ValueError(f"mistake {self.mistake!r}; allowed: {MISTAKES}")
        self.at_step = int(config.get("at_step", 2))
        self.length = int(config.get("length", 10))
        self.k = 0

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[Any, Any], dict[Any, Any]]:
        self.k = 0
        return {a: obs_of(a, 0) for a in self.possible_agents}, {}

    def step(
        self, action_dict: dict[Any, Any]
    ) -> tuple[dict[Any, Any], dict[Any, Any], dict[Any, Any], dict[Any, Any], dict[Any, Any]]:
        self.k += 1
        end = self.k >= self.length
        obs: dict[Any, Any] = {a: obs_of(a, self.k) for a in self.possible_agents}
        rewards: dict[Any, Any] = {a: 1.0 for a in action_dict}
        terms: dict[Any, Any] = {ALL: end}
        truncs: dict[Any, Any] = {ALL: False}
        if self.k == self.at_step:
            if self.mistake == "no_all_in_terminateds":
                del terms[ALL]
            elif self.mistake == "no_all_in_truncateds":
                del truncs[ALL]
            elif self.mistake == "obs_outside":
                obs["agent_1"] = np.array([50.0, 500.0], np.float32)
        return obs, rewards, terms, truncs, {}


# ------------------------------------------------------------------- mapping functions


def map_by_index(agent_id: Any, episode: Any = None, worker: Any = None, **kwargs: Any) -> str:
    """``make_multi_agent`` copies: agent ``i`` -> ``"p<i>"``."""
    return f"p{agent_id}"


def map_scripted(agent_id: Any, episode: Any = None, worker: Any = None, **kwargs: Any) -> str:
    """``ScriptedEnv``: ``"a"`` -> ``"p0"``, every other agent -> ``"p1"``."""
    return "p0" if agent_id == "a" else "p1"


def map_turns(agent_id: Any, episode: Any = None, worker: Any = None, **kwargs: Any) -> str:
    """``TurnEnv``: ``"x"`` -> ``"p0"``, ``"y"`` -> ``"p1"``."""
    return "p0" if agent_id == "x" else "p1"


def map_malformed(agent_id: Any, episode: Any = None, worker: Any = None, **kwargs: Any) -> str:
    """``MalformedEnv``: ``"agent_<i>"`` -> ``"p<i>"``."""
    return f"p{str(agent_id).rsplit('_', 1)[-1]}"


def map_all_to_p0(agent_id: Any, episode: Any = None, worker: Any = None, **kwargs: Any) -> str:
    return "p0"


def train_only_p0(policy_id: str, batch: Any = None) -> bool:
    return policy_id == "p0"


def map_1_to_p2(agent_id: Any, episode: Any = None, worker: Any = None, **kwargs: Any) -> str:
    """``make_multi_agent`` copies: agent 0 -> ``"p0"``, every other agent -> ``"p2"``."""
    return "p0" if agent_id == 0 else "p2"
