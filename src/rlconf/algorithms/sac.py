"""``SACConfig``: Soft Actor-Critic: a stochastic actor, twin Q-networks with polyak-averaged
targets and an entropy bonus whose weight (alpha) is tuned towards a target entropy."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field
from typing_extensions import TypedDict

from rlconf.algorithm_config import AlgorithmConfig
from rlconf.algorithms.actor_critic_fields import GradClipArgs
from rlconf.algorithms.off_policy_fields import OFF_POLICY_DEFAULTS, OffPolicyArgs, unused_lr_issues
from rlconf.errors import FieldIssue
from rlconf.field_types import PosFloat
from rlconf.fluent import NOT_SET
from rlconf.generated.sac_fluent import SACConfigFluent
from rlconf.inert_keys import InertKey
from rlconf.model_config import ModelConfigDict
from rlconf.replay_buffer_config import REPLAY_BUFFER_DEFAULTS, ReplayBufferConfig
from rlconf.section import Section
from rlconf.sections.training import TRAINING, TrainingArgs


class SACOptimization(TypedDict, total=False):
    """The learning rates of SAC's three optimizers (a partial dict keeps the others)."""

    actor_learning_rate: Annotated[PosFloat, Field(description="Learning rate of the policy.")]
    critic_learning_rate: Annotated[PosFloat, Field(description="Learning rate of the Q-networks.")]
    entropy_learning_rate: Annotated[
        PosFloat, Field(description="Learning rate of log(alpha), the entropy coefficient.")
    ]


#: SAC's network defaults (the reference's): two hidden layers of 256 with relu.
SAC_MODEL_DEFAULTS: ModelConfigDict = {"fcnet_hiddens": [256, 256], "fcnet_activation": "relu"}

#: SAC's learning rate: its optimizers take theirs from ``optimization``; ``lr`` other than this
#: is refused at build.
SAC_LR = 3e-4

#: SAC's replay buffer: uniform, a million rows.
SAC_REPLAY_BUFFER: ReplayBufferConfig = {**REPLAY_BUFFER_DEFAULTS, "capacity": 1_000_000}

#: The reference's learning rates.
SAC_OPTIMIZATION: SACOptimization = {
    "actor_learning_rate": 3e-4,
    "critic_learning_rate": 3e-4,
    "entropy_learning_rate": 3e-4,
}


class SACTrainingArgs(TrainingArgs, GradClipArgs, OffPolicyArgs, total=False):
    twin_q: Annotated[
        bool,
        Field(
            description="Two Q-networks, each trained on the same target; the smaller of their "
            "values is used (clipped double Q)."
        ),
    ]
    q_model_config: Annotated[
        ModelConfigDict,
        Field(
            description="The Q-networks' model: ``model`` updated by these keys (updates the "
            "current ones). A Q-network takes the observation and, for Box actions, the action."
        ),
    ]
    policy_model_config: Annotated[
        ModelConfigDict,
        Field(
            description="The policy network's model: ``model`` updated by these keys (updates "
            "the current ones)."
        ),
    ]
    initial_alpha: Annotated[
        PosFloat, Field(description="The entropy coefficient alpha to start from.")
    ]
    target_entropy: Annotated[
        Literal["auto"] | float,
        Field(
            description="The entropy alpha is tuned towards; 'auto': -dim(actions) for Box "
            "actions, 0.98 * log(n) for Discrete(n)."
        ),
    ]
    optimization: Annotated[
        SACOptimization,
        Field(description="Learning rates of the actor, critic and entropy optimizers."),
    ]
    td_error_loss_fn: Annotated[
        Literal["huber", "mse"],
        Field(
            description="The critics' loss on the TD error: 'huber' (the reference's, delta 1) "
            "or 'mse' (half the squared error, as Stable-Baselines3 and CleanRL)."
        ),
    ]
    actor_lr: Annotated[
        PosFloat | None,
        Field(
            description="RLlib's new API stack learning rate of the policy; None: "
            "optimization's actor_learning_rate."
        ),
    ]
    critic_lr: Annotated[
        PosFloat | None,
        Field(
            description="RLlib's new API stack learning rate of the Q-networks; None: "
            "optimization's critic_learning_rate."
        ),
    ]
    alpha_lr: Annotated[
        PosFloat | None,
        Field(
            description="RLlib's new API stack learning rate of log(alpha); None: "
            "optimization's entropy_learning_rate."
        ),
    ]
    _deterministic_loss: Annotated[
        bool,
        Field(
            description="Compute the losses with the policy's deterministic actions instead "
            "of sampled ones (for debugging)."
        ),
    ]
    # The reference's switch to a Beta policy over bounded actions, at its default.
    _use_beta_distribution: Annotated[
        bool,
        InertKey(
            (False,),
            "SAC's policy over a Box is a squashed Gaussian here (normalize_actions maps it "
            "onto the bounds); the Beta distribution is not implemented",
        ),
    ]


SAC_TRAINING: Section = TRAINING.with_fields(
    SACTrainingArgs,
    {
        **OFF_POLICY_DEFAULTS,
        "twin_q": True,
        "q_model_config": SAC_MODEL_DEFAULTS,
        "policy_model_config": SAC_MODEL_DEFAULTS,
        "tau": 5e-3,
        "initial_alpha": 1.0,
        "target_entropy": "auto",
        "n_step": 1,
        "replay_buffer_config": SAC_REPLAY_BUFFER,
        "optimization": SAC_OPTIMIZATION,
        "grad_clip": None,
        "target_network_update_freq": 0,
        "num_steps_sampled_before_learning_starts": 1500,
        "td_error_loss_fn": "huber",
        "actor_lr": None,
        "critic_lr": None,
        "alpha_lr": None,
        "_deterministic_loss": False,
        "_use_beta_distribution": False,
    },
)


class SACConfig(SACConfigFluent, AlgorithmConfig):
    """Config of SAC: soft actor-critic from replayed experience, for Box (squashed Gaussian
    policy) and Discrete (categorical policy) action spaces."""

    __slots__ = ()
    algo_name = "SAC"
    _replays: ClassVar[bool] = True
    _own_learning_rates: ClassVar[bool] = True
    _auto_fragment_is_n_step: ClassVar[bool] = True
    _sections: ClassVar[dict[str, Section]] = {
        **AlgorithmConfig._sections,
        "training": SAC_TRAINING,
    }
    _algo_defaults: ClassVar[dict[str, Any]] = {
        "num_workers": 0,
        # n_step steps per sub-env (1 by default, the reference's), so that an n-step sum fits
        # a fragment.
        "rollout_fragment_length": "auto",
        "train_batch_size": 256,
        "lr": SAC_LR,
        "normalize_actions": True,
        "clip_actions": False,
        "min_sample_timesteps_per_reporting": 100,
    }

    def _cross_field_issues(self) -> list[FieldIssue]:
        issues = super()._cross_field_issues()
        issues.extend(
            unused_lr_issues(
                self._plain("lr"),
                SAC_LR,
                "SAC",
                "optimization's actor_learning_rate, critic_learning_rate and "
                "entropy_learning_rate, or actor_lr, critic_lr and alpha_lr",
            )
        )
        issues.extend(learning_rate_twin_issues(self._plain))
        return issues


#: RLlib's new API stack learning rates -> the key of ``optimization`` each stands for.
LEARNING_RATE_TWINS: dict[str, str] = {
    "actor_lr": "actor_learning_rate",
    "critic_lr": "critic_learning_rate",
    "alpha_lr": "entropy_learning_rate",
}


def learning_rate_twin_issues(value: Callable[[str], Any]) -> list[FieldIssue]:
    """``actor_lr`` and ``optimization["actor_learning_rate"]`` set one learning rate: the new
    stack's name wins over the reference's default, and both changed to different values are
    refused (the same for the critic's and alpha's)."""
    optimization = value("optimization")
    if not isinstance(optimization, dict):
        return []
    issues: list[FieldIssue] = []
    for name, key in LEARNING_RATE_TWINS.items():
        rate, twin = value(name), optimization.get(key)
        default = SAC_OPTIMIZATION[key]  # type: ignore[literal-required]
        if rate in (None, NOT_SET) or twin in (None, default, rate):
            continue
        issues.append(
            FieldIssue(
                name,
                f"and optimization's {key}={twin!r} both set one learning rate; set one of them",
                rate,
            )
        )
    return issues


def sac_learning_rates(
    optimization: Mapping[str, float], given: Mapping[str, float | None]
) -> dict[str, float]:
    """The learning rates of SAC's optimizers by ``optimization`` key: ``actor_lr``,
    ``critic_lr`` and ``alpha_lr`` (in ``given``) where set, else ``optimization``'s."""
    rates = {key: float(optimization[key]) for key in LEARNING_RATE_TWINS.values()}
    for name, key in LEARNING_RATE_TWINS.items():
        rate = given.get(name)
        if rate is not None:
            rates[key] = float(rate)
    return rates
