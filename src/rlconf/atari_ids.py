"""Atari ids (``ALE/Pong-v5``, ``PongNoFrameskip-v4``): gymnasium knows them once ale-py (the
``atari`` extra) has registered them in the process; without ale-py, an Atari id is an error
naming the extra. Shared by the command line's checks and the runtime."""

from __future__ import annotations

import importlib
import importlib.util
import re
from typing import Any

from rlconf.errors import FieldIssue

#: How to install what Atari envs need: ale-py, and opencv for the frame resizing.
ATARI_EXTRA = "pip install 'rlconf[atari]'"
#: What an ALE id looks like: the ALE namespace (v5), or an old id (Pong-v0, Pong-ram-v4,
#: PongNoFrameskip-v4, ...); the ALE ids are registered only for such an id.
_ALE_LIKE = re.compile(r"ALE/.+|[A-Z][A-Za-z0-9]*(-ram)?(NoFrameskip|Deterministic)?-v[04]")
#: What is surely an Atari id without ale-py to tell (no typo of CartPole-v0).
_SURELY_ATARI = re.compile(r"ALE/.+|.*(NoFrameskip|Deterministic|-ram).*-v[04]")


def ale_py_installed() -> bool:
    return importlib.util.find_spec("ale_py") is not None


def register_atari_envs() -> bool:
    """Register gymnasium's ALE ids in this process (importing ale-py does); False without
    ale-py."""
    if not ale_py_installed():
        return False
    import gymnasium

    gymnasium.register_envs(importlib.import_module("ale_py"))
    return True


def atari_id_issue(env: Any, field: str = "env") -> FieldIssue | None:
    """Registers the ALE ids when ``env`` looks like one gymnasium does not know yet; the
    issue when it is an Atari id and ale-py is not installed, else None."""
    if not isinstance(env, str) or not _ALE_LIKE.fullmatch(env):
        return None
    import gymnasium

    if env in gymnasium.registry or register_atari_envs() or not _SURELY_ATARI.fullmatch(env):
        return None
    return FieldIssue(
        field,
        "is an Atari id, and ale-py, which provides the Atari envs, is not installed",
        env,
        allowed=f"{ATARI_EXTRA} (ale-py and opencv), or another env",
    )
