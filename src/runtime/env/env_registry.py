"""Turn the config's ``env`` into an env creator: registered names, gymnasium ids, import paths
and env classes."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import Any

import gymnasium as gym

from rlconf.errors import ConfigError
from rlconf.importpath import ImportPathError, resolve
from rlconf.mujoco_ids import current_mujoco_id, mujoco_id_issue
from rlconf.rllib_example_envs import our_example_env
from runtime.env.env_classes import EnvClassCreator
from runtime.env.env_context import EnvContext

EnvCreator = Callable[[EnvContext], Any]

_CREATORS: dict[str, EnvCreator] = {}
_LOCK = threading.Lock()


def register_env(name: str, env_creator: EnvCreator) -> None:
    """Make ``name`` usable as ``config.environment(name)``; the creator gets an EnvContext.

    Names registered in the driver are sent to remote workers with the config, so a creator
    must be picklable (a module-level function, or a closure cloudpickle can carry).
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"register_env: name must be a non-empty string, got {name!r}")
    if not callable(env_creator):
        raise ValueError(f"register_env: env_creator for {name!r} must be callable")
    with _LOCK:
        _CREATORS[name] = env_creator
    _register_with_tune(name, env_creator)


def _register_with_tune(name: str, env_creator: EnvCreator) -> None:
    """Keep Tune's registry in step, so names registered here work in Tune trials too (once
    Tune is imported; ``runtime.cluster.tune_support`` registers the earlier ones then)."""
    if "ray.tune" not in sys.modules:
        return
    from ray.tune.registry import register_env as tune_register_env

    tune_register_env(name, env_creator)


def _from_tune_registry(name: str) -> EnvCreator | None:
    """A creator registered with Tune (in a Tune trial, the driver's names arrive there)."""
    if "ray.tune" not in sys.modules:
        return None
    from runtime.cluster.ray_private import tune_env_creator

    creator: EnvCreator | None = tune_env_creator(name)
    return creator


def registered_envs() -> dict[str, EnvCreator]:
    with _LOCK:
        return dict(_CREATORS)


class GymEnvCreator:
    """The creator of a gymnasium id: ``gym.make(env_id, **env_config)``; ``render_mode`` is
    passed on when given (``record_env`` makes the recorded sub-env with ``"rgb_array"``)."""

    def __init__(self, env_id: str) -> None:
        self.env_id = env_id

    def __call__(self, ctx: EnvContext, render_mode: str | None = None) -> Any:
        kwargs = dict(ctx)
        if render_mode is not None:
            kwargs["render_mode"] = render_mode
        return gym.make(self.env_id, **kwargs)

    def __repr__(self) -> str:
        return f"GymEnvCreator({self.env_id!r})"


def _from_gym_id(env_id: str) -> EnvCreator:
    return GymEnvCreator(env_id)


def env_creator_for(env: Any, extra: dict[str, EnvCreator] | None = None) -> EnvCreator:
    """The creator for ``env``: a registered name, a gymnasium id, an import path or a class.

    ``extra`` holds creators registered in another process (sent along with the config).
    """
    where = "environment()"
    if env is None:
        raise ConfigError.single(where, "env", "is not set; call config.environment(env=...)")
    if isinstance(env, type):
        return EnvClassCreator(env)
    if callable(env):
        return env  # type: ignore[no-any-return]
    if not isinstance(env, str):
        raise ConfigError.single(where, "env", "is not an env", value=env, has_value=True)
    creators = {**(extra or {}), **registered_envs()}
    if env in creators:
        return creators[env]
    from_tune = _from_tune_registry(env)
    if from_tune is not None:
        return from_tune
    if env in gym.registry:
        issue = mujoco_id_issue(env)
        if issue is not None:
            raise ConfigError(where, [issue])
        # A mujoco-py-era id (HalfCheetah-v3) is made as its v5 (noted at build: ensure_env_id).
        return _from_gym_id(current_mujoco_id(env) or env)
    if "." in env or ":" in env:
        try:
            target = resolve(our_example_env(env) or env)
        except ImportPathError as exc:
            raise ConfigError.single(
                where, "env", f"can't be imported: {exc}", value=env, has_value=True
            ) from None
        if isinstance(target, type):
            return EnvClassCreator(target)
        if not callable(target):
            raise ConfigError.single(
                where,
                "env",
                "names neither an env class nor a creator function",
                value=env,
                has_value=True,
            )
        creator: EnvCreator = target
        return creator
    raise ConfigError.single(
        where,
        "env",
        "is neither a registered name nor a gymnasium id",
        value=env,
        has_value=True,
        allowed="a name passed to runtime.register_env(), a gymnasium id such as "
        "'CartPole-v1', an import path 'package.module:EnvClass', or an env class",
    )
