"""What ``Algorithm(config=..., env=...)`` is given - a config, a dict of its keys (a Tune
trial's config dict among them) or None - turned into the frozen config the runtime reads."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeAlias

from rlconf.algorithm_config import AlgorithmConfig
from rlconf.errors import ConfigError
from rlconf.unresolved_spaces import refuse_search_spaces
from runtime.env.env_preparation import clips_atari_rewards

if TYPE_CHECKING:
    from runtime.algorithm import Algorithm

#: What an algorithm accepts as its config.
ConfigInput: TypeAlias = AlgorithmConfig | Mapping[str, Any] | None

#: Keys Tune adds to a trial's config dict; they are not config keys.
TUNE_KEYS = ("__trial_info__", "__stdout_file__", "__stderr_file__")


def split_tune_keys(config: ConfigInput) -> tuple[ConfigInput, dict[str, Any]]:
    """``config`` without the keys Tune adds to a trial's config dict (a mapping becomes a new
    dict), and those keys."""
    if not isinstance(config, Mapping):
        return config, {}
    rest = dict(config)
    tune_keys = {k: rest.pop(k) for k in TUNE_KEYS if k in rest}
    return rest, tune_keys


def resolve_config(
    algorithm_class: type[Algorithm], config: ConfigInput, env: Any
) -> AlgorithmConfig:
    """The frozen config ``algorithm_class`` runs with: its default config for None, a copy of
    a config (which must be one of its ``config_class``), or a dict of config keys; ``env``
    (when not None) set on it. Anything else is a ``ConfigError``."""
    name = algorithm_class.__name__
    config_class = algorithm_class.config_class
    where = f"{name}(config=...)"
    if config is None:
        resolved = algorithm_class.get_default_config()
    elif isinstance(config, AlgorithmConfig):
        if not isinstance(config, config_class):
            raise ConfigError.single(
                where,
                "config",
                f"is a {type(config).__name__}; {name} needs a {config_class.__name__}",
                value=type(config).__name__,
                has_value=True,
            )
        resolved = config.copy()
    elif isinstance(config, Mapping):
        resolved = config_class.from_dict(config)
    else:
        raise ConfigError.single(
            where,
            "config",
            "is not a config",
            value=config,
            has_value=True,
            allowed=f"a {config_class.__name__}, a dict of its keys, or None",
        )
    if env is not None:
        resolved.environment(env)
    refuse_search_spaces(resolved, where)
    if clips_atari_rewards(resolved, where):
        # The reference clips the rewards of envs under the DeepMind wrappers when clip_rewards
        # is None; the rollout workers read the resolved value.
        resolved.environment(clip_rewards=True)
    return resolved.freeze()
