"""RLlib's example envs by RLlib's import paths (``rlconf.rllib_example_envs``), and the
``RandomEnv`` family of its memory-leak files."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from rlconf import ConfigError, PPOConfig, SACConfig
from rlconf.rllib_example_envs import our_example_env
from runtime.example_envs import RandomEnv, RandomLargeObsSpaceEnv


@pytest.mark.parametrize(
    ("path", "ours"),
    [
        ("ray.rllib.examples.env.random_env.RandomLargeObsSpaceEnv", "RandomLargeObsSpaceEnv"),
        ("ray.rllib.examples.envs.classes.random_env.RandomEnv", "RandomEnv"),
        ("ray.rllib.examples.env.stateless_cartpole.StatelessCartPole", "StatelessCartPole"),
        ("ray.rllib.examples.envs.classes.multi_agent:MultiAgentCartPole", "MultiAgentCartPole"),
        ("ray.rllib.examples.env.repeat_after_me_env.RepeatAfterMeEnv", "RepeatAfterMeEnv"),
    ],
)
def test_rllibs_paths_name_the_envs_of_the_same_name_here(path: str, ours: str) -> None:
    assert our_example_env(path) == f"runtime.example_envs:{ours}"


@pytest.mark.parametrize(
    "path", ["my_package.random_env.RandomEnv", "ray.rllib.env.random_env.RandomEnv"]
)
def test_other_paths_are_left_as_they_are(path: str) -> None:
    assert our_example_env(path) is None


def test_an_example_env_this_package_lacks_is_refused_naming_where_it_was_looked_for() -> None:
    path = "ray.rllib.examples.env.cliff_walking_wall_env.CliffWalkingWallEnv"
    with pytest.raises(ConfigError, match=r"runtime\.example_envs.*CliffWalkingWallEnv"):
        PPOConfig().environment(path).rollouts(num_workers=0).build()


def test_static_samples_repeat_one_observation_and_episodes_end_by_chance_or_length() -> None:
    env = RandomEnv(
        {
            "observation_space": gym.spaces.Box(-1.0, 1.0, (3,)),
            "static_samples": True,
            "p_terminated": 0.0,
            "max_episode_len": 4,
        }
    )
    first, _ = env.reset(seed=3)
    steps = [env.step(env.action_space.sample()) for _ in range(4)]
    assert all(np.array_equal(obs, first) for obs, *_ in steps)
    assert len({reward for _, reward, *_ in steps}) == 1
    assert [(term, trunc) for _, _, term, trunc, _ in steps][-1] == (False, True)
    assert not any(term or trunc for _, _, term, trunc, _ in steps[:-1])

    ending = RandomEnv({"p_done": 1.0})  # RLlib's older name of p_terminated
    ending.reset(seed=0)
    assert ending.step(0)[2] is True

    a, b = RandomLargeObsSpaceEnv(), RandomLargeObsSpaceEnv()
    assert a.observation_space.shape == (5000,)
    assert np.array_equal(a.reset(seed=7)[0], b.reset(seed=7)[0])  # seeded


def test_an_rllib_memory_leak_env_path_trains_unchanged() -> None:
    algo = (
        PPOConfig()
        .environment(
            "ray.rllib.examples.env.random_env.RandomLargeObsSpaceEnv",
            env_config={"static_samples": True},
        )
        .rollouts(num_workers=0, num_envs_per_worker=2)
        .training(train_batch_size=200, sgd_minibatch_size=100, num_sgd_iter=1)
        .build()
    )
    try:
        result = algo.train()
    finally:
        algo.stop()
    assert result["timesteps_total"] >= 200
    env = "ray.rllib.examples.envs.classes.random_env.RandomLargeObsSpaceEnvContActions"
    sac = SACConfig().environment(env).training(num_steps_sampled_before_learning_starts=10)
    algo = sac.rollouts(rollout_fragment_length=20).build()
    try:
        assert algo.train()["timesteps_total"] >= 20
    finally:
        algo.stop()
