"""``PGConfig``: vanilla policy gradient (REINFORCE)."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from rlconf.algorithm_config import AlgorithmConfig
from rlconf.algorithms.actor_critic_fields import LRScheduleArgs
from rlconf.field_types import (
    JsonDict,
    NonNegFloat,
    NonNegInt,
    PosFloat,
    PosInt,
    Schedule,
    UnitFloat,
)
from rlconf.fluent import SelfConfig, fluent
from rlconf.model_config import MODEL_DEFAULTS, ModelConfigDict
from rlconf.section import Section
from rlconf.sections.training import TRAINING, TrainingArgs


class PGTrainingArgs(TrainingArgs, LRScheduleArgs, total=False):
    """PG's training fields: the common ones and an lr schedule."""


PG_TRAINING: Section = TRAINING.with_fields(PGTrainingArgs, {"lr_schedule": None})


class PGConfig(AlgorithmConfig):
    """Config of PG: REINFORCE with discounted returns."""

    __slots__ = ()
    algo_name = "PG"
    _sections: ClassVar[dict[str, Section]] = {**AlgorithmConfig._sections, "training": PG_TRAINING}
    _algo_defaults: ClassVar[dict[str, Any]] = {"num_workers": 0, "lr": 0.0004}

    # <fluent methods: generated from the sections by python -m rlconf.fluent_codegen>
    @fluent
    def rollouts(
        self: SelfConfig,
        /,
        *,
        num_workers: NonNegInt = 0,
        num_envs_per_worker: PosInt = 1,
        create_env_on_driver: bool = False,
        rollout_fragment_length: PosInt | Literal["auto"] = 200,
        batch_mode: Literal["truncate_episodes", "complete_episodes"] = "truncate_episodes",
        horizon: PosInt | None = None,
        soft_horizon: bool = False,
        no_done_at_end: bool = False,
        remote_worker_envs: bool = False,
        remote_env_batch_wait_ms: NonNegFloat = 0.0,
        preprocessor_pref: Literal["deepmind", "rllib"] | None = "deepmind",
        observation_filter: Literal["NoFilter", "MeanStdFilter"] = "NoFilter",
        synchronize_filters: bool = True,
        compress_observations: bool = False,
        sample_async: bool = False,
        _disable_preprocessor_api: bool = False,
        _disable_action_flattening: bool = False,
    ) -> SelfConfig:
        """Sets the rollout workers and how they sample experience.

        Args:
            num_workers: Remote rollout worker actors; 0 samples in the driver. Default: 0.
            num_envs_per_worker: Sub-envs per worker, stepped with one batched forward pass.
                Default: 1.
            create_env_on_driver: Also create an env on the driver when num_workers > 0. Default:
                False.
            rollout_fragment_length: Steps per sub-env in each sample() fragment; 'auto':
                ceil(train_batch_size / max(1, num_workers) / num_envs_per_worker). Default: 200.
            batch_mode: Cut fragments at rollout_fragment_length or at episode ends. Default:
                "truncate_episodes".
            horizon: Force an episode end after this many steps. Default: None.
            soft_horizon: At the horizon, end the episode without resetting the env. Default: False.
            no_done_at_end: Do not mark the last step of an episode as done. Default: False.
            remote_worker_envs: Run each sub-env in its own actor process; not available, True is
                refused at build. Default: False.
            remote_env_batch_wait_ms: How long to wait for remote sub-envs when polling; only
                matters with remote_worker_envs, so any value but 0 is refused at build. Default:
                0.0.
            preprocessor_pref: Observations always go through rlconf's preprocessor (flattened,
                one-hot; images stay images for conv models), which is what 'deepmind' gives for
                non-Atari envs; the DeepMind Atari wrappers are not applied (wrap Atari envs in the
                env creator). 'rllib' and None are refused at build. Default: "deepmind".
            observation_filter: Element-wise observation filter. Default: "NoFilter".
            synchronize_filters: After each iteration send the driver's filter statistics (merged
                from all workers) back to the remote workers; False: each remote worker keeps
                normalising with its own statistics. Default: True.
            compress_observations: LZ4-compress observations in sample batches; not available, True
                is refused at build (output_compress_columns compresses output files). Default:
                False.
            sample_async: Sample in a background thread (slightly off-policy); not available, True
                is refused at build. Default: False.
            _disable_preprocessor_api: Hand raw observations to the model, without preprocessing;
                not available, True is refused at build. Default: False.
            _disable_action_flattening: Keep nested actions as they are; the runtime's action spaces
                are flat (Box, Discrete, MultiDiscrete), True is refused at build. Default: False.
        """
        return self._set("rollouts", locals())

    @fluent
    def training(
        self: SelfConfig,
        /,
        *,
        gamma: UnitFloat = 0.99,
        lr: PosFloat = 0.0004,
        train_batch_size: PosInt = 200,
        model: ModelConfigDict = MODEL_DEFAULTS,
        optimizer: JsonDict = {},  # noqa: B006
        lr_schedule: Schedule | None = None,
    ) -> SelfConfig:
        """Sets the learner's hyperparameters.

        Args:
            gamma: Discount factor of the MDP. Default: 0.99.
            lr: Learning rate. Default: 0.0004.
            train_batch_size: Steps per training batch, concatenated from fragments. Default: 200.
            model: Model catalog options; updates the current ones. Default: MODEL_DEFAULTS.
            optimizer: Extra arguments for the optimizer. Default: {}.
            lr_schedule: Piecewise-linear lr over timesteps: [[t, lr], ...]; overrides lr. Default:
                None.
        """
        return self._set("training", locals())
    # </fluent methods>
