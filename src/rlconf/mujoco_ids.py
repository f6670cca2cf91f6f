"""MuJoCo ids (``HalfCheetah-v5``, ``Hopper-v3``, ...): gymnasium's MuJoCo set needs the
``mujoco`` package (the ``mujoco`` extra); without it, such an id is an error naming the extra.

The v2 and v3 ids ran on mujoco-py, which gymnasium 1.x no longer has: it still registers them,
only to raise an ImportError when one is made. Files written for RLlib 2.x name them
(``sac/halfcheetah-sac.yaml``: ``HalfCheetah-v3``), so such an id is made as the same env's v5
(the same robot and task on the ``mujoco`` bindings), with a one-line note naming both. The v4
ids stay as they are: gymnasium 1.x makes them itself. Shared by the command line's checks and
the runtime.
"""

from __future__ import annotations

import importlib.util
import re
from typing import Any

from rlconf.errors import FieldIssue

#: How to install what the MuJoCo envs need.
MUJOCO_EXTRA = "pip install 'rlconf[mujoco]'"
#: Where gymnasium's MuJoCo envs live (the entry points of the v4 and v5 ids).
_MUJOCO_MODULE = "gymnasium.envs.mujoco"
#: An id of the mujoco-py era: the env's name and its version.
_MUJOCO_PY_ID = re.compile(r"(?P<name>[A-Z][A-Za-z0-9]*)-v[23]")


def mujoco_installed() -> bool:
    return importlib.util.find_spec("mujoco") is not None


def _is_mujoco_spec(env_id: str) -> bool:
    import gymnasium

    spec = gymnasium.registry.get(env_id)
    return spec is not None and str(spec.entry_point).startswith(_MUJOCO_MODULE)


def current_mujoco_id(env: Any) -> str | None:
    """The v5 id a mujoco-py-era MuJoCo id (``HalfCheetah-v3``) is made as; None for any other
    ``env``."""
    if not isinstance(env, str):
        return None
    match = _MUJOCO_PY_ID.fullmatch(env)
    if match is None:
        return None
    current = f"{match['name']}-v5"
    return current if _is_mujoco_spec(current) else None


def mujoco_id_note(env: Any) -> str | None:
    """The one-line note for ``env`` when it is made as another id, else None."""
    current = current_mujoco_id(env)
    if current is None:
        return None
    return (
        f"env {env!r} is a MuJoCo id of mujoco-py, which gymnasium 1.x no longer has: it is "
        f"made as {current!r} (the same env on the mujoco bindings)"
    )


def is_mujoco_id(env: Any) -> bool:
    """Whether ``env`` is an id of gymnasium's MuJoCo set (a mujoco-py-era one included)."""
    if not isinstance(env, str):
        return False
    return current_mujoco_id(env) is not None or _is_mujoco_spec(env)


def mujoco_id_issue(env: Any, field: str = "env") -> FieldIssue | None:
    """The issue when ``env`` is a MuJoCo id and mujoco is not installed, else None."""
    if mujoco_installed() or not is_mujoco_id(env):
        return None
    return FieldIssue(
        field,
        "is a MuJoCo id, and mujoco, which simulates the MuJoCo envs, is not installed",
        env,
        allowed=f"{MUJOCO_EXTRA}, or another env",
    )
