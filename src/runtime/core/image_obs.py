"""Byte images stay bytes: an HxWxC observation space of uint8 (the DeepMind-wrapped Atari
frames, raw 210x160x3 pixels, a user's uint8 image Box) keeps its observations uint8 from the
preprocessor through sample batches, replay and the learner's tensors to the network, whose
conv stack casts them to float32 first (``runtime.core.vision_network``): a quarter of the
bytes of float32 frames on every copy, and the same numbers in the network, as uint8 ->
float32 is exact. Every other observation is float32, as the model sees it."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import numpy.typing as npt


def uint8_images(space: gym.Space[Any]) -> bool:
    """``space`` is an HxWxC image Box of uint8: its observations stay uint8."""
    return isinstance(space, gym.spaces.Box) and len(space.shape) == 3 and space.dtype == np.uint8


def model_obs(obs: Any, keep_uint8: bool) -> npt.NDArray[Any]:
    """Observations as the model receives them: uint8 ones as they are where ``keep_uint8``
    (their space is ``uint8_images``), anything else float32 with the values given (a float
    frame of a uint8 space too, as the reference's acting calls take both)."""
    if not keep_uint8:
        return np.asarray(obs, dtype=np.float32)
    array = np.asarray(obs)
    if array.dtype == np.uint8:
        return array
    converted: npt.NDArray[np.float32] = array.astype(np.float32, copy=False)
    return converted
