"""Gymnasium spaces in a config, recognised and (de)serialised without importing gymnasium
until a space is actually met."""

from __future__ import annotations

from typing import Any

_SPACE_BASE = ("gymnasium.spaces.space", "Space")


def is_space(value: Any) -> bool:
    return any((klass.__module__, klass.__name__) == _SPACE_BASE for klass in type(value).__mro__)


def encode_space(space: Any) -> dict[str, Any]:
    """A JSON-ready description of a built-in gymnasium space."""
    kind = type(space).__name__
    if kind == "Box":
        return {
            "type": "Box",
            "low": space.low.tolist(),
            "high": space.high.tolist(),
            "shape": list(space.shape),
            "dtype": str(space.dtype),
        }
    if kind == "Discrete":
        return {"type": "Discrete", "n": int(space.n), "start": int(space.start)}
    if kind == "MultiDiscrete":
        return {"type": "MultiDiscrete", "nvec": space.nvec.tolist(), "dtype": str(space.dtype)}
    if kind == "MultiBinary":
        return {"type": "MultiBinary", "n": space.n if isinstance(space.n, int) else list(space.n)}
    if kind == "Tuple":
        return {"type": "Tuple", "spaces": [encode_space(s) for s in space.spaces]}
    if kind == "Dict":
        return {"type": "Dict", "spaces": {k: encode_space(s) for k, s in space.spaces.items()}}
    raise ValueError(
        f"a {kind} space can't be written to JSON; "
        "allowed: Box, Discrete, MultiDiscrete, MultiBinary, Tuple, Dict"
    )


def decode_space(data: dict[str, Any]) -> Any:
    import numpy as np
    from gymnasium import spaces

    kind = data.get("type")
    if kind == "Box":
        dtype = np.dtype(data["dtype"])
        return spaces.Box(
            np.asarray(data["low"], dtype=dtype),
            np.asarray(data["high"], dtype=dtype),
            shape=tuple(data["shape"]),
            dtype=dtype,
        )
    if kind == "Discrete":
        return spaces.Discrete(data["n"], start=data.get("start", 0))
    if kind == "MultiDiscrete":
        return spaces.MultiDiscrete(data["nvec"], dtype=data.get("dtype", "int64"))
    if kind == "MultiBinary":
        return spaces.MultiBinary(data["n"])
    if kind == "Tuple":
        return spaces.Tuple([decode_space(s) for s in data["spaces"]])
    if kind == "Dict":
        return spaces.Dict({k: decode_space(s) for k, s in data["spaces"].items()})
    raise ValueError(f"unknown space type {kind!r}")
