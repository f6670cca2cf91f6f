"""``PPOConfig``: proximal policy optimisation."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from pydantic import Field

from rlconf.algorithm_config import AlgorithmConfig
from rlconf.algorithms.actor_critic_fields import (
    ActorCriticArgs,
    GradClipArgs,
    LRScheduleArgs,
    critic_issues,
)
from rlconf.errors import FieldIssue
from rlconf.field_types import JsonDict, NonNegFloat, PosFloat, PosInt, Schedule, UnitFloat
from rlconf.fluent import NOT_SET, SelfConfig, fluent
from rlconf.model_config import MODEL_DEFAULTS, ModelConfigDict
from rlconf.section import Section
from rlconf.sections.training import TRAINING, TrainingArgs


class PPOTrainingArgs(TrainingArgs, ActorCriticArgs, LRScheduleArgs, GradClipArgs, total=False):
    kl_coeff: Annotated[NonNegFloat, Field(description="Initial weight of the KL penalty.")]
    kl_target: Annotated[PosFloat, Field(description="KL divergence the penalty adapts to.")]
    sgd_minibatch_size: Annotated[PosInt, Field(description="Minibatch size of each SGD step.")]
    num_sgd_iter: Annotated[PosInt, Field(description="SGD epochs over each train batch.")]
    shuffle_sequences: Annotated[
        bool,
        Field(
            description="Shuffle the train batch before each SGD epoch; False takes the "
            "minibatches in sampling order."
        ),
    ]
    clip_param: Annotated[PosFloat, Field(description="PPO's surrogate clipping range.")]
    vf_clip_param: Annotated[
        PosFloat, Field(description="Clip value-function updates to this range.")
    ]


#: PPO's model: the policy and the value function in separate networks.
PPO_MODEL_DEFAULTS: ModelConfigDict = {**MODEL_DEFAULTS, "vf_share_layers": False}

PPO_TRAINING: Section = TRAINING.with_fields(
    PPOTrainingArgs,
    {
        "use_critic": True,
        "use_gae": True,
        "lambda_": 1.0,
        "kl_coeff": 0.2,
        "kl_target": 0.01,
        "sgd_minibatch_size": 128,
        "num_sgd_iter": 30,
        "shuffle_sequences": True,
        "vf_loss_coeff": 1.0,
        "entropy_coeff": 0.0,
        "entropy_coeff_schedule": None,
        "clip_param": 0.3,
        "vf_clip_param": 10.0,
        "lr_schedule": None,
        "grad_clip": None,
    },
)


class PPOConfig(AlgorithmConfig):
    """Config of PPO: clipped surrogate objective, GAE, adaptive KL penalty, minibatch SGD."""

    __slots__ = ()
    algo_name = "PPO"
    _sections: ClassVar[dict[str, Section]] = {
        **AlgorithmConfig._sections,
        "training": PPO_TRAINING,
    }
    _algo_defaults: ClassVar[dict[str, Any]] = {
        "lr": 5e-5,
        "train_batch_size": 4000,
        "rollout_fragment_length": 200,
        "model": PPO_MODEL_DEFAULTS,
    }

    # <fluent methods: generated from the sections by python -m rlconf.fluent_codegen>
    @fluent
    def training(
        self: SelfConfig,
        /,
        *,
        gamma: UnitFloat = 0.99,
        lr: PosFloat = 5e-05,
        train_batch_size: PosInt = 4000,
        model: ModelConfigDict = PPO_MODEL_DEFAULTS,
        optimizer: JsonDict = {},  # noqa: B006
        use_critic: bool = True,
        use_gae: bool = True,
        lambda_: UnitFloat = 1.0,
        vf_loss_coeff: NonNegFloat = 1.0,
        entropy_coeff: NonNegFloat = 0.0,
        entropy_coeff_schedule: Schedule | None = None,
        lr_schedule: Schedule | None = None,
        grad_clip: PosFloat | None = None,
        kl_coeff: NonNegFloat = 0.2,
        kl_target: PosFloat = 0.01,
        sgd_minibatch_size: PosInt = 128,
        num_sgd_iter: PosInt = 30,
        shuffle_sequences: bool = True,
        clip_param: PosFloat = 0.3,
        vf_clip_param: PosFloat = 10.0,
    ) -> SelfConfig:
        """Sets the learner's hyperparameters.

        Args:
            gamma: Discount factor of the MDP. Default: 0.99.
            lr: Learning rate. Default: 5e-05.
            train_batch_size: Steps per training batch, concatenated from fragments. Default: 4000.
            model: Model catalog options; updates the current ones. Default: PPO_MODEL_DEFAULTS.
            optimizer: Extra arguments for the optimizer. Default: {}.
            use_critic: Learn a value function as a baseline for advantages. Default: True.
            use_gae: Use generalised advantage estimation (needs the critic). Default: True.
            lambda_: GAE lambda. Default: 1.0.
            vf_loss_coeff: Weight of the value loss. Default: 1.0.
            entropy_coeff: Weight of the entropy bonus. Default: 0.0.
            entropy_coeff_schedule: Piecewise-linear entropy_coeff over timesteps: [[t, coeff],
                ...]. Default: None.
            lr_schedule: Piecewise-linear lr over timesteps: [[t, lr], ...]; overrides lr. Default:
                None.
            grad_clip: Clip the global gradient norm to this; None: off. Default: None.
            kl_coeff: Initial weight of the KL penalty. Default: 0.2.
            kl_target: KL divergence the penalty adapts to. Default: 0.01.
            sgd_minibatch_size: Minibatch size of each SGD step. Default: 128.
            num_sgd_iter: SGD epochs over each train batch. Default: 30.
            shuffle_sequences: Shuffle the train batch before each SGD epoch; False takes the
                minibatches in sampling order. Default: True.
            clip_param: PPO's surrogate clipping range. Default: 0.3.
            vf_clip_param: Clip value-function updates to this range. Default: 10.0.
        """
        return self._set("training", locals())
    # </fluent methods>

    def _cross_field_issues(self) -> list[FieldIssue]:
        issues = super()._cross_field_issues()
        v = self._plain
        minibatch, train = v("sgd_minibatch_size"), v("train_batch_size")
        if NOT_SET not in (minibatch, train) and minibatch > train:
            issues.append(
                FieldIssue(
                    "sgd_minibatch_size",
                    f"must be <= train_batch_size ({train})",
                    minibatch,
                )
            )
        if v("batch_mode") == "truncate_episodes" and v("use_gae") is False:
            issues.append(
                FieldIssue(
                    "use_gae",
                    "False needs batch_mode='complete_episodes': without a value "
                    "function the return after a truncated fragment can't be estimated",
                    False,
                )
            )
        issues.extend(critic_issues(v))
        return issues
