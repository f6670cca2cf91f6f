"""Settings the runtime does not carry out: refused when an algorithm is built (with the reason)
rather than silently ignored; and the inert reference keys a config was given, named in a
warning.

``REFUSED`` is the one table of such settings: key (``"model.x"`` and ``"multiagent.x"`` for
nested ones) -> the value the runtime behaves as, and why no other value is carried out.
``NO_EFFECT`` lists the few keys that no value of changes anything, and why.
"""

from __future__ import annotations

import logging
from typing import Any

from rlconf.algorithm_config import AlgorithmConfig
from rlconf.errors import ConfigError, FieldIssue

logger = logging.getLogger(__name__)

#: key -> (the value the runtime behaves as, why no other value is carried out)
REFUSED: dict[str, tuple[Any, str]] = {
    "sample_async": (False, "asynchronous sampling is not available; sampling is synchronous"),
    "remote_worker_envs": (False, "sub-envs run in the worker process; use num_workers"),
    "remote_env_batch_wait_ms": (0, "it only matters with remote_worker_envs (not available)"),
    "render_env": (False, "rendering is not available; render in a callback or an env wrapper"),
    "_disable_action_flattening": (
        False,
        "the runtime's action spaces are flat (Box, Discrete, MultiDiscrete)",
    ),
    "num_multi_gpu_tower_stacks": (
        1,
        "a V-trace learner trains each batch as it comes, on one device",
    ),
    "num_aggregation_workers": (
        0,
        "the driver concatenates the fragments into train batches (no aggregation actors)",
    ),
    "_lr_vf": (
        0.0005,
        "it is the learning rate of _separate_vf_optimizer's value optimizer, which is not "
        "supported",
    ),
    "multiagent.replay_mode": (
        "independent",
        "lockstep replay is not available; each policy replays its own transitions",
    ),
}

#: Settings a multi-agent setup can't carry out: key -> (the value it behaves as, why).
REFUSED_MULTI_AGENT: dict[str, tuple[Any, str]] = {
    "record_env": (
        False,
        "videos are recorded of single-agent gymnasium envs only (gymnasium's RecordVideo "
        "wraps a gymnasium.Env)",
    ),
}

#: key -> why no value of it changes what the runtime does (each field's description says so).
NO_EFFECT: dict[str, str] = {
    "framework": "'torch', the only accepted value, is what the runtime always uses",
    "metrics_episode_collection_timeout_s": (
        "episode metrics come back with each sample() call, never waited for"
    ),
    "compress_observations": (
        "replay buffers always hold each distinct image frame once (what compressing "
        "observations saves memory for); output_compress_columns compresses output files"
    ),
}


def value_at(config: AlgorithmConfig, path: str) -> Any:
    """The value of ``"key"`` or of a nested ``"model.key"`` / ``"multiagent.key"``."""
    head, _, rest = path.partition(".")
    return config[head][rest] if rest else config[head]


def _applies(config: AlgorithmConfig, path: str) -> bool:
    """Whether ``path`` is a setting of this config's class (``shuffle_sequences`` is PPO's)."""
    head, _, rest = path.partition(".")
    return head in config and (not rest or rest in config[head])


def refuse_unsupported(config: AlgorithmConfig, name: str) -> None:
    """Raise one ConfigError naming every setting the runtime would not carry out; log the
    inert reference keys the config was given."""
    issues = [
        FieldIssue(
            path, f"is not supported by the runtime: {why}", value_at(config, path), True, repr(ok)
        )
        for path, (ok, why) in REFUSED.items()
        if _applies(config, path) and value_at(config, path) != ok
    ]
    if issues:
        raise ConfigError(f"{name}(config=...)", issues)
    inert = config.inert_settings()
    if inert:
        logger.warning(
            "%s: ignoring reference settings that have no effect in rlconf: %s",
            name,
            ", ".join(f"{path}={value!r}" for path, value in inert.items()),
        )


def refuse_for_multi_agent(config: AlgorithmConfig, name: str) -> None:
    """Raise one ConfigError naming every setting a multi-agent setup can't carry out."""
    issues = [
        FieldIssue(
            path,
            f"is not supported with a multi-agent env or several policies: {why}",
            value_at(config, path),
            True,
            repr(ok),
        )
        for path, (ok, why) in REFUSED_MULTI_AGENT.items()
        if value_at(config, path) != ok
    ]
    if issues:
        raise ConfigError(name, issues)


#: Multi-agent settings a single-agent env has nothing to act on: key -> why.
REFUSED_SINGLE_AGENT: dict[str, str] = {
    "policy_mapping_fn": "a single-agent env's one agent always acts with 'default_policy'",
    "observation_fn": "it rewrites the observation dicts of a MultiAgentEnv",
}


def refuse_for_single_agent(config: AlgorithmConfig, name: str) -> None:
    """Raise one ConfigError naming the multi-agent settings given for a single-agent env."""
    issues = [
        FieldIssue(
            f"multiagent.{key}",
            f"has no effect with a single-agent env: {why}; use a runtime.MultiAgentEnv "
            "(e.g. runtime.make_multi_agent(...))",
            config[key],
            True,
            "None",
        )
        for key, why in REFUSED_SINGLE_AGENT.items()
        if config[key] is not None
    ]
    if issues:
        raise ConfigError(name, issues)
