"""``record_env`` (and its deprecated name ``monitor``): videos of sub-env 0's episodes from
every worker that samples, written by gymnasium's ``RecordVideo`` into ``<logdir>/videos`` or
the folder given; what it needs (moviepy, an env rendering ``rgb_array``, a single-agent env)
is refused at build with the reason."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import runtime
from rlconf import PPOConfig
from rlconf.errors import ConfigError
from runtime.env.env_context import EnvContext
from runtime.env.recording import RecordedEnv, make_recorded_env
from tests.ray_session import local_ray


def _needs_encoder() -> None:
    pytest.importorskip("moviepy", reason="the video extra (pip install 'rlconf[video]')")
    pytest.importorskip("pygame", reason="CartPole renders its frames with pygame")


def _small(**environment: Any) -> PPOConfig:
    return (
        PPOConfig()
        .environment("CartPole-v1", **environment)
        .rollouts(num_workers=0, num_envs_per_worker=2, rollout_fragment_length=64)
        .training(train_batch_size=128, sgd_minibatch_size=64, num_sgd_iter=1)
        .training(model={"fcnet_hiddens": [8]})
        .debugging(seed=0)
    )


def _videos(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.glob("*.mp4") if p.stat().st_size > 0)


def test_a_ppo_run_records_episodes_of_sub_env_0_into_the_folder_given(tmp_path: Path) -> None:
    _needs_encoder()
    folder = tmp_path / "videos"
    algo = _small(record_env=str(folder)).build()
    try:
        envs = algo.workers.local_worker().envs
        assert isinstance(envs[0], RecordedEnv) and envs[0].render_mode == "rgb_array"
        assert not isinstance(envs[1], RecordedEnv) and envs[1].render_mode is None
        algo.train()  # 128 steps of a random-ish CartPole: several episodes
    finally:
        algo.stop()
    videos = _videos(folder)
    assert "worker-0-episode-0.mp4" in videos and "worker-0-episode-1.mp4" in videos
    assert all(v.startswith("worker-0-") for v in videos)


def test_record_env_true_records_into_the_logdir_and_evaluation_records_too(
    tmp_path: Path,
) -> None:
    _needs_encoder()
    logdir = tmp_path / "results"
    config = _small(record_env=True).debugging(logger_config={"logdir": str(logdir)})
    config.evaluation(evaluation_interval=1, evaluation_duration=2)
    algo = config.build()
    try:
        algo.train()
    finally:
        algo.stop()
    videos = _videos(logdir / "videos")
    assert "worker-0-episode-0.mp4" in videos
    assert "evaluation-worker-0-episode-0.mp4" in videos


@pytest.mark.slow
def test_a_remote_worker_records_its_own_sub_env_0(tmp_path: Path) -> None:
    _needs_encoder()
    folder = tmp_path / "videos"
    with local_ray():
        algo = _small(record_env=str(folder)).rollouts(num_workers=1).build()
        try:
            assert not algo.workers.local_worker().envs  # the driver has no env to record
            algo.train()
        finally:
            algo.stop()
    videos = _videos(folder)
    assert "worker-1-episode-0.mp4" in videos
    assert all(v.startswith("worker-1-") for v in videos)


def test_monitor_is_the_deprecated_name_of_record_env() -> None:
    with pytest.warns(DeprecationWarning, match="'monitor' is deprecated: use 'record_env'"):
        config = PPOConfig.from_dict({"monitor": True})
    assert config.record_env is True
    assert "monitor" not in config.to_dict() and config.to_dict()["record_env"] is True
    with pytest.warns(DeprecationWarning, match="use 'record_env'"):
        config = PPOConfig().environment(monitor="/tmp/videos")  # type: ignore[call-arg]
    assert config.record_env == "/tmp/videos"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert PPOConfig.from_dict({"record_env": True}).record_env is True


class _NoFrames(gym.Env[Any, Any]):
    """A single-agent env made without a render mode."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, config: Any = None) -> None:
        self.render_mode = None


def test_a_custom_env_that_renders_no_frames_is_refused_with_the_reason() -> None:
    _needs_encoder()
    with pytest.raises(ConfigError) as caught:
        _small(record_env=True).environment(_NoFrames).build()
    (issue,) = caught.value.issues
    assert issue.field == "record_env"
    assert "made a _NoFrames with render_mode=None" in issue.problem
    assert "render_mode='rgb_array'" in issue.allowed


def _cartpole_from_env_config(ctx: EnvContext) -> Any:
    return gym.make("CartPole-v1", render_mode=ctx.get("render_mode"))


def test_a_custom_creator_that_renders_rgb_array_is_recorded(tmp_path: Path) -> None:
    _needs_encoder()
    runtime.register_env("record_env_cartpole", _cartpole_from_env_config)
    config = _small(record_env=str(tmp_path), env_config={"render_mode": "rgb_array"})
    algo = config.environment("record_env_cartpole").build()
    try:
        assert isinstance(algo.workers.local_worker().envs[0], RecordedEnv)
    finally:
        algo.stop()


def test_a_render_mode_without_frames_in_env_config_is_refused_for_a_gymnasium_id() -> None:
    _needs_encoder()
    with pytest.raises(ConfigError) as caught:
        _small(record_env=True, env_config={"render_mode": "human"}).build()
    (issue,) = caught.value.issues
    assert issue.field == "env_config.render_mode" and issue.value == "human"
    assert "'rgb_array'" in issue.allowed


def test_a_missing_encoder_is_refused_naming_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "moviepy", None)  # `import moviepy` raises ImportError
    with pytest.raises(ConfigError) as caught:
        _small(record_env=True).build()
    (issue,) = caught.value.issues
    assert issue.field == "record_env" and "moviepy" in issue.problem
    assert "pip install 'rlconf[video]'" in issue.allowed


def test_an_empty_folder_name_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"record_env='' \(str\): names no folder"):
        _small(record_env="").build()


def test_a_multi_agent_env_refuses_record_env() -> None:
    _needs_encoder()
    config = _small(record_env=True).environment(
        runtime.make_multi_agent("CartPole-v1"), env_config={"num_agents": 2}
    )
    with pytest.raises(ConfigError) as caught:
        config.build()
    (issue,) = caught.value.issues
    assert issue.field == "record_env" and "single-agent gymnasium envs only" in issue.problem


class _Curriculum(gym.Env[Any, Any]):
    """Renders frames and has a task of its own (``env_task_fn`` calls these on every sub-env)."""

    metadata = {"render_fps": 10}  # noqa: RUF012
    observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self) -> None:
        self.render_mode = "rgb_array"
        self.task = 0

    def get_task(self) -> int:
        return self.task

    def set_task(self, task: int) -> None:
        self.task = task


def test_the_recorded_sub_env_still_answers_the_env_own_attributes(tmp_path: Path) -> None:
    _needs_encoder()
    env = make_recorded_env(
        lambda ctx: _Curriculum(), EnvContext({}, 0), str(tmp_path), "worker-0", "test"
    )
    assert isinstance(env, RecordedEnv)
    env.set_task(3)
    assert env.get_task() == 3 and env.unwrapped.task == 3  # type: ignore[attr-defined]
    env.set_wrapper_attr("task", 5)  # sets the env's, not a copy on the wrapper
    assert env.unwrapped.task == 5 and "task" not in vars(env)  # type: ignore[attr-defined]
    with pytest.raises(AttributeError):
        env.no_such_attribute  # noqa: B018
    env.close()  # type: ignore[no-untyped-call]
