"""``MARWILConfig``: monotonic advantage re-weighted imitation learning, mostly from offline
data (``offline_data(input_=...)``): the log-likelihood of the recorded actions weighted by
``exp(beta * advantage / c)``, where the advantage is the discounted return minus a learned
value and ``c`` a moving average of its scale; ``beta=0.0`` is behaviour cloning (``BCConfig``).

The keys and defaults are the reference's (RLlib 1.x-2.x): ``beta``, ``vf_coeff``,
``bc_logstd_coeff``, ``moving_average_sqd_adv_norm_update_rate``,
``moving_average_sqd_adv_norm_start``, ``grad_clip``; ``lr=1e-4``, ``train_batch_size=2000``,
``num_workers=0`` and ``postprocess_inputs=True`` (the returns are computed from the rows as
they are read). The reference's 1.x replay buffer keys (``replay_buffer_size``,
``learning_starts``) are not declared: its 2.x MARWIL trains on each batch as it is read, as
this one does.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from pydantic import Field

from rlconf.algorithm_config import AlgorithmConfig
from rlconf.algorithms.actor_critic_fields import GradClipArgs, LRScheduleArgs
from rlconf.field_types import NonNegFloat, PosFloat, UnitFloat
from rlconf.generated.marwil_fluent import MARWILConfigFluent
from rlconf.section import Section
from rlconf.sections.training import TRAINING, TrainingArgs


class MARWILTrainingArgs(TrainingArgs, LRScheduleArgs, GradClipArgs, total=False):
    beta: Annotated[
        UnitFloat,
        Field(
            description="Scale of the advantages in the exponential weights of the actions' "
            "log-likelihoods; 0.0: behaviour cloning (no value function is trained)."
        ),
    ]
    vf_coeff: Annotated[
        NonNegFloat,
        Field(description="Weight of the value loss against the policy loss (beta > 0 only)."),
    ]
    bc_logstd_coeff: Annotated[
        NonNegFloat,
        Field(
            description="Weight of a bonus on the Gaussian policy's mean log-std, against the "
            "low entropy pure imitation drives a policy to (Box action spaces only)."
        ),
    ]
    moving_average_sqd_adv_norm_update_rate: Annotated[
        UnitFloat,
        Field(
            description="Rate of the moving average of the squared advantages (c^2) the "
            "advantages are divided by."
        ),
    ]
    moving_average_sqd_adv_norm_start: Annotated[
        PosFloat,
        Field(description="Start value of the moving average of the squared advantages (c^2)."),
    ]


MARWIL_TRAINING: Section = TRAINING.with_fields(
    MARWILTrainingArgs,
    {
        "beta": 1.0,
        "vf_coeff": 1.0,
        "bc_logstd_coeff": 0.0,
        "moving_average_sqd_adv_norm_update_rate": 1e-8,
        "moving_average_sqd_adv_norm_start": 100.0,
        "lr_schedule": None,
        "grad_clip": None,
    },
)


class MARWILConfig(MARWILConfigFluent, AlgorithmConfig):
    """Config of MARWIL: advantage-weighted imitation of the actions in ``input`` (BC with
    ``beta=0.0``)."""

    __slots__ = ()
    algo_name = "MARWIL"
    _sections: ClassVar[dict[str, Section]] = {
        **AlgorithmConfig._sections,
        "training": MARWIL_TRAINING,
    }
    _algo_defaults: ClassVar[dict[str, Any]] = {
        "lr": 1e-4,
        "train_batch_size": 2000,
        # The driver reads the input files (the reference's default too).
        "num_workers": 0,
        # The discounted returns are computed from the rows as they are read (the reference
        # refuses MARWIL without it).
        "postprocess_inputs": True,
    }
