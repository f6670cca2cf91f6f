"""``PPOConfig``: proximal policy optimisation."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from pydantic import Field

from rlconf.algorithm_config import AlgorithmConfig
from rlconf.algorithms.actor_critic_fields import (
    ActorCriticArgs,
    GradClipArgs,
    KLPenaltyArgs,
    LRScheduleArgs,
    critic_issues,
)
from rlconf.errors import FieldIssue
from rlconf.field_types import PosFloat, PosInt
from rlconf.fluent import NOT_SET
from rlconf.generated.ppo_fluent import PPOConfigFluent
from rlconf.model_config import MODEL_DEFAULTS, ModelConfigDict
from rlconf.section import Section
from rlconf.sections.training import TRAINING, TrainingArgs


class PPOTrainingArgs(
    TrainingArgs, ActorCriticArgs, LRScheduleArgs, GradClipArgs, KLPenaltyArgs, total=False
):
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
    # RLlib's new API stack names of num_sgd_iter and sgd_minibatch_size
    # (rlconf.new_stack_names): keywords that set them, typed as them, not fields.
    num_epochs: PosInt
    minibatch_size: PosInt


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


class PPOConfig(PPOConfigFluent, AlgorithmConfig):
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
