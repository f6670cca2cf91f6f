"""``DDPGConfig``: deep deterministic policy gradient: a deterministic actor trained through a
learned Q-function, both followed by polyak-averaged target copies, exploring with noise added
to the actor's actions (Ornstein-Uhlenbeck by default). TD3 (``rlconf.algorithms.td3``) is this
config with the twin critics, delayed actor updates and target-policy smoothing switched on."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from pydantic import Field

from rlconf.algorithm_config import AlgorithmConfig
from rlconf.algorithms.actor_critic_fields import GradClipArgs
from rlconf.algorithms.off_policy_fields import OFF_POLICY_DEFAULTS, OffPolicyArgs, unused_lr_issues
from rlconf.errors import FieldIssue
from rlconf.exploration_types import ExplorationConfig
from rlconf.field_types import ListOf, NonNegFloat, PosFloat, PosInt
from rlconf.generated.ddpg_fluent import DDPGConfigFluent
from rlconf.model_config import Activation
from rlconf.replay_buffer_config import REPLAY_BUFFER_DEFAULTS, ReplayBufferConfig
from rlconf.section import Section
from rlconf.sections.training import TRAINING, TrainingArgs


class DDPGTrainingArgs(TrainingArgs, GradClipArgs, OffPolicyArgs, total=False):
    twin_q: Annotated[
        bool,
        Field(
            description="Two critics trained on the same target, which takes the smaller of "
            "their values (TD3's clipped double Q)."
        ),
    ]
    policy_delay: Annotated[
        PosInt,
        Field(description="Update the actor once every this many critic updates (TD3: 2)."),
    ]
    smooth_target_policy: Annotated[
        bool,
        Field(
            description="Add clipped Gaussian noise to the target actor's actions in the TD "
            "target (TD3's target-policy smoothing)."
        ),
    ]
    target_noise: Annotated[
        NonNegFloat,
        Field(description="Standard deviation of the target-policy smoothing noise."),
    ]
    target_noise_clip: Annotated[
        NonNegFloat, Field(description="The smoothing noise is clipped to [-this, this].")
    ]
    use_state_preprocessor: Annotated[
        bool,
        Field(
            description="Run observations through the catalog's model (``model``) before the "
            "actor's and the critics' hidden layers (e.g. a conv net for images); False: the "
            "flat observation goes straight into them."
        ),
    ]
    actor_hiddens: Annotated[
        ListOf[PosInt], Field(description="Sizes of the actor's hidden layers.")
    ]
    actor_hidden_activation: Annotated[
        Activation, Field(description="Activation of the actor's hidden layers.")
    ]
    critic_hiddens: Annotated[
        ListOf[PosInt], Field(description="Sizes of each critic's hidden layers.")
    ]
    critic_hidden_activation: Annotated[
        Activation, Field(description="Activation of the critics' hidden layers.")
    ]
    actor_lr: Annotated[PosFloat, Field(description="Learning rate of the actor.")]
    critic_lr: Annotated[PosFloat, Field(description="Learning rate of the critics.")]
    use_huber: Annotated[
        bool, Field(description="Huber loss on the TD error instead of the squared error.")
    ]
    huber_threshold: Annotated[
        PosFloat, Field(description="Where the Huber loss turns from quadratic to linear.")
    ]
    l2_reg: Annotated[
        NonNegFloat | None,
        Field(
            description="Weight of an L2 penalty on the actor's and the critics' weight "
            "matrices; None or 0: none."
        ),
    ]


#: DDPG's learning rate: its optimizers take theirs from ``actor_lr`` and ``critic_lr``;
#: ``lr`` other than this is refused at build.
DDPG_LR = 1e-3

#: DDPG's replay buffer: prioritized, 50k rows.
DDPG_REPLAY_BUFFER: ReplayBufferConfig = {
    **REPLAY_BUFFER_DEFAULTS,
    "type": "PrioritizedReplayBuffer",
    "capacity": 50000,
}

DDPG_TRAINING: Section = TRAINING.with_fields(
    DDPGTrainingArgs,
    {
        **OFF_POLICY_DEFAULTS,
        "twin_q": False,
        "policy_delay": 1,
        "smooth_target_policy": False,
        "target_noise": 0.2,
        "target_noise_clip": 0.5,
        "use_state_preprocessor": False,
        "actor_hiddens": [400, 300],
        "actor_hidden_activation": "relu",
        "critic_hiddens": [400, 300],
        "critic_hidden_activation": "relu",
        "n_step": 1,
        "critic_lr": 1e-3,
        "actor_lr": 1e-3,
        "tau": 0.002,
        "use_huber": False,
        "huber_threshold": 1.0,
        "l2_reg": 1e-6,
        "grad_clip": None,
        "target_network_update_freq": 0,
        "num_steps_sampled_before_learning_starts": 1500,
        "replay_buffer_config": DDPG_REPLAY_BUFFER,
    },
)

#: DDPG's exploration: Ornstein-Uhlenbeck noise after 1000 uniformly random steps, its scale
#: annealed from 1.0 to 0.02 over 10k steps.
DDPG_EXPLORATION_DEFAULTS: ExplorationConfig = {
    "type": "OrnsteinUhlenbeckNoise",
    "random_timesteps": 1000,
    "ou_base_scale": 0.1,
    "ou_theta": 0.15,
    "ou_sigma": 0.2,
    "initial_scale": 1.0,
    "final_scale": 0.02,
    "scale_timesteps": 10000,
}


class DDPGConfig(DDPGConfigFluent, AlgorithmConfig):
    """Config of DDPG: a deterministic actor and a Q-function learnt from replayed experience,
    for Box action spaces."""

    __slots__ = ()
    algo_name = "DDPG"
    _replays: ClassVar[bool] = True
    _own_learning_rates: ClassVar[bool] = True
    _sections: ClassVar[dict[str, Section]] = {
        **AlgorithmConfig._sections,
        "training": DDPG_TRAINING,
    }
    _algo_defaults: ClassVar[dict[str, Any]] = {
        "num_workers": 0,
        "rollout_fragment_length": 1,
        "train_batch_size": 256,
        "lr": DDPG_LR,
        "normalize_actions": True,
        "clip_actions": False,
        "min_sample_timesteps_per_reporting": 1000,
        "exploration_config": DDPG_EXPLORATION_DEFAULTS,
    }

    def _cross_field_issues(self) -> list[FieldIssue]:
        issues = super()._cross_field_issues()
        issues.extend(
            unused_lr_issues(self._plain("lr"), DDPG_LR, "DDPG/TD3", "actor_lr and critic_lr")
        )
        return issues
