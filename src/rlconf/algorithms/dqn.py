"""``DQNConfig``: deep Q-learning with a replay buffer, target network, double Q, dueling heads
and n-step returns."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field

from rlconf.algorithm_config import AlgorithmConfig
from rlconf.algorithms.actor_critic_fields import GradClipArgs, LRScheduleArgs
from rlconf.exploration_types import ExplorationConfig
from rlconf.field_types import (
    JsonDict,
    ListOf,
    NonNegFloat,
    NonNegInt,
    PosFloat,
    PosInt,
    Schedule,
    UnitFloat,
)
from rlconf.fluent import SelfConfig, fluent
from rlconf.model_config import MODEL_DEFAULTS, ModelConfigDict
from rlconf.replay_buffer_config import REPLAY_BUFFER_DEFAULTS, ReplayBufferConfig
from rlconf.section import Section
from rlconf.sections.training import TRAINING, TrainingArgs


class DQNTrainingArgs(TrainingArgs, LRScheduleArgs, GradClipArgs, total=False):
    hiddens: Annotated[
        ListOf[PosInt],
        Field(description="Sizes of the Q head's hidden layers (after the model's layers)."),
    ]
    dueling: Annotated[
        bool, Field(description="Separate state-value and advantage streams (dueling DQN).")
    ]
    double_q: Annotated[
        bool,
        Field(
            description="Pick the next action with the online network, value it with the "
            "target network (double DQN)."
        ),
    ]
    n_step: Annotated[PosInt, Field(description="Steps of rewards in each TD target.")]
    target_network_update_freq: Annotated[
        PosInt, Field(description="Update the target network every this many env steps.")
    ]
    tau: Annotated[
        UnitFloat, Field(description="Target update weight: 1.0 copies, below averages.")
    ]
    td_error_loss_fn: Annotated[Literal["huber", "mse"], Field(description="Loss on the TD error.")]
    num_steps_sampled_before_learning_starts: Annotated[
        NonNegInt, Field(description="Env steps to sample before the first update.")
    ]
    training_intensity: Annotated[
        PosFloat | None,
        Field(description="Replayed / sampled steps; None: one train batch per sampled round."),
    ]
    replay_buffer_config: Annotated[
        ReplayBufferConfig,
        Field(
            description="The replay buffer: type, capacity, priority settings (updates the "
            "current ones)."
        ),
    ]
    store_buffer_in_checkpoints: Annotated[
        bool, Field(description="Save the replay buffer (as arrays) in checkpoints.")
    ]


DQN_TRAINING: Section = TRAINING.with_fields(
    DQNTrainingArgs,
    {
        "hiddens": [256],
        "dueling": True,
        "double_q": True,
        "n_step": 1,
        "target_network_update_freq": 500,
        "tau": 1.0,
        "td_error_loss_fn": "huber",
        "num_steps_sampled_before_learning_starts": 1000,
        "training_intensity": None,
        "replay_buffer_config": REPLAY_BUFFER_DEFAULTS,
        "store_buffer_in_checkpoints": False,
        "lr_schedule": None,
        "grad_clip": 40.0,
    },
)


#: DQN's exploration: epsilon from 1.0 down to 0.02 over the first 10k steps.
DQN_EXPLORATION_DEFAULTS: ExplorationConfig = {
    "type": "EpsilonGreedy",
    "initial_epsilon": 1.0,
    "final_epsilon": 0.02,
    "epsilon_timesteps": 10000,
}


class DQNConfig(AlgorithmConfig):
    """Config of DQN: Q-learning from replayed experience, for Discrete action spaces."""

    __slots__ = ()
    algo_name = "DQN"
    _replays: ClassVar[bool] = True
    _sections: ClassVar[dict[str, Section]] = {
        **AlgorithmConfig._sections,
        "training": DQN_TRAINING,
    }
    _algo_defaults: ClassVar[dict[str, Any]] = {
        "num_workers": 0,
        "rollout_fragment_length": 4,
        "train_batch_size": 32,
        "lr": 5e-4,
        # A training step samples 4 steps: results are reported every 1000 steps instead.
        "min_sample_timesteps_per_reporting": 1000,
        "exploration_config": DQN_EXPLORATION_DEFAULTS,
    }

    # <fluent methods: generated from the sections by python -m rlconf.fluent_codegen>
    @fluent
    def rollouts(
        self: SelfConfig,
        /,
        *,
        num_workers: NonNegInt = 0,
        num_envs_per_worker: PosInt = 1,
        create_env_on_driver: bool = False,
        rollout_fragment_length: PosInt | Literal["auto"] = 4,
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
                ceil(train_batch_size / max(1, num_workers) / num_envs_per_worker). Default: 4.
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
        lr: PosFloat = 0.0005,
        train_batch_size: PosInt = 32,
        model: ModelConfigDict = MODEL_DEFAULTS,
        optimizer: JsonDict = {},  # noqa: B006
        lr_schedule: Schedule | None = None,
        grad_clip: PosFloat | None = 40.0,
        hiddens: ListOf[PosInt] = [256],  # noqa: B006
        dueling: bool = True,
        double_q: bool = True,
        n_step: PosInt = 1,
        target_network_update_freq: PosInt = 500,
        tau: UnitFloat = 1.0,
        td_error_loss_fn: Literal["huber", "mse"] = "huber",
        num_steps_sampled_before_learning_starts: NonNegInt = 1000,
        training_intensity: PosFloat | None = None,
        replay_buffer_config: ReplayBufferConfig = REPLAY_BUFFER_DEFAULTS,
        store_buffer_in_checkpoints: bool = False,
    ) -> SelfConfig:
        """Sets the learner's hyperparameters.

        Args:
            gamma: Discount factor of the MDP. Default: 0.99.
            lr: Learning rate. Default: 0.0005.
            train_batch_size: Steps per training batch, concatenated from fragments. Default: 32.
            model: Model catalog options; updates the current ones. Default: MODEL_DEFAULTS.
            optimizer: Extra arguments for the optimizer. Default: {}.
            lr_schedule: Piecewise-linear lr over timesteps: [[t, lr], ...]; overrides lr. Default:
                None.
            grad_clip: Clip the global gradient norm to this; None: off. Default: 40.0.
            hiddens: Sizes of the Q head's hidden layers (after the model's layers). Default: [256].
            dueling: Separate state-value and advantage streams (dueling DQN). Default: True.
            double_q: Pick the next action with the online network, value it with the target network
                (double DQN). Default: True.
            n_step: Steps of rewards in each TD target. Default: 1.
            target_network_update_freq: Update the target network every this many env steps.
                Default: 500.
            tau: Target update weight: 1.0 copies, below averages. Default: 1.0.
            td_error_loss_fn: Loss on the TD error. Default: "huber".
            num_steps_sampled_before_learning_starts: Env steps to sample before the first update.
                Default: 1000.
            training_intensity: Replayed / sampled steps; None: one train batch per sampled round.
                Default: None.
            replay_buffer_config: The replay buffer: type, capacity, priority settings (updates the
                current ones). Default: REPLAY_BUFFER_DEFAULTS.
            store_buffer_in_checkpoints: Save the replay buffer (as arrays) in checkpoints. Default:
                False.
        """
        return self._set("training", locals())

    @fluent
    def exploration(
        self: SelfConfig,
        /,
        *,
        explore: bool = True,
        exploration_config: ExplorationConfig = DQN_EXPLORATION_DEFAULTS,
    ) -> SelfConfig:
        """Sets the exploration behaviour.

        Args:
            explore: Default of compute_action(s)' explore switch. Default: True.
            exploration_config: {'type': built-in name, import path or class, **constructor args}.
                Default: DQN_EXPLORATION_DEFAULTS.
        """
        return self._set("exploration", locals())

    @fluent
    def reporting(
        self: SelfConfig,
        /,
        *,
        metrics_episode_collection_timeout_s: NonNegFloat = 180.0,
        metrics_num_episodes_for_smoothing: PosInt = 100,
        min_time_s_per_reporting: NonNegFloat | None = None,
        min_train_timesteps_per_reporting: NonNegInt | None = None,
        min_sample_timesteps_per_reporting: NonNegInt | None = 1000,
    ) -> SelfConfig:
        """Sets how metrics are smoothed and how much work one train() call does.

        Args:
            metrics_episode_collection_timeout_s: Wait at most this long for workers' episode
                metrics. No effect in rlconf: episode metrics come back with each sample() call,
                never waited for. Default: 180.0.
            metrics_num_episodes_for_smoothing: Episode metrics are averaged over this many
                episodes. Default: 100.
            min_time_s_per_reporting: Repeat training steps until this many seconds. Default: None.
            min_train_timesteps_per_reporting: Repeat training steps until this many trained steps.
                Default: None.
            min_sample_timesteps_per_reporting: Repeat training steps until this many sampled steps.
                Default: 1000.
        """
        return self._set("reporting", locals())
    # </fluent methods>
