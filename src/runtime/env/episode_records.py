"""``AgentRecord``: one agent's steps in a running episode, for RLlib's new-stack episode getters
(``episode.get_observations()``, ``get_actions()``, ...), and how indices pick from them.

An agent's record holds every observation it received (the first one, a reset's, included) with
its info, and every action it took with the policy's extra outputs of it and its reward: the
rewards the env gave the agent from that action until its next one, summed (those before its
first action are kept apart: ``hanging``). Each observation and action also keeps its env step
(``obs_t``, ``act_t``: 0 is the reset), so a multi-agent episode can be read on the env's
timeline too (``env_steps=True``). The runners record only while some hook receives episodes
(``EpisodeRunner._track_steps``); otherwise a record holds the reset's observation alone. The
observations and infos themselves are kept only where some hook may read them through the
getters (``keeps_observations``: hooks written for the new API stack,
``hook_calls.may_read_history``); a 2.x hook sees the last ones through the episode's own
accessors, and an Atari episode's frames are not held for it.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from typing import Any

#: What the getters take as ``indices``: None (everything), an index, a list of them, a slice.
Indices = int | Sequence[int] | slice | None


class AgentRecord:
    __slots__ = (
        "act_t",
        "actions",
        "extra",
        "hanging",
        "infos",
        "keeps_observations",
        "obs_t",
        "observations",
        "rewards",
    )

    def __init__(self, keeps_observations: bool = True) -> None:
        self.keeps_observations = keeps_observations
        self.observations: list[Any] = []
        self.obs_t: list[int] = []
        self.infos: list[Any] = []
        self.actions: list[Any] = []
        self.act_t: list[int] = []
        self.rewards: list[float] = []
        self.extra: list[dict[str, Any]] = []
        #: Rewards the agent got before its first action (in no step's reward).
        self.hanging = 0.0

    def observe(self, obs: Any, info: Any, env_t: int) -> None:
        if self.keeps_observations:
            self.observations.append(obs)
            self.infos.append(info if isinstance(info, dict) else {})
        self.obs_t.append(env_t)

    def act(self, action: Any, extra: dict[str, Any]) -> None:
        """An action on the agent's latest observation (at that observation's env step)."""
        self.actions.append(action)
        self.extra.append(extra)
        self.rewards.append(0.0)
        self.act_t.append(self.obs_t[-1] if self.obs_t else 0)

    def reward(self, reward: float) -> None:
        if self.rewards:
            self.rewards[-1] += reward
        else:
            self.hanging += reward

    def column(self, name: str) -> tuple[list[Any], list[int]]:
        """One kind of data and the env steps it belongs to."""
        if name in ("observations", "infos") and not self.keeps_observations:
            raise RuntimeError(
                f"get_{name}(): the episode's {name} are kept for callbacks written for RLlib's "
                "new API stack (a hook that takes env_runner, metrics_logger or rl_module, or "
                "only **kwargs); this worker's episode hooks name RLlib 2.x's keywords "
                "(worker, base_env, policies), so only the last one is kept: "
                f"episode.last_{'observation' if name == 'observations' else 'info'}_for()"
            )
        if name == "observations":
            return self.observations, self.obs_t
        if name == "infos":
            return self.infos, self.obs_t
        if name == "actions":
            return self.actions, self.act_t
        if name == "rewards":
            return self.rewards, self.act_t
        raise KeyError(name)

    def extra_column(self, key: str | None) -> list[Any] | dict[str, list[Any]]:
        """The policy's extra output ``key`` of each action (all of them by name for None)."""
        names = list(dict.fromkeys(name for outs in self.extra for name in outs))
        if key is None:
            return {name: [outs.get(name) for outs in self.extra] for name in names}
        if key not in names:
            raise KeyError(
                f"get_extra_model_outputs(key={key!r}): the policy's actions have no such output; "
                f"allowed: {', '.join(map(repr, names)) or 'none recorded'}"
            )
        return [outs.get(key) for outs in self.extra]


def pick(values: Sequence[Any], indices: Indices) -> Any:
    """``values`` at ``indices`` (negative ones count from the end): all of them for None, one
    value for an int, a list for a list or slice."""
    if indices is None:
        return list(values)
    if isinstance(indices, int):
        return values[indices]
    if isinstance(indices, slice):
        return list(values[indices])
    return [values[i] for i in indices]


_ABSENT = object()


def pick_env_steps(values: Sequence[Any], times: Sequence[int], indices: Indices, span: int) -> Any:
    """``values`` (each at the env step in ``times``, ascending) at the env steps ``indices``
    of a timeline of ``span`` steps (negative ones count from its end): a value for an int (or
    ``ABSENT`` where the agent has none at that step), a list of those it has for a list or
    slice."""
    if indices is None:
        return list(values)

    def at(step: int) -> Any:
        t = step + span if step < 0 else step
        k = bisect.bisect_left(times, t)
        return values[k] if k < len(times) and times[k] == t else _ABSENT

    if isinstance(indices, int):
        return at(indices)
    steps = range(span)[indices] if isinstance(indices, slice) else indices
    return [v for v in map(at, steps) if v is not _ABSENT]


def absent(value: Any) -> bool:
    """Whether ``pick_env_steps`` found nothing at the env step asked for."""
    return value is _ABSENT
