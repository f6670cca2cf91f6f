"""Atari: the DeepMind wrappers under ``preprocessor_pref="deepmind"`` (gymnasium's
``AtariPreprocessing`` and ``FrameStackObservation``, episodic life, fire reset, clipped
rewards), the pixel preprocessor of raw frames otherwise, ``preprocessor_pref=None`` and
``_disable_preprocessor_api``, the image keys of the model dict, and the ALE ids.

Most tests run on ``tests.fake_atari.FakeAtariEnv`` (no ROM); those on a real game need
ale-py (``pip install 'rlconf[atari]'``, whose wheels carry the ROMs)."""

from __future__ import annotations

import importlib.util
from typing import Any, cast

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.wrappers import AtariPreprocessing, FrameStackObservation

import rlconf.atari_ids
from rlconf import ConfigError, PPOConfig
from rlconf.env_ids import env_issue
from rlconf.model_config import ModelConfigDict
from runtime.core.vision_network import VisionNetwork
from runtime.env.atari import EpisodicLife, FireReset, is_atari, wrap_deepmind
from runtime.env.env_preparation import EnvPreparation
from runtime.env.pixel_frames import pixel_frames
from tests.fake_atari import FakeAtariEnv

needs_opencv = pytest.mark.skipif(
    importlib.util.find_spec("cv2") is None,
    reason="needs opencv, which resizes the frames: pip install 'rlconf[atari]'",
)
needs_ale = pytest.mark.skipif(
    importlib.util.find_spec("ale_py") is None or importlib.util.find_spec("cv2") is None,
    reason="needs ale-py, which brings the Atari ROMs, and opencv: pip install 'rlconf[atari]'",
)


def _chain(env: Any) -> list[type[Any]]:
    kinds = []
    while isinstance(env, gym.Wrapper):
        kinds.append(type(env))
        env = env.env
    return kinds


def _ppo(env: Any, **model: Any) -> PPOConfig:
    return (
        PPOConfig()
        .environment(env)
        .rollouts(num_workers=0, rollout_fragment_length=32)
        .training(
            train_batch_size=32,
            sgd_minibatch_size=16,
            num_sgd_iter=1,
            model=cast(ModelConfigDict, model),
        )
        .debugging(seed=0)
    )


def _prepared(config: PPOConfig, env: Any = None) -> Any:
    return EnvPreparation.of(config, "test").apply(env or FakeAtariEnv())


# ------------------------------------------------------------------ the DeepMind wrappers


@needs_opencv
def test_deepmind_wrappers_noop_reset_fire_skip_max_pool_and_stack() -> None:
    env = FakeAtariEnv()
    wrapped = wrap_deepmind(env)
    # the stacked frames turned channels-last (TransformObservation) for the vision network
    assert _chain(wrapped)[1:] == [
        FrameStackObservation,
        FireReset,
        EpisodicLife,
        AtariPreprocessing,
    ]
    obs, _ = wrapped.reset(seed=0)
    assert obs.shape == (84, 84, 4) and obs.dtype == np.uint8
    assert wrapped.observation_space == gym.spaces.Box(0, 255, (84, 84, 4), np.uint8)
    # noop reset: 1 to 30 no-ops (one frame each); then FIRE and action 2, 4 frames each
    noops = len(env.actions) - 8
    assert 1 <= noops <= 30 and env.actions[:noops] == [0] * noops
    assert env.actions[noops:] == [1] * 4 + [2] * 4
    # the 4 stacked frames start as copies of the first
    assert (obs == obs[..., :1]).all()
    before = env.frame
    obs, reward, terminated, truncated, _ = wrapped.step(3)
    # frame skip 4: four frames, their rewards summed (clipping is the workers' clip_rewards)
    assert env.frame == before + 4 and reward == 12.0 and not (terminated or truncated)
    # the max over the last two frames (the last: the frame number grows), 84x84 grayscale
    assert (obs[..., -1] == env.frame % 256).all() and (obs[..., 0] == before % 256).all()


@needs_opencv
def test_a_lost_life_ends_the_episode_but_not_the_game() -> None:
    env = FakeAtariEnv()
    wrapped = wrap_deepmind(env)
    wrapped.reset(seed=0)
    terminated = False
    while not terminated:
        _, _, terminated, _, _ = wrapped.step(0)
    assert env.lives == 2 and env.resets == 1
    wrapped.reset()
    # the game goes on: no env reset, a no-op step (then FIRE) instead
    assert env.resets == 1 and env.lives == 2
    while env.lives > 0:
        wrapped.step(0)
    wrapped.reset()
    assert env.resets == 2 and env.lives == 3  # game over: a new game


@needs_opencv
def test_dim_and_framestack_act_in_the_deepmind_wrappers() -> None:
    single = wrap_deepmind(FakeAtariEnv(), dim=42, framestack=False)
    assert FrameStackObservation not in _chain(single)
    obs, _ = single.reset(seed=0)
    assert obs.shape == (42, 42, 1)
    config = _ppo(FakeAtariEnv, dim=42, framestack=False).environment(clip_rewards=True)
    assert _prepared(config).observation_space.shape == (42, 42, 1)


@needs_opencv
def test_an_env_that_skips_frames_itself_is_stepped_once_per_action() -> None:
    env = FakeAtariEnv()
    env._frameskip = 4  # as ALE/*-v5 by default: the reference's wrappers skip no more
    wrapped = wrap_deepmind(env)
    wrapped.reset(seed=0)
    before = env.frame
    wrapped.step(0)
    assert env.frame == before + 1


@needs_opencv
def test_the_deepmind_wrappers_wrap_atari_envs_only_under_preprocessor_pref_deepmind() -> None:
    config = _ppo(FakeAtariEnv).environment(clip_rewards=True)
    assert FrameStackObservation in _chain(_prepared(config))
    rllib = _prepared(PPOConfig().rollouts(preprocessor_pref="rllib"))
    assert not {FrameStackObservation, AtariPreprocessing} & set(_chain(rllib))
    cartpole = gym.make("CartPole-v1")
    assert not is_atari(cartpole) and _prepared(config, cartpole) is cartpole


@needs_opencv
def test_ppo_trains_on_a_fake_atari_env_under_the_deepmind_wrappers() -> None:
    algo = _ppo(FakeAtariEnv).environment(clip_rewards=True).build()
    try:
        worker = algo.workers.local_worker()
        assert worker.observation_space.shape == (84, 84, 4)
        model = algo.get_policy().model
        assert isinstance(model, VisionNetwork) and model.filters[0] == [16, [8, 8], 4]
        batch = worker.sample()
        assert set(np.unique(batch["rewards"])) == {1.0}  # 12 points a step, clipped
        assert algo.train()["timesteps_total"] == 32
    finally:
        algo.stop()


def test_clip_rewards_none_needs_a_choice_for_an_atari_env_of_an_env_creator() -> None:
    with pytest.raises(ConfigError) as caught:
        _ppo(FakeAtariEnv).build()
    (issue,) = caught.value.issues
    assert issue.field == "clip_rewards" and "DeepMind wrappers" in issue.problem


# ------------------------------------------------------------------ the pixel preprocessor


@needs_opencv
def test_raw_frames_go_through_the_pixel_preprocessor_without_the_deepmind_wrappers() -> None:
    # rows 25..185 resized to dim x dim, averaged with grayscale, scaled by zero_mean
    env = FakeAtariEnv()
    frames = pixel_frames(env, 42, grayscale=True, zero_mean=False, where="test")
    obs, _ = frames.reset()
    assert obs.shape == (42, 42, 1) and obs.dtype == np.float32 and (obs == 0.0).all()
    for _ in range(200):
        obs, *_ = frames.step(0)
    assert np.allclose(obs, 200 / 255)
    centred = pixel_frames(FakeAtariEnv(), 84, grayscale=False, zero_mean=True, where="test")
    obs, _ = centred.reset()
    assert obs.shape == (84, 84, 3) and np.allclose(obs, -1.0)
    config = PPOConfig().rollouts(preprocessor_pref="rllib")
    assert _prepared(config).observation_space.shape == (84, 84, 3)
    config.training(model={"dim": 42, "grayscale": True, "zero_mean": False})
    assert _prepared(config).observation_space == gym.spaces.Box(0.0, 1.0, (42, 42, 1))


@needs_opencv
def test_ppo_trains_on_raw_frames_with_preprocessor_pref_rllib() -> None:
    config = _ppo(FakeAtariEnv, dim=42, grayscale=True).rollouts(preprocessor_pref="rllib")
    algo = config.build()
    try:
        assert algo.workers.local_worker().observation_space.shape == (42, 42, 1)
        assert algo.get_policy().model.filters[0] == [16, [4, 4], 2]  # the 42x42 stack
        assert algo.train()["timesteps_total"] == 32
    finally:
        algo.stop()


# ------------------------------------------------------------------ no preprocessing


@pytest.mark.parametrize(
    ("settings", "field"),
    [
        ({"preprocessor_pref": None}, "preprocessor_pref"),
        ({"_disable_preprocessor_api": True}, "_disable_preprocessor_api"),
    ],
)
def test_no_preprocessing_takes_box_observations_and_refuses_the_rest(
    settings: dict[str, Any], field: str
) -> None:
    config = PPOConfig().rollouts(preprocessor_pref="rllib").rollouts(**settings)
    raw = _prepared(config)  # no pixel preprocessor: the frames as the env returns them
    assert raw.observation_space.shape == (210, 160, 3) and not _chain(raw)
    config = _ppo("FrozenLake-v1").rollouts(**settings)
    with pytest.raises(ConfigError) as caught:
        config.build()
    (issue,) = caught.value.issues
    assert issue.field == field and "Discrete(16)" in issue.problem
    algo = _ppo("CartPole-v1").rollouts(**settings).build()
    algo.stop()


@needs_opencv
def test_disable_preprocessor_api_keeps_the_deepmind_wrappers_as_the_reference_does() -> None:
    config = PPOConfig().rollouts(_disable_preprocessor_api=True).environment(clip_rewards=False)
    assert FrameStackObservation in _chain(_prepared(config))


# ------------------------------------------------------------------ keys that would not act


@pytest.mark.parametrize(
    ("model", "field", "reason"),
    [
        ({"dim": 42}, "model.dim", "go through neither"),
        ({"framestack": False}, "model.framestack", "do not wrap this env"),
        ({"grayscale": True}, "model.grayscale", "pixel preprocessor"),
        ({"zero_mean": False}, "model.zero_mean", "pixel preprocessor"),
    ],
)
def test_image_keys_are_refused_where_they_would_not_act(
    model: dict[str, Any], field: str, reason: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        _ppo("CartPole-v1", **model).build()
    (issue,) = caught.value.issues
    assert issue.field == field and reason in issue.problem


@needs_opencv
def test_pixel_keys_are_refused_under_the_deepmind_wrappers() -> None:
    config = PPOConfig().environment(clip_rewards=True).training(model={"grayscale": True})
    with pytest.raises(ConfigError, match="always grayscale"):
        _prepared(config)


# ------------------------------------------------------------------ ALE ids


def test_without_ale_py_an_atari_id_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rlconf.atari_ids, "ale_py_installed", lambda: False)
    issue = env_issue("ALE/NoSuchGame-v5")
    assert issue is not None and "ale-py" in issue.problem
    assert "pip install 'rlconf[atari]'" in issue.allowed
    with pytest.raises(ConfigError, match=r"rlconf\[atari\]"):
        _ppo("ALE/NoSuchGame-v5").build()
    # a typo of a classic id is no Atari id
    typo = env_issue("CartPol-v1")
    assert typo is not None and "ale-py" not in typo.problem and "CartPole-v1" in typo.problem


@needs_ale
@pytest.mark.parametrize("env_id", ["ALE/Pong-v5", "PongNoFrameskip-v4"])
def test_ale_ids_resolve_with_ale_py(env_id: str) -> None:
    assert env_issue(env_id) is None
    env = gym.make(env_id)
    assert is_atari(env)
    env.close()


@needs_ale
def test_ppo_on_pong_gets_the_deepmind_wrappers_clipped_rewards_and_trains() -> None:
    config = _ppo("PongNoFrameskip-v4")
    algo = config.build()
    try:
        assert config["clip_rewards"] is None and algo.config["clip_rewards"] is True
        worker = algo.workers.local_worker()
        (env,) = worker.envs
        kinds = _chain(env)
        assert {AtariPreprocessing, EpisodicLife, FireReset, FrameStackObservation} <= set(kinds)
        assert env.observation_space.shape == (84, 84, 4)
        model = algo.get_policy().model
        assert isinstance(model, VisionNetwork)
        assert model.trunk[2].in_channels == 4  # 4 stacked frames
        assert algo.train()["timesteps_total"] == 32
    finally:
        algo.stop()
    # under preprocessor_pref="rllib" nothing is clipped and the raw frames are preprocessed
    rllib = _ppo("PongNoFrameskip-v4", dim=42).rollouts(preprocessor_pref="rllib")
    algo = rllib.build()
    try:
        assert algo.config["clip_rewards"] is None
        assert algo.workers.local_worker().observation_space.shape == (42, 42, 3)
    finally:
        algo.stop()
