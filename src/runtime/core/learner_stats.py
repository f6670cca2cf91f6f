"""Averaging the stats of many gradient steps, read off the device once."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch


def mean_stats(steps: Sequence[dict[str, Any]]) -> dict[str, float]:
    """The mean of each stat over ``steps`` (dicts of detached 0-d tensors or numbers): one
    stack and one transfer per stat instead of a float() per step, which would wait on the
    device every step."""
    if not steps:
        return {}
    out: dict[str, float] = {}
    for key in steps[0]:
        values = [step[key] for step in steps if key in step]
        if all(isinstance(v, torch.Tensor) for v in values):
            out[key] = float(torch.stack(values).float().mean())
        else:
            out[key] = sum(float(v) for v in values) / len(values)
    return out
