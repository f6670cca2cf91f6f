"""``APPOConfig``: asynchronous PPO: IMPALA's sampling and learner (``IMPALAConfig``'s keys)
with PPO's clipped surrogate objective, taken against a target copy of the policy that follows
the learned one (``tau``, ``target_update_frequency``), and optionally a KL penalty towards it
(``use_kl_loss``).

The keys and defaults are the reference's (RLlib 2.3-2.5 ``APPOConfig``): ``clip_param=0.4``,
``kl_coeff=1.0``, ``kl_target=0.01``, ``tau=1.0``, ``target_update_frequency=1``; its overrides
of IMPALA's defaults are IMPALA's own values but ``replay_buffer_num_slots=100`` (replay stays off
while ``replay_proportion`` is 0.0). With ``vtrace=True`` (the default) the advantages are
V-trace's; ``vtrace=False`` takes GAE advantages (``use_critic``, ``use_gae``, ``lambda``)
computed on the workers.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from pydantic import Field

from rlconf.algorithms.actor_critic_fields import CriticArgs, KLPenaltyArgs, critic_issues
from rlconf.algorithms.impala import IMPALA_TRAINING, IMPALAConfig, IMPALATrainingArgs
from rlconf.errors import FieldIssue
from rlconf.field_types import PosFloat, PosInt, UnitFloat
from rlconf.fluent import NOT_SET
from rlconf.generated.appo_fluent import APPOConfigFluent
from rlconf.section import Section


class APPOTrainingArgs(IMPALATrainingArgs, CriticArgs, KLPenaltyArgs, total=False):
    clip_param: Annotated[
        PosFloat,
        Field(
            description="Clip the probability ratio of the learned and the target policy to "
            "[1 - clip_param, 1 + clip_param] in the surrogate objective (PPO's clipping)."
        ),
    ]
    use_kl_loss: Annotated[
        bool,
        Field(
            description="Add the KL divergence from the target policy to the loss, weighted "
            "by kl_coeff, which adapts towards kl_target."
        ),
    ]
    tau: Annotated[
        UnitFloat,
        Field(
            description="Weight of the learned policy in each target update: target = tau * "
            "learned + (1 - tau) * target (1.0 copies it)."
        ),
    ]
    target_update_frequency: Annotated[
        PosInt,
        Field(
            description="Move the target policy towards the learned one (by tau), and adapt "
            "kl_coeff with use_kl_loss, after every this many rounds of the learner's buffer "
            "(minibatch_buffer_size batches, each learned on num_sgd_iter times)."
        ),
    ]
    target_network_update_freq: Annotated[
        PosInt | None,
        Field(
            description="RLlib's new API stack period of the target policy: move it (and adapt "
            "kl_coeff) once this many env steps were trained on since the last move (each "
            "learner update counts its batch's rows); None: target_update_frequency decides."
        ),
    ]


APPO_TRAINING: Section = IMPALA_TRAINING.with_fields(
    APPOTrainingArgs,
    {
        "use_critic": True,
        "use_gae": True,
        "lambda_": 1.0,
        "clip_param": 0.4,
        "use_kl_loss": False,
        "kl_coeff": 1.0,
        "kl_target": 0.01,
        "tau": 1.0,
        "target_update_frequency": 1,
        "target_network_update_freq": None,
    },
)


class APPOConfig(APPOConfigFluent, IMPALAConfig):
    """Config of APPO: IMPALA's asynchronous architecture with PPO's clipped surrogate
    objective against a target policy."""

    __slots__ = ()
    algo_name = "APPO"
    _sections: ClassVar[dict[str, Section]] = {
        **IMPALAConfig._sections,
        "training": APPO_TRAINING,
    }
    # The reference's APPOConfig sets these over ImpalaConfig's defaults: all but
    # replay_buffer_num_slots are IMPALA's values again (its num_gpus=0 is rlconf's default).
    _algo_defaults: ClassVar[dict[str, Any]] = {
        **IMPALAConfig._algo_defaults,
        "vtrace": True,
        "num_workers": 2,
        "rollout_fragment_length": 50,
        "train_batch_size": 500,
        "min_time_s_per_reporting": 10.0,
        "num_multi_gpu_tower_stacks": 1,
        "minibatch_buffer_size": 1,
        "num_sgd_iter": 1,
        "replay_proportion": 0.0,
        "replay_buffer_num_slots": 100,
        "learner_queue_size": 16,
        "learner_queue_timeout": 300.0,
        "max_sample_requests_in_flight_per_worker": 2,
        "broadcast_interval": 1,
        "grad_clip": 40.0,
        "opt_type": "adam",
        "lr": 0.0005,
        "lr_schedule": None,
        "decay": 0.99,
        "momentum": 0.0,
        "epsilon": 0.1,
        "vf_loss_coeff": 0.5,
        "entropy_coeff": 0.01,
        "entropy_coeff_schedule": None,
    }

    def _cross_field_issues(self) -> list[FieldIssue]:
        issues = super()._cross_field_issues()
        v = self._plain
        # use_critic and use_gae only shape the advantages without V-trace.
        if v("vtrace") is False:
            issues.extend(critic_issues(v))
        freq, rounds = v("target_network_update_freq"), v("target_update_frequency")
        if freq not in (None, NOT_SET) and rounds not in (1, NOT_SET):
            issues.append(
                FieldIssue(
                    "target_network_update_freq",
                    f"and target_update_frequency={rounds} both set when the target policy "
                    "moves; set one of them",
                    freq,
                )
            )
        return issues
