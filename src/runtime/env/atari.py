"""Atari: gymnasium's ALE ids (ale-py, the ``atari`` extra), what counts as an Atari env, and
the reference's DeepMind preprocessing (its ``wrap_deepmind``) made of gymnasium's
``AtariPreprocessing`` and ``FrameStackObservation``.

What ``wrap_deepmind`` does, and what does it here:

- up to 30 no-op actions after each reset, frame skip 4 with the max over the last two frames
  (only when the env itself does not skip frames: ``*NoFrameskip-v4`` ids, ``ALE/*-v5`` made
  with ``frameskip=1``; an env that skips frames itself is stepped once per action, as the
  reference does), frames resized to ``dim x dim`` grayscale: ``AtariPreprocessing``;
- a lost life ends the episode for learning while the game goes on (``EpisodicLife``), and
  FIRE is pressed after each reset in games that need it to start (``FireReset``): gymnasium
  has neither (its ``terminal_on_life_loss`` resets the whole game at every lost life);
- the last 4 frames stacked on the channel axis (``framestack``): ``FrameStackObservation``;
- rewards clipped to their sign: the rollout workers' ``clip_rewards``, which
  ``clip_rewards=None`` turns on for these envs (``runtime.env.env_preparation``), so that
  episode returns are reported in game points.
"""

from __future__ import annotations

import importlib
import logging
from typing import Any

import gymnasium as gym
import numpy as np
import numpy.typing as npt
from gymnasium.wrappers import AtariPreprocessing, FrameStackObservation, TransformObservation

from rlconf.atari_ids import ATARI_EXTRA, atari_id_issue
from rlconf.errors import ConfigError
from rlconf.mujoco_ids import mujoco_id_issue, mujoco_id_note

logger = logging.getLogger(__name__)

#: The frames the DeepMind wrappers stack.
STACKED_FRAMES = 4


def ensure_env_id(env: Any, where: str = "environment()") -> None:
    """Before ``env`` is looked up: an ALE id gymnasium does not know yet is registered
    (ale-py); an Atari id without ale-py, or a MuJoCo id without mujoco, is a ConfigError naming
    the extra; a mujoco-py-era MuJoCo id (made as its v5 id) is noted."""
    issue = atari_id_issue(env) or mujoco_id_issue(env)
    if issue is not None:
        raise ConfigError(where, [issue])
    note = mujoco_id_note(env)
    if note is not None:
        logger.warning("%s", note)


def opencv(where: str, needs: str) -> Any:
    """The cv2 module, which resizes frames (in gymnasium's ``AtariPreprocessing`` too); a
    ConfigError naming the extra without it. ``needs``: what the env needs it for."""
    try:
        return importlib.import_module("cv2")
    except ImportError:
        raise ConfigError.single(
            where,
            "env",
            f"{needs} with opencv, and opencv is not installed",
            allowed=f"{ATARI_EXTRA} (or pip install opencv-python-headless)",
        ) from None


def is_atari_id(env: Any, env_config: dict[str, Any]) -> bool:
    """Whether ``env`` is a gymnasium id of an Atari game with image observations (made with
    ``env_config``), registering the ALE ids first when needed."""
    if not isinstance(env, str) or atari_id_issue(env) is not None:
        return False
    spec = gym.registry.get(env)
    if spec is None or "ale_py" not in str(spec.entry_point):
        return False
    obs_type = {**spec.kwargs, **env_config}.get("obs_type", "rgb")
    return bool(obs_type != "ram")


def is_atari(env: Any) -> bool:
    """Whether ``env`` is an Atari game with image observations, as the reference decides:
    its unwrapped env has an ALE, and its observations are not the 1-D RAM."""
    space = getattr(env, "observation_space", None)
    if not isinstance(space, gym.spaces.Box) or len(space.shape) < 3:
        return False
    return hasattr(getattr(env, "unwrapped", env), "ale")


def wrap_deepmind(
    env: gym.Env[Any, Any], dim: int = 84, framestack: bool = True
) -> gym.Env[Any, Any]:
    """``env`` (an Atari env) with the DeepMind preprocessing: ``dim x dim x 4`` uint8 frames
    with ``framestack``, else ``dim x dim x 1``."""
    # The max-pooled frame skip needs an env that does not skip frames itself; one that does
    # is stepped once per action (the reference skips only for "NoFrameskip" envs).
    skip = 4 if getattr(env.unwrapped, "_frameskip", None) == 1 else 1
    wrapped: gym.Env[Any, Any] = AtariPreprocessing(
        env,
        noop_max=30,
        frame_skip=skip,
        screen_size=dim,
        terminal_on_life_loss=False,
        grayscale_obs=True,
        grayscale_newaxis=not framestack,
    )
    wrapped = EpisodicLife(wrapped)
    if "FIRE" in env.unwrapped.get_action_meanings():  # type: ignore[attr-defined]
        wrapped = FireReset(wrapped)
    if framestack:
        stacked = FrameStackObservation(wrapped, STACKED_FRAMES)
        # gymnasium stacks on a new first axis; the vision network takes HxWxC.
        space = gym.spaces.Box(0, 255, (dim, dim, STACKED_FRAMES), np.uint8)
        wrapped = TransformObservation(stacked, _channels_last, space)
    return wrapped


def _channels_last(frames: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint8]:
    return np.moveaxis(frames, 0, -1)


def _lives(env: gym.Env[Any, Any]) -> int:
    return int(env.unwrapped.ale.lives())  # type: ignore[attr-defined]


class EpisodicLife(gym.Wrapper[Any, Any, Any, Any]):
    """A lost life ends the episode (``terminated``) while the game goes on: ``reset()`` after
    a lost life takes a no-op step instead of starting a new game (the reference's
    ``EpisodicLifeEnv``; gymnasium has no such wrapper)."""

    def __init__(self, env: gym.Env[Any, Any]) -> None:
        super().__init__(env)
        self.lives = 0
        self.game_over = True

    def step(self, action: Any) -> tuple[Any, Any, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.game_over = bool(terminated or truncated)
        lives = _lives(self.env)
        if 0 < lives < self.lives:
            terminated = True
        self.lives = lives
        return obs, reward, bool(terminated), bool(truncated), info

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        if self.game_over or seed is not None:
            obs, info = self.env.reset(seed=seed, options=options)
        else:
            obs, _, terminated, truncated, info = self.env.step(0)
            if terminated or truncated:
                obs, info = self.env.reset(options=options)
        self.game_over = False
        self.lives = _lives(self.env)
        return obs, info


class FireReset(gym.Wrapper[Any, Any, Any, Any]):
    """Presses FIRE (then action 2) after each reset, for the games that wait for it to start
    (the reference's ``FireResetEnv``; gymnasium has no such wrapper)."""

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        obs, info = self.env.reset(seed=seed, options=options)
        for action in (1, 2):
            obs, _, terminated, truncated, info = self.env.step(action)
            if terminated or truncated:
                obs, info = self.env.reset(options=options)
        return obs, info
