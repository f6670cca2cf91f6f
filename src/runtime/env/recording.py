"""``record_env``: videos of episodes, written by gymnasium's ``RecordVideo``.

``record_env=True`` records into ``<logdir>/videos`` (the run's results folder, a Tune trial's
folder), a string into that folder (shared by everything that records into it: give sweep
trials ``True``). What is recorded: sub-env 0 of every worker that samples - the local worker
when it has envs (``num_workers=0`` or ``create_env_on_driver``), each remote rollout worker,
and the evaluation workers (their config is the evaluation config, which may set
``record_env`` on its own) -; the other sub-envs are not wrapped. Which episodes: gymnasium's
default schedule (``capped_cubic_video_schedule``: episodes 0, 1, 8, 27, ..., 729, 1000, then
every 1000th of that sub-env), one ``<worker>-episode-<n>.mp4`` each (``worker-0``,
``worker-1``, ..., ``evaluation-worker-0``, ...), written when the next episode starts or the
worker's envs are closed. A remote worker writes on its own node.

What it needs, refused at build with the reason otherwise: the encoder (moviepy, the
``video`` extra: ``pip install 'rlconf[video]'``), and an env that renders frames: a gymnasium
id is made with ``render_mode="rgb_array"`` for the recorded sub-env; any other env must come
with ``render_mode`` ``"rgb_array"`` (or ``"rgb_array_list"``) already, e.g. from its
``env_config``. Multi-agent envs are not recorded (``REFUSED_MULTI_AGENT``).
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
from gymnasium.wrappers import RecordVideo

from rlconf.errors import ConfigError
from runtime.core.settings import settings_of
from runtime.env.env_context import EnvContext
from runtime.env.env_registry import EnvCreator, GymEnvCreator
from runtime.env.multi_agent_env import MultiAgentEnv

#: The render modes whose ``render()`` returns the frames ``RecordVideo`` encodes.
RECORDABLE_MODES = ("rgb_array", "rgb_array_list")
#: How to install the encoder.
VIDEO_EXTRA = "pip install 'rlconf[video]'"


@dataclass(frozen=True)
class RecordingSettings:
    """Whether and where episodes are recorded."""

    record_env: bool | str


def video_folder(config: Any, logdir: Callable[[], Path], component: str) -> str | None:
    """The folder ``config``'s ``record_env`` records into (an absolute path), or None when it
    records nothing: ``<logdir()>/videos`` for True, else the folder given. Refuses an empty
    folder name and a missing encoder."""
    record = settings_of(RecordingSettings, config, component).record_env
    if record is False:
        return None
    where = f"{component}(config=...)"
    if isinstance(record, str) and not record.strip():
        raise ConfigError.single(
            where,
            "record_env",
            "names no folder",
            value=record,
            has_value=True,
            allowed="False, True (videos in <logdir>/videos) or a folder",
        )
    check_encoder(where)
    if record is True:
        return str(logdir() / "videos")
    return str(Path(str(record)).expanduser().resolve())


def check_encoder(where: str) -> None:
    """Refuse recording when moviepy, which ``RecordVideo`` encodes the videos with, is
    missing (here rather than at the end of the first recorded episode)."""
    try:
        importlib.import_module("moviepy")
    except ImportError:
        raise ConfigError.single(
            where,
            "record_env",
            "needs the video encoder moviepy, which is not installed",
            allowed=f"{VIDEO_EXTRA} (or pip install moviepy), or record_env=False",
        ) from None


def make_recorded_env(
    creator: EnvCreator, context: EnvContext, folder: str, name_prefix: str, where: str
) -> Any:
    """Sub-env ``context`` made by ``creator`` and wrapped to record its episodes into
    ``folder`` as ``<name_prefix>-episode-<n>.mp4``. A gymnasium id is made with
    ``render_mode="rgb_array"`` (an ``env_config`` render mode that gives frames is kept);
    another env must render frames already. A multi-agent env comes back unwrapped, for the
    worker to refuse ``record_env`` with its multi-agent settings."""
    check_encoder(where)
    if isinstance(creator, GymEnvCreator):
        asked = context.get("render_mode")
        if asked is not None and asked not in RECORDABLE_MODES:
            raise ConfigError.single(
                where,
                "env_config.render_mode",
                f"makes {creator.env_id} render as {asked!r}, which gives no frames to record "
                "(record_env is set)",
                value=asked,
                has_value=True,
                allowed=f"{' or '.join(map(repr, RECORDABLE_MODES))}, or no render_mode "
                "(record_env makes the recorded sub-env with 'rgb_array'), or record_env=False",
            )
        env = creator(context, render_mode=asked or RECORDABLE_MODES[0])
    else:
        env = creator(context)
    if isinstance(env, MultiAgentEnv):
        return env
    mode = getattr(env, "render_mode", None)
    if not isinstance(env, gym.Env) or mode not in RECORDABLE_MODES:
        made = type(getattr(env, "unwrapped", env)).__name__
        problem = (
            f"records the frames env.render() returns, but the env creator made a {made} "
            f"with render_mode={mode!r}"
            if isinstance(env, gym.Env)
            else f"wraps a gymnasium.Env in RecordVideo, but the env creator made a {made}, "
            "which is not one"
        )
        close = getattr(env, "close", None)
        if close is not None:
            close()
        raise ConfigError.single(
            where,
            "record_env",
            problem,
            allowed="an env made with render_mode='rgb_array' (gymnasium ids are made so when "
            "record_env is set; a creator can take render_mode from env_config), or "
            "record_env=False",
        )
    return _recorder(env, folder, name_prefix)


def _recorder(env: gym.Env[Any, Any], folder: str, name_prefix: str) -> RecordedEnv:
    existing = Path(folder).is_dir() and any(Path(folder).glob(f"{name_prefix}-*"))
    with warnings.catch_warnings():
        if not existing:
            # Workers share the folder (each with its own file names): nothing is overwritten.
            warnings.filterwarnings("ignore", message=".*Overwriting existing videos")
        return RecordedEnv(env, video_folder=folder, name_prefix=name_prefix)


class RecordedEnv(RecordVideo):
    """``RecordVideo`` that still answers the wrapped env's own attributes (``get_task``,
    ``set_task``, a user's methods): gymnasium's wrappers forward none, and the runtime and
    callbacks treat every sub-env alike."""

    def __getattr__(self, name: str) -> Any:
        env = self.__dict__.get("env")
        if name.startswith("_") or env is None:
            raise AttributeError(f"{type(self).__name__} has no attribute {name!r}")
        return getattr(env, name)

    def set_wrapper_attr(self, name: str, value: Any, *, force: bool = True) -> bool:
        # What the wrapped env has is set there (hasattr() sees it here through __getattr__).
        if name in self.__dict__ or hasattr(type(self), name):
            setattr(self, name, value)
            return True
        if self.env.set_wrapper_attr(name, value, force=False):
            return True
        if force:
            setattr(self, name, value)
        return force
