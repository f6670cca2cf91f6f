"""``flatten``: a nested result or config as ``("a/b", value)`` leaves, the names of
``progress.csv``'s columns, TensorBoard's tags and the trackers' metrics and parameters."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any


def flatten(result: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    """``("a/b", value)`` for every leaf of a nested result."""
    for key, value in result.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            yield from flatten(value, name + "/")
        else:
            yield name, value
