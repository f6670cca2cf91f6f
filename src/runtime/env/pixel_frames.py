"""The reference's own preprocessing of raw Atari observations, for the envs the DeepMind
wrappers do not wrap (``preprocessor_pref="rllib"``, or a non-Atari env with such
observations): 210x160x3 frames (its ``GenericPixelPreprocessor``: ``model.dim``,
``grayscale``, ``zero_mean``) and the 128 bytes of the Atari RAM (its
``AtariRamPreprocessor``), as gymnasium ``TransformObservation`` wrappers."""

from __future__ import annotations

import functools
from typing import Any

import gymnasium as gym
import numpy as np
import numpy.typing as npt
from gymnasium.wrappers import TransformObservation

from runtime.env.atari import opencv

#: The shape of raw Atari frames, which the pixel preprocessor takes.
ATARI_FRAME_SHAPE = (210, 160, 3)
#: The shape of the Atari RAM.
ATARI_RAM_SHAPE = (128,)
#: Rows cut off at the top and at the bottom of a frame (the score and the floor).
_CROP = 25


def is_atari_frame(space: gym.Space[Any] | None) -> bool:
    return isinstance(space, gym.spaces.Box) and tuple(space.shape) == ATARI_FRAME_SHAPE


def is_atari_ram(space: gym.Space[Any] | None) -> bool:
    """The RAM of an Atari env; only bytes count: a float feature vector of 128 is no RAM."""
    return (
        isinstance(space, gym.spaces.Box)
        and tuple(space.shape) == ATARI_RAM_SHAPE
        and space.dtype == np.uint8
    )


def pixel_frames(
    env: gym.Env[Any, Any], dim: int, grayscale: bool, zero_mean: bool, where: str
) -> gym.Env[Any, Any]:
    """``env``'s 210x160x3 frames cropped to their middle 160 rows, resized to ``dim x dim``,
    averaged into one channel with ``grayscale``, and scaled to [-1, 1) with ``zero_mean``,
    else to [0, 1]."""
    cv2 = opencv(where, "returns 210x160x3 frames, which the pixel preprocessor resizes")
    shape = (dim, dim, 1 if grayscale else 3)
    low = -1.0 if zero_mean else 0.0
    space = gym.spaces.Box(low, 1.0, shape, np.float32)
    transform = functools.partial(
        _pixels, resize=cv2.resize, dim=dim, grayscale=grayscale, zero_mean=zero_mean
    )
    return TransformObservation(env, transform, space)


def _pixels(
    frame: npt.NDArray[np.uint8], resize: Any, dim: int, grayscale: bool, zero_mean: bool
) -> npt.NDArray[np.float32]:
    image = frame[_CROP:-_CROP]
    if dim < 84:
        # First to 84x84, as the reference does: resizing straight to a small size skips
        # pixels (a cheap mipmap).
        image = resize(image, (84, 84))
    image = resize(image, (dim, dim)).astype(np.float32)
    if grayscale:
        image = image.mean(axis=2, keepdims=True)
    scaled: npt.NDArray[np.float32] = (image - 128.0) / 128.0 if zero_mean else image / 255.0
    return scaled


def atari_ram(env: gym.Env[Any, Any]) -> gym.Env[Any, Any]:
    """``env``'s RAM bytes scaled to [-1, 1)."""
    space = gym.spaces.Box(-1.0, 1.0, ATARI_RAM_SHAPE, np.float32)
    return TransformObservation(env, _ram, space)


def _ram(ram: npt.NDArray[np.uint8]) -> npt.NDArray[np.float32]:
    scaled: npt.NDArray[np.float32] = (ram.astype(np.float32) - 128.0) / 128.0
    return scaled
