"""``A2CConfig``: synchronous advantage actor-critic."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field

from rlconf.algorithm_config import AlgorithmConfig
from rlconf.algorithms.actor_critic_fields import (
    ActorCriticArgs,
    GradClipArgs,
    LRScheduleArgs,
    critic_issues,
)
from rlconf.errors import FieldIssue
from rlconf.field_types import (
    JsonDict,
    NonNegFloat,
    NonNegInt,
    PosFloat,
    PosInt,
    Schedule,
    UnitFloat,
)
from rlconf.fluent import NOT_SET, SelfConfig, fluent
from rlconf.model_config import MODEL_DEFAULTS, ModelConfigDict
from rlconf.section import Section
from rlconf.sections.training import TRAINING, TrainingArgs


class A2CTrainingArgs(TrainingArgs, ActorCriticArgs, LRScheduleArgs, GradClipArgs, total=False):
    microbatch_size: Annotated[
        PosInt | None,
        Field(
            description="Accumulate gradients over microbatches of this size, one optimizer "
            "step per train batch; None: one pass over the whole batch."
        ),
    ]


A2C_TRAINING: Section = TRAINING.with_fields(
    A2CTrainingArgs,
    {
        "use_critic": True,
        "use_gae": True,
        "lambda_": 1.0,
        "vf_loss_coeff": 0.5,
        "entropy_coeff": 0.01,
        "entropy_coeff_schedule": None,
        "lr_schedule": None,
        "grad_clip": 40.0,
        "microbatch_size": None,
    },
)


class A2CConfig(AlgorithmConfig):
    """Config of A2C: synchronous advantage actor-critic on batches from all workers."""

    __slots__ = ()
    algo_name = "A2C"
    _sections: ClassVar[dict[str, Section]] = {
        **AlgorithmConfig._sections,
        "training": A2C_TRAINING,
    }
    _algo_defaults: ClassVar[dict[str, Any]] = {
        "rollout_fragment_length": 20,
        "train_batch_size": 200,
        "min_time_s_per_reporting": 10.0,
        "sample_async": False,
    }

    # <fluent methods: generated from the sections by python -m rlconf.fluent_codegen>
    @fluent
    def rollouts(
        self: SelfConfig,
        /,
        *,
        num_workers: NonNegInt = 2,
        num_envs_per_worker: PosInt = 1,
        create_env_on_driver: bool = False,
        rollout_fragment_length: PosInt | Literal["auto"] = 20,
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
            num_workers: Remote rollout worker actors; 0 samples in the driver. Default: 2.
            num_envs_per_worker: Sub-envs per worker, stepped with one batched forward pass.
                Default: 1.
            create_env_on_driver: Also create an env on the driver when num_workers > 0. Default:
                False.
            rollout_fragment_length: Steps per sub-env in each sample() fragment; 'auto':
                ceil(train_batch_size / max(1, num_workers) / num_envs_per_worker). Default: 20.
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
        lr: PosFloat = 0.0001,
        train_batch_size: PosInt = 200,
        model: ModelConfigDict = MODEL_DEFAULTS,
        optimizer: JsonDict = {},  # noqa: B006
        use_critic: bool = True,
        use_gae: bool = True,
        lambda_: UnitFloat = 1.0,
        vf_loss_coeff: NonNegFloat = 0.5,
        entropy_coeff: NonNegFloat = 0.01,
        entropy_coeff_schedule: Schedule | None = None,
        lr_schedule: Schedule | None = None,
        grad_clip: PosFloat | None = 40.0,
        microbatch_size: PosInt | None = None,
    ) -> SelfConfig:
        """Sets the learner's hyperparameters.

        Args:
            gamma: Discount factor of the MDP. Default: 0.99.
            lr: Learning rate. Default: 0.0001.
            train_batch_size: Steps per training batch, concatenated from fragments. Default: 200.
            model: Model catalog options; updates the current ones. Default: MODEL_DEFAULTS.
            optimizer: Extra arguments for the optimizer. Default: {}.
            use_critic: Learn a value function as a baseline for advantages. Default: True.
            use_gae: Use generalised advantage estimation (needs the critic). Default: True.
            lambda_: GAE lambda. Default: 1.0.
            vf_loss_coeff: Weight of the value loss. Default: 0.5.
            entropy_coeff: Weight of the entropy bonus. Default: 0.01.
            entropy_coeff_schedule: Piecewise-linear entropy_coeff over timesteps: [[t, coeff],
                ...]. Default: None.
            lr_schedule: Piecewise-linear lr over timesteps: [[t, lr], ...]; overrides lr. Default:
                None.
            grad_clip: Clip the global gradient norm to this; None: off. Default: 40.0.
            microbatch_size: Accumulate gradients over microbatches of this size, one optimizer step
                per train batch; None: one pass over the whole batch. Default: None.
        """
        return self._set("training", locals())

    @fluent
    def reporting(
        self: SelfConfig,
        /,
        *,
        metrics_episode_collection_timeout_s: NonNegFloat = 180.0,
        metrics_num_episodes_for_smoothing: PosInt = 100,
        min_time_s_per_reporting: NonNegFloat | None = 10.0,
        min_train_timesteps_per_reporting: NonNegInt | None = None,
        min_sample_timesteps_per_reporting: NonNegInt | None = None,
    ) -> SelfConfig:
        """Sets how metrics are smoothed and how much work one train() call does.

        Args:
            metrics_episode_collection_timeout_s: Wait at most this long for workers' episode
                metrics. No effect in rlconf: episode metrics come back with each sample() call,
                never waited for. Default: 180.0.
            metrics_num_episodes_for_smoothing: Episode metrics are averaged over this many
                episodes. Default: 100.
            min_time_s_per_reporting: Repeat training steps until this many seconds. Default: 10.0.
            min_train_timesteps_per_reporting: Repeat training steps until this many trained steps.
                Default: None.
            min_sample_timesteps_per_reporting: Repeat training steps until this many sampled steps.
                Default: None.
        """
        return self._set("reporting", locals())
    # </fluent methods>

    def _cross_field_issues(self) -> list[FieldIssue]:
        issues = super()._cross_field_issues()
        v = self._plain
        micro, train = v("microbatch_size"), v("train_batch_size")
        if micro not in (None, NOT_SET) and train is not NOT_SET and micro > train:
            issues.append(
                FieldIssue(
                    "microbatch_size",
                    f"must be <= train_batch_size ({train})",
                    micro,
                )
            )
        issues.extend(critic_issues(v))
        return issues
