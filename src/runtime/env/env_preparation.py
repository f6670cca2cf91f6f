"""What happens to each env a rollout worker makes before its observations reach the
preprocessor: ``preprocessor_pref``, ``_disable_preprocessor_api``, ``clip_rewards=None`` for
Atari, and the image keys of the model dict (``dim``, ``grayscale``, ``zero_mean``,
``framestack``), as the reference decides them per env:

- ``preprocessor_pref="deepmind"`` and an Atari env: the DeepMind wrappers
  (``runtime.env.atari``; ``dim``, ``framestack``);
- otherwise, unless preprocessing is off (``preprocessor_pref=None`` or
  ``_disable_preprocessor_api``): 210x160x3 frames go through the pixel preprocessor (``dim``,
  ``grayscale``, ``zero_mean``), Atari RAM bytes are scaled (``runtime.env.pixel_frames``);
- preprocessing off: the observations reach the model as the env returns them, so the env's
  observation space must be a Box (the preprocessor leaves Boxes as they are; rlconf's models
  take nothing else).

An image key set to anything but its default where it does not act on the env is refused
when the env is made (at build), naming the key and why.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import gymnasium as gym

from rlconf.errors import ConfigError, FieldIssue
from rlconf.model_config import PREPROCESSING_DEFAULTS
from runtime.core.settings import setting, settings_of
from runtime.env.atari import (
    STACKED_FRAMES,
    ensure_env_id,
    is_atari,
    is_atari_id,
    opencv,
    wrap_deepmind,
)
from runtime.env.env_context import EnvContext
from runtime.env.env_registry import EnvCreator, GymEnvCreator
from runtime.env.multi_agent_env import MultiAgentEnv
from runtime.env.pixel_frames import atari_ram, is_atari_frame, is_atari_ram, pixel_frames

#: The model dict's keys that act here (not on the networks), at their reference defaults.
_DEFAULTS: dict[str, Any] = dict(PREPROCESSING_DEFAULTS)
_PIXELS = "the pixel preprocessor of 210x160x3 frames"


@dataclass(frozen=True)
class PreparationSettings:
    """What the env preparation reads of the config."""

    env: Any
    env_config: Mapping[str, Any]
    preprocessor_pref: str | None
    clip_rewards: Any
    model: Mapping[str, Any]
    disable_preprocessor_api: bool = setting("_disable_preprocessor_api")


def clips_atari_rewards(config: Any, component: str) -> bool:
    """Whether ``clip_rewards=None`` of ``config`` means rewards clipped to their sign: the
    reference's choice for envs under the DeepMind wrappers, decided ahead for a gymnasium
    Atari id (``runtime.training.config_resolution`` sets ``clip_rewards=True`` then)."""
    settings = settings_of(PreparationSettings, config, component)
    return (
        settings.clip_rewards is None
        and settings.preprocessor_pref == "deepmind"
        and is_atari_id(settings.env, dict(settings.env_config))
    )


@dataclass(frozen=True)
class EnvPreparation:
    """The wrappers and checks an env gets (see the module's docstring)."""

    where: str
    preprocessor_pref: str | None
    disable_preprocessor_api: bool
    clip_rewards: Any
    dim: int
    grayscale: bool
    zero_mean: bool
    framestack: bool

    @classmethod
    def of(cls, config: Any, component: str) -> EnvPreparation:
        settings = settings_of(PreparationSettings, config, component)
        model = {**_DEFAULTS, **settings.model}
        return cls(
            f"{component} (build)",
            settings.preprocessor_pref,
            bool(settings.disable_preprocessor_api),
            settings.clip_rewards,
            int(model["dim"]),
            bool(model["grayscale"]),
            bool(model["zero_mean"]),
            bool(model["framestack"]),
        )

    @property
    def preprocessing(self) -> bool:
        return self.preprocessor_pref is not None and not self.disable_preprocessor_api

    def apply(self, env: Any) -> Any:
        """``env`` wrapped as the settings ask; a ConfigError naming every setting that does
        not act on it."""
        issues: list[FieldIssue] = []
        deepmind = self.preprocessor_pref == "deepmind" and is_atari(env)
        pixels = False
        if deepmind and self.clip_rewards is None:
            issues.append(_clip_rewards_issue())
        elif deepmind:
            opencv(self.where, "is an Atari env, whose frames the DeepMind wrappers resize")
            env = wrap_deepmind(env, self.dim, self.framestack)
        elif self.preprocessing and not isinstance(env, MultiAgentEnv):
            space = getattr(env, "observation_space", None)
            if is_atari_frame(space):
                env = pixel_frames(env, self.dim, self.grayscale, self.zero_mean, self.where)
                pixels = True
            elif is_atari_ram(space):
                env = atari_ram(env)
        if not self.preprocessing:
            issues += self._unpreprocessed_issues(env)
        issues += self._unused_key_issues(env, deepmind, pixels)
        if issues:
            raise ConfigError(self.where, issues)
        return env

    def _unpreprocessed_issues(self, env: Any) -> list[FieldIssue]:
        spaces = _observation_spaces(env)
        others = [space for space in spaces if not isinstance(space, gym.spaces.Box)]
        if not others:
            return []
        key, value = (
            ("_disable_preprocessor_api", True)
            if self.disable_preprocessor_api
            else ("preprocessor_pref", None)
        )
        return [
            FieldIssue(
                key,
                "hands the env's observations to the model unpreprocessed, and rlconf's models "
                f"take Box observations; this env's observation space is {others[0]}",
                value,
                True,
                "preprocessor_pref 'deepmind' or 'rllib' with _disable_preprocessor_api=False "
                "(Discrete observations one-hot, Tuple and Dict ones flattened), or an env "
                "with Box observations",
            )
        ]

    def _unused_key_issues(self, env: Any, deepmind: bool, pixels: bool) -> list[FieldIssue]:
        space = getattr(env, "observation_space", None)
        seen = f"this env's observations ({space}) go through neither"
        not_wrapped = (
            "which do not wrap this env (preprocessor_pref="
            f"{self.preprocessor_pref!r}; an Atari env with image observations)"
        )
        not_pixels = (
            f"which this env's observations ({space}) do not go through (210x160x3 frames of "
            "an env the DeepMind wrappers do not wrap, with preprocessing on)"
        )
        found = {
            "dim": (
                not (deepmind or pixels),
                "is the size frames are resized to by the DeepMind wrappers "
                f"(preprocessor_pref='deepmind', an Atari env) or by {_PIXELS}; {seen}",
            ),
            "framestack": (
                not deepmind,
                f"stacks {STACKED_FRAMES} frames under the DeepMind wrappers, {not_wrapped}",
            ),
            "grayscale": (
                not pixels,
                f"acts in {_PIXELS} (the DeepMind wrappers always grayscale), {not_pixels}",
            ),
            "zero_mean": (
                not pixels,
                f"acts in {_PIXELS} (the DeepMind wrappers never rescale), {not_pixels}",
            ),
        }
        return [
            FieldIssue(f"model.{key}", problem, getattr(self, key), True, repr(_DEFAULTS[key]))
            for key, (unused, problem) in found.items()
            if unused and getattr(self, key) != _DEFAULTS[key]
        ]


def _clip_rewards_issue() -> FieldIssue:
    return FieldIssue(
        "clip_rewards",
        "is None, which clips the rewards of envs under the DeepMind wrappers to their sign (as "
        "the reference does); rlconf decides that ahead for gymnasium Atari ids only, and this "
        "env creator made an Atari env",
        None,
        True,
        "True (the reference's choice for Atari), False, or a bound",
    )


def _observation_spaces(env: Any) -> list[gym.Space[Any]]:
    """The observation space of ``env``, or each agent's of a multi-agent env."""
    if isinstance(env, MultiAgentEnv) and env.observation_spaces:
        return list(env.observation_spaces.values())
    space = getattr(env, "observation_space", None)
    return [space] if isinstance(space, gym.Space) else []


class PreparedEnvCreator:
    """An env creator whose envs come prepared (wrapped and checked)."""

    def __init__(self, base: EnvCreator, preparation: EnvPreparation) -> None:
        self.base = base
        self.preparation = preparation

    def __call__(self, ctx: EnvContext) -> Any:
        return self.preparation.apply(self.base(ctx))

    def __repr__(self) -> str:
        return f"PreparedEnvCreator({self.base!r})"


class PreparedGymEnvCreator(GymEnvCreator):
    """A gymnasium id's creator whose envs come prepared; still a ``GymEnvCreator``, so that
    ``record_env`` makes the recorded sub-env render frames."""

    def __init__(self, base: GymEnvCreator, preparation: EnvPreparation) -> None:
        super().__init__(base.env_id)
        self.base = base
        self.preparation = preparation

    def __call__(self, ctx: EnvContext, render_mode: str | None = None) -> Any:
        # A remote worker's process has not registered the ALE ids yet.
        ensure_env_id(self.env_id)
        return self.preparation.apply(super().__call__(ctx, render_mode))

    def __repr__(self) -> str:
        return f"PreparedGymEnvCreator({self.env_id!r})"


def prepared_creator(creator: EnvCreator, config: Any, component: str) -> EnvCreator:
    """``creator`` (or what a prepared creator was made from) preparing its envs as
    ``config`` asks (the evaluation workers' config may differ from the training one)."""
    base = (
        creator.base if isinstance(creator, PreparedEnvCreator | PreparedGymEnvCreator) else creator
    )
    preparation = EnvPreparation.of(config, component)
    if isinstance(base, GymEnvCreator):
        return PreparedGymEnvCreator(base, preparation)
    return PreparedEnvCreator(base, preparation)
