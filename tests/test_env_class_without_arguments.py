"""An env class whose constructor takes no argument is made without one (RLlib's env classes
take ``env_config``; a user's ``class Pixels(gym.Env): def __init__(self)`` is called as its
author would), in the driver, in remote workers and as a multi-agent env; a non-empty
``env_config`` it would never see is a ``ConfigError`` naming the class."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from rlconf import PGConfig
from rlconf.errors import ConfigError
from runtime import make_multi_agent
from runtime.env.env_context import EnvContext
from runtime.env.env_registry import env_creator_for
from runtime.env.multi_agent_env import MultiAgentEnv
from tests.ray_session import local_ray


class Pixels(gym.Env):
    """A constructor without arguments, as a user writes one."""

    observation_space = gym.spaces.Box(0.0, 1.0, (3,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self) -> None:
        self.t = 0

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        self.t = 0
        return np.zeros(3, np.float32), {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        self.t += 1
        return np.full(3, 0.1 * self.t, np.float32), float(action), self.t >= 5, False, {}


class Inherited(Pixels):
    """No constructor of its own: ``Pixels``'s, without arguments."""


class TwoPlayers(MultiAgentEnv):
    """A multi-agent env class without arguments."""

    def __init__(self) -> None:
        super().__init__()
        self.possible_agents = ["a", "b"]
        self.observation_space = Pixels.observation_space
        self.action_space = Pixels.action_space
        self.envs = {agent: Pixels() for agent in self.possible_agents}

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[Any, Any], dict[Any, Any]]:
        return {a: env.reset()[0] for a, env in self.envs.items()}, {}

    def step(
        self, action_dict: dict[Any, Any]
    ) -> tuple[dict[Any, Any], dict[Any, Any], dict[Any, Any], dict[Any, Any], dict[Any, Any]]:
        obs: dict[Any, Any] = {}
        rewards: dict[Any, Any] = {}
        dones: dict[Any, Any] = {}
        for agent, action in action_dict.items():
            obs[agent], rewards[agent], dones[agent], _, _ = self.envs[agent].step(action)
        dones["__all__"] = all(dones.values())
        return obs, rewards, dones, {"__all__": False}, {}


def _config(env: Any, env_config: dict[str, Any] | None = None, workers: int = 0) -> PGConfig:
    return (
        PGConfig()
        .environment(env, env_config=env_config or {})
        .rollouts(num_workers=workers, rollout_fragment_length=10)
        .training(train_batch_size=10)
        .debugging(seed=0)
    )


@pytest.mark.parametrize("env_class", [Pixels, Inherited])
def test_an_env_class_without_arguments_is_made_without_one(env_class: type[Any]) -> None:
    algo = _config(env_class).build()
    try:
        assert isinstance(algo.workers.local_worker().envs[0], env_class)
        assert algo.train()["timesteps_total"] >= 10
    finally:
        algo.stop()


def test_an_env_config_it_would_never_see_is_refused_naming_the_class() -> None:
    with pytest.raises(ConfigError, match=r"env_config=\{'size': 3\}.*Pixels's constructor takes"):
        _config(Pixels, {"size": 3}).build()
    # An import path to the class goes the same way.
    creator = env_creator_for(f"{__name__}:Pixels")
    assert isinstance(creator(EnvContext({}, 0)), Pixels)
    with pytest.raises(ConfigError, match=r"Pixels's constructor takes no env_config"):
        creator(EnvContext({"size": 3}, 0))


def test_a_multi_agent_env_class_without_arguments_is_made_without_one() -> None:
    config = _config(TwoPlayers).multi_agent(
        policies=["p"], policy_mapping_fn=lambda agent_id, *args, **kwargs: "p"
    )
    algo = config.build()
    try:
        assert isinstance(algo.workers.local_worker().envs[0], TwoPlayers)
        assert algo.train()["timesteps_total"] >= 10
    finally:
        algo.stop()


def test_make_multi_agent_of_a_class_without_arguments_reads_num_agents_only() -> None:
    copies = make_multi_agent(Pixels)
    env = copies({"num_agents": 3})
    assert len(env.envs) == 3 and all(isinstance(e, Pixels) for e in env.envs)
    with pytest.raises(
        ConfigError,
        match=r"(?s)make_multi_agent\(Pixels\).*env_config=\{'size': 3\}.*only 'num_agents'",
    ):
        copies({"num_agents": 2, "size": 3})


@pytest.fixture(scope="module")
def ray_session() -> Iterator[None]:
    with local_ray():
        yield


@pytest.mark.slow
@pytest.mark.usefixtures("ray_session")
def test_remote_workers_make_the_class_without_arguments_and_refuse_the_same() -> None:
    algo = _config(Pixels, workers=1).build()
    try:
        assert not algo.workers.local_worker().envs
        assert algo.train()["timesteps_total"] >= 10
    finally:
        algo.stop()
    with pytest.raises(ConfigError, match=r"Pixels's constructor takes no env_config"):
        _config(Pixels, {"size": 3}, workers=1).build()
