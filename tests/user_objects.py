"""Module-level classes and functions that configs refer to by import path in the tests."""

from __future__ import annotations

from typing import Any


class MyCallbacks:
    pass


class MyEnv:
    def __init__(self, config: dict[str, Any]) -> None:
        self.config = config


def curriculum(train_result: dict[str, Any], env: Any, ctx: Any) -> int:
    return 1


def mapping(agent_id: str, *args: Any, **kwargs: Any) -> str:
    return "p0" if agent_id.endswith("0") else "p1"


def custom_eval(algorithm: Any, eval_workers: Any) -> dict[str, float]:
    return {"score": 1.0}
