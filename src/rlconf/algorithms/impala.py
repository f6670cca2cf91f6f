"""``IMPALAConfig``: importance weighted actor-learner architecture: rollout workers sample
asynchronously with the weights they last received, and the learner corrects for the lag
between their policy and its own with V-trace (clipped importance weights on the returns and
the policy gradient).

The keys and defaults are the reference's (RLlib 2.3-2.5 ``ImpalaConfig``): the V-trace clips,
``vtrace_drop_last_ts=True`` (the era's default; RLlib later deprecated the key and stopped
dropping the last step), the learner queue and minibatch buffer, the mixed-in replay
(``replay_proportion``, ``replay_buffer_num_slots``), aggregation workers, the Adam/RMSProp
optimizer choice, and ``rollout_fragment_length=50``, ``train_batch_size=500``, ``lr=5e-4``,
``min_time_s_per_iteration=10``. The reference's ``num_gpus=1`` is not taken: see
``IMPALAConfig._algo_defaults``. ``APPOConfig`` (``rlconf.algorithms.appo``) extends these keys.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field

from rlconf.algorithm_config import AlgorithmConfig
from rlconf.algorithms.actor_critic_fields import GradClipArgs, LossCoeffArgs, LRScheduleArgs
from rlconf.errors import FieldIssue
from rlconf.field_types import FunctionRef, NonNegFloat, NonNegInt, PosFloat, PosInt, UnitFloat
from rlconf.fluent import NOT_SET
from rlconf.generated.impala_fluent import IMPALAConfigFluent
from rlconf.section import Section
from rlconf.sections.training import TRAINING, TrainingArgs


class IMPALATrainingArgs(TrainingArgs, LossCoeffArgs, LRScheduleArgs, GradClipArgs, total=False):
    vtrace: Annotated[
        bool,
        Field(
            description="Correct the lag between the workers' policy and the learner's with "
            "V-trace; False: plain actor-critic advantages, uncorrected."
        ),
    ]
    vtrace_clip_rho_threshold: Annotated[
        PosFloat | None,
        Field(
            description="Clip the importance weights in V-trace's value targets to this "
            "(rho-bar); None: no clipping."
        ),
    ]
    vtrace_clip_pg_rho_threshold: Annotated[
        PosFloat | None,
        Field(
            description="Clip the importance weights of V-trace's policy-gradient advantages "
            "to this; None: no clipping."
        ),
    ]
    vtrace_drop_last_ts: Annotated[
        bool,
        Field(
            description="Leave each fragment's last step out of the V-trace loss (it only "
            "gives the bootstrap value), the reference's old behaviour; False trains on every "
            "step, bootstrapping from the value after the fragment."
        ),
    ]
    num_multi_gpu_tower_stacks: Annotated[
        PosInt,
        Field(
            description="Train batches loaded onto the GPU towers ahead of the one being "
            "trained on (each stack holds one batch per tower); the learner trains each batch "
            "as it comes on one device, so anything but 1 is refused at build."
        ),
    ]
    minibatch_buffer_size: Annotated[
        PosInt,
        Field(
            description="Train batches kept in the learner's ring buffer, each trained on "
            "num_sgd_iter times (only has an effect with num_sgd_iter > 1)."
        ),
    ]
    num_sgd_iter: Annotated[
        PosInt, Field(description="Times the learner trains on each train batch.")
    ]
    replay_proportion: Annotated[
        NonNegFloat,
        Field(
            description="Replayed fragments per new one: each sampled fragment is trained on "
            "with this many fragments from the replay slots; 0.0: no replay."
        ),
    ]
    replay_buffer_num_slots: Annotated[
        NonNegInt,
        Field(
            description="Sampled fragments kept for replay (replay_buffer_num_slots * "
            "rollout_fragment_length steps)."
        ),
    ]
    learner_queue_size: Annotated[
        PosInt,
        Field(
            description="Train batches that can wait for the learner; sampling pauses while "
            "the queue is full."
        ),
    ]
    learner_queue_timeout: Annotated[
        PosFloat,
        Field(
            description="Seconds the learner waits for a train batch before it fails (raise "
            "it for slow envs)."
        ),
    ]
    max_sample_requests_in_flight_per_worker: Annotated[
        PosInt,
        Field(
            description="Sample requests each rollout worker is sent ahead of the fragments "
            "it has returned."
        ),
    ]
    broadcast_interval: Annotated[
        PosInt,
        Field(
            description="Training steps between two sends of the learner's weights to the "
            "rollout workers that returned fragments."
        ),
    ]
    num_aggregation_workers: Annotated[
        NonNegInt,
        Field(
            description="Extra actors that gather the rollout workers' fragments into train "
            "batches (and their replay) for the learner; 0: the driver does it. At most "
            "num_workers. The driver always does it here: anything but 0 is refused at build."
        ),
    ]
    opt_type: Annotated[Literal["adam", "rmsprop"], Field(description="The learner's optimizer.")]
    decay: Annotated[
        UnitFloat, Field(description="RMSProp's decay of its squared-gradient average.")
    ]
    momentum: Annotated[NonNegFloat, Field(description="RMSProp's momentum.")]
    epsilon: Annotated[
        PosFloat, Field(description="RMSProp's epsilon, added to the gradient's scale.")
    ]
    _separate_vf_optimizer: Annotated[
        bool,
        Field(
            description="Train the value function with an optimizer of its own (Adam at "
            "_lr_vf) on the value loss alone, and the policy on the policy and entropy "
            "losses (opt_type='adam' only)."
        ),
    ]
    _lr_vf: Annotated[
        PosFloat,
        Field(
            description="Learning rate of the value function's optimizer (with "
            "_separate_vf_optimizer, which is refused at build: so is any other value than "
            "the default)."
        ),
    ]
    after_train_step: Annotated[
        FunctionRef | None,
        Field(
            description="fn(train_results) called after each training step with the "
            "learner's results; None: nothing is called."
        ),
    ]
    # RLlib's new API stack names of num_sgd_iter and minibatch_buffer_size
    # (rlconf.new_stack_names): keywords that set them, typed as them, not fields.
    num_epochs: PosInt
    circular_buffer_num_batches_N: PosInt
    circular_buffer_iterations_per_batch_K: PosInt


IMPALA_TRAINING: Section = TRAINING.with_fields(
    IMPALATrainingArgs,
    {
        "vtrace": True,
        "vtrace_clip_rho_threshold": 1.0,
        "vtrace_clip_pg_rho_threshold": 1.0,
        "vtrace_drop_last_ts": True,
        "num_multi_gpu_tower_stacks": 1,
        "minibatch_buffer_size": 1,
        "num_sgd_iter": 1,
        "replay_proportion": 0.0,
        "replay_buffer_num_slots": 0,
        "learner_queue_size": 16,
        "learner_queue_timeout": 300.0,
        "max_sample_requests_in_flight_per_worker": 2,
        "broadcast_interval": 1,
        "num_aggregation_workers": 0,
        "grad_clip": 40.0,
        "opt_type": "adam",
        "lr_schedule": None,
        "decay": 0.99,
        "momentum": 0.0,
        "epsilon": 0.1,
        "vf_loss_coeff": 0.5,
        "entropy_coeff": 0.01,
        "entropy_coeff_schedule": None,
        "_separate_vf_optimizer": False,
        "_lr_vf": 0.0005,
        "after_train_step": None,
    },
)


class IMPALAConfig(IMPALAConfigFluent, AlgorithmConfig):
    """Config of IMPALA: asynchronous sampling, a learner queue, and V-trace off-policy
    correction of the workers' lagging policies."""

    __slots__ = ()
    algo_name = "IMPALA"
    _sections: ClassVar[dict[str, Section]] = {
        **AlgorithmConfig._sections,
        "training": IMPALA_TRAINING,
    }
    _algo_defaults: ClassVar[dict[str, Any]] = {
        "rollout_fragment_length": 50,
        "train_batch_size": 500,
        "num_workers": 2,
        "lr": 0.0005,
        "min_time_s_per_reporting": 10.0,
        # The reference's IMPALA asks for num_gpus=1. rlconf assumes no GPU, so num_gpus stays
        # 0 (the learner trains on the CPU); with num_gpus set, the learner goes to the GPU.
    }

    def _cross_field_issues(self) -> list[FieldIssue]:
        issues = super()._cross_field_issues()
        v = self._plain
        aggregators, workers = v("num_aggregation_workers"), v("num_workers")
        if NOT_SET not in (aggregators, workers) and aggregators > workers:
            issues.append(
                FieldIssue(
                    "num_aggregation_workers",
                    f"must be <= num_workers ({workers}): each aggregation worker gathers "
                    "the fragments of one or more rollout workers",
                    aggregators,
                    allowed=f"0 to {workers}",
                )
            )
        if v("_separate_vf_optimizer") is True and v("opt_type") == "rmsprop":
            issues.append(
                FieldIssue(
                    "_separate_vf_optimizer",
                    "True needs opt_type='adam' (the value function's own optimizer is "
                    "Adam), but opt_type is 'rmsprop'",
                    True,
                    allowed="False with opt_type='rmsprop', or opt_type='adam'",
                )
            )
        return issues
