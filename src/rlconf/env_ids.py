"""Is an ``env`` value one this process can make? Checked by the command line before anything
heavy is imported, with a did-you-mean over gymnasium's ids and the registered names.

Names registered with ``runtime.register_env`` live in that module of the current process: when
it was never imported, nothing was registered. Import paths are left to the runtime, which
imports them when the algorithm is built, except where ``env_import_issue`` imports them first
(``rlconf train``: a bad path in an experiment file is reported with the file's other mistakes,
naming the file and the experiment).
"""

from __future__ import annotations

import sys
from typing import Any

from rlconf.atari_ids import atari_id_issue
from rlconf.errors import ConfigError, FieldIssue
from rlconf.importpath import ImportPathError, resolve
from rlconf.mujoco_ids import mujoco_id_issue
from rlconf.rllib_example_envs import our_example_env
from rlconf.unknown_keys import did_you_mean

_ALLOWED = (
    "a gymnasium id such as 'CartPole-v1' (Atari ids such as 'ALE/Pong-v5' with ale-py: pip "
    "install 'rlconf[atari]'; MuJoCo ids such as 'HalfCheetah-v5' with mujoco: pip install "
    "'rlconf[mujoco]'), a name passed to runtime.register_env(), an import "
    "path 'package.module:EnvClass', or an env class"
)


def is_import_path(env: str) -> bool:
    return "." in env or ":" in env


def env_issue(env: Any, field: str = "env") -> FieldIssue | None:
    """What is wrong with ``env`` as an environment to make here, or None."""
    if not isinstance(env, str) or is_import_path(env):
        return None
    registry = sys.modules.get("runtime.env.env_registry")
    registered: list[str] = []
    if registry is not None:
        try:
            registry.env_creator_for(env)  # the runtime's own verdict, its registries included
        except ConfigError:
            registered = list(registry.registered_envs())
        else:
            return None
    import gymnasium

    mujoco = mujoco_id_issue(env, field)
    if mujoco is not None:
        return mujoco
    if env in gymnasium.registry:
        return None
    atari = atari_id_issue(env, field)  # registers the ALE ids with ale-py installed
    if atari is not None:
        return atari
    if env in gymnasium.registry:
        return None
    hint = did_you_mean(env, [*registered, *gymnasium.registry])
    return FieldIssue(
        field,
        "is neither a gymnasium id nor a registered env name" + (f" ({hint})" if hint else ""),
        env,
        allowed=_ALLOWED,
    )


def env_import_issue(env: Any, field: str = "env") -> FieldIssue | None:
    """What is wrong with ``env`` as an import path of an env (``'package.module:EnvClass'`` or
    a creator function), importing it now; None when it names a class or function, and for a
    value that is no import path, a gymnasium id or a registered name."""
    if not isinstance(env, str) or not is_import_path(env):
        return None
    registry = sys.modules.get("runtime.env.env_registry")
    if registry is not None:
        try:
            registry.env_creator_for(env)  # the runtime's own verdict, its registries included
        except ConfigError as exc:
            return FieldIssue(field, exc.issues[0].problem, env, allowed=_ALLOWED)
        return None
    import gymnasium

    if env in gymnasium.registry:
        return None
    try:
        target = resolve(our_example_env(env) or env)
    except ImportPathError as exc:
        return FieldIssue(field, f"can't be imported: {exc}", env, allowed=_ALLOWED)
    if not callable(target):
        return FieldIssue(
            field, "names neither an env class nor a creator function", env, allowed=_ALLOWED
        )
    return None
