"""``DQNConfig``: deep Q-learning with a replay buffer, target network, double Q, dueling heads
and n-step returns."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal, Self

from pydantic import Field
from typing_extensions import Unpack

from rlconf.algorithm_config import AlgorithmConfig
from rlconf.algorithms.actor_critic_fields import GradClipArgs, LRScheduleArgs
from rlconf.field_types import ListOf, NonNegInt, PosFloat, PosInt, UnitFloat
from rlconf.fluent import fluent
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
        "exploration_config": {
            "type": "EpsilonGreedy",
            "initial_epsilon": 1.0,
            "final_epsilon": 0.02,
            "epsilon_timesteps": 10000,
        },
    }

    @fluent
    def training(self, /, **kwargs: Unpack[DQNTrainingArgs]) -> Self:
        return self._set("training", dict(kwargs))
