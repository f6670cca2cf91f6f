"""Observation preprocessors: any supported gymnasium space -> a flat float32 vector (or, for
HxWxC images, an image for the vision network: uint8 where the space is, else float32), applied
to many observations at once."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
import numpy.typing as npt

from runtime.core.image_obs import model_obs, uint8_images

Array = npt.NDArray[np.float32]


class Preprocessor:
    """Turns raw observations of ``space`` into float32 arrays of ``shape`` (uint8 images of a
    uint8 image space: ``runtime.core.image_obs``)."""

    def __init__(self, space: gym.Space[Any], keep_image: bool = False) -> None:
        self.space = space
        self.keep_image = keep_image
        #: Images of a uint8 space stay uint8 (the conv stack casts them).
        self.keep_uint8 = keep_image and uint8_images(space)
        self.shape: tuple[int, ...] = self._shape()
        self.size = int(np.prod(self.shape))

    def _shape(self) -> tuple[int, ...]:
        if self.keep_image:
            return tuple(int(d) for d in self.space.shape or ())
        return (_flat_size(self.space),)

    @property
    def observation_space(self) -> gym.spaces.Box:
        """The space of the preprocessed observations (what the model sees): a uint8 image
        space's own bounds and dtype, else float32."""
        if self.keep_uint8:
            assert isinstance(self.space, gym.spaces.Box)
            return gym.spaces.Box(self.space.low, self.space.high, self.shape, np.uint8)
        return gym.spaces.Box(-np.inf, np.inf, self.shape, np.float32)

    def transform(self, obs: Any) -> npt.NDArray[Any]:
        row: npt.NDArray[Any] = self.transform_many([obs])[0]
        return row

    def transform_many(self, observations: Sequence[Any]) -> npt.NDArray[Any]:
        """One row per observation, shape ``(len(observations), *self.shape)``: float32, or the
        uint8 images of a uint8 image space as they are (a float image as float32, with the
        values given)."""
        try:
            if self.keep_image:
                return model_obs(observations, self.keep_uint8)
            flat = _flatten(self.space, observations)
            if flat.shape[1] != self.size:
                raise ValueError(f"{flat.shape[1]} values where the space has {self.size}")
            return flat
        except (IndexError, KeyError, TypeError, ValueError) as error:
            # A wrong observation fails deep in numpy indexing: say which space it missed (the
            # space itself was checked when the preprocessor was made).
            sample = observations[0] if len(observations) else None
            raise ValueError(
                f"observation {_short(sample)} does not fit the observation space "
                f"{self.space} ({type(error).__name__}: {error}); pass observations as the "
                "env returns them"
            ) from error


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


def _flat_size(space: gym.Space[Any]) -> int:
    if isinstance(space, gym.spaces.Box):
        return int(np.prod(space.shape))
    if isinstance(space, gym.spaces.Discrete):
        return int(space.n)
    if isinstance(space, gym.spaces.MultiDiscrete):
        return int(np.sum(space.nvec))
    if isinstance(space, gym.spaces.MultiBinary):
        return int(np.prod(space.shape))
    if isinstance(space, gym.spaces.Tuple):
        return sum(_flat_size(s) for s in space.spaces)
    if isinstance(space, gym.spaces.Dict):
        return sum(_flat_size(s) for s in space.spaces.values())
    raise ValueError(
        f"observation space {space} is not supported; supported: Box, Discrete, "
        "MultiDiscrete, MultiBinary, Tuple and Dict of these"
    )


def _flatten(space: gym.Space[Any], observations: Sequence[Any]) -> Array:
    count = len(observations)
    if isinstance(space, gym.spaces.Box | gym.spaces.MultiBinary):
        return np.asarray(observations, dtype=np.float32).reshape(count, -1)
    if isinstance(space, gym.spaces.Discrete):
        out = np.zeros((count, int(space.n)), dtype=np.float32)
        index = np.asarray(observations, dtype=np.int64) - int(space.start)
        out[np.arange(count), index] = 1.0
        return out
    if isinstance(space, gym.spaces.MultiDiscrete):
        nvec = np.asarray(space.nvec).ravel()
        values = np.asarray(observations, dtype=np.int64).reshape(count, -1)
        offsets = np.concatenate([[0], np.cumsum(nvec)[:-1]])
        out = np.zeros((count, int(nvec.sum())), dtype=np.float32)
        rows = np.repeat(np.arange(count), len(nvec))
        out[rows, (values + offsets).ravel()] = 1.0
        return out
    if isinstance(space, gym.spaces.Tuple):
        parts = [
            _flatten(sub, [obs[i] for obs in observations]) for i, sub in enumerate(space.spaces)
        ]
        return np.concatenate(parts, axis=1)
    if isinstance(space, gym.spaces.Dict):
        parts = [_flatten(sub, [obs[key] for obs in observations]) for key, sub in space.items()]
        return np.concatenate(parts, axis=1)
    _flat_size(space)  # raises the "not supported" error
    raise AssertionError("unreachable")


def get_preprocessor(space: gym.Space[Any], model_config: dict[str, Any]) -> Preprocessor:
    """Images (rank-3 Box, HxWxC) stay images, for the conv layers of the vision network (as
    the reference keeps them); everything else is flattened. The frames of Atari envs come
    here already preprocessed (``runtime.env.env_preparation``)."""
    is_image = isinstance(space, gym.spaces.Box) and len(space.shape) == 3
    return Preprocessor(space, keep_image=is_image)
