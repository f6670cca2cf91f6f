"""Training fields shared by the off-policy family: the replay buffer and how much is replayed,
n-step returns and the target network (declared once: DQN uses them, and SAC, TD3 and DDPG are
to).

An algorithm's training args extend ``OffPolicyArgs``, and its section's defaults start from
``OFF_POLICY_DEFAULTS``, overriding those that differ for it::

    class SACTrainingArgs(TrainingArgs, OffPolicyArgs, total=False): ...

    SAC_TRAINING = TRAINING.with_fields(SACTrainingArgs, {**OFF_POLICY_DEFAULTS, "tau": 5e-3})
"""

from __future__ import annotations

import math
from typing import Annotated, Any

from pydantic import Field
from typing_extensions import TypedDict

from rlconf.errors import FieldIssue
from rlconf.field_types import FunctionRef, NonNegInt, PosFloat, PosInt, UnitFloat
from rlconf.fluent import NOT_SET
from rlconf.replay_buffer_config import REPLAY_BUFFER_DEFAULTS, ReplayBufferConfig


class OffPolicyArgs(TypedDict, total=False):
    n_step: Annotated[PosInt, Field(description="Steps of rewards in each TD target.")]
    target_network_update_freq: Annotated[
        NonNegInt,
        Field(
            description="Update the target network every this many env steps; 0: after every "
            "training step."
        ),
    ]
    tau: Annotated[
        UnitFloat, Field(description="Target update weight: 1.0 copies, below averages.")
    ]
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
    before_learn_on_batch: Annotated[
        FunctionRef | None,
        Field(
            description="fn(batch, policy_map, train_batch_size) -> batch: changes each "
            "replayed MultiAgentBatch before the learners update on it (None: no change)."
        ),
    ]


#: The defaults of the off-policy fields (DQN's: a hard target-network copy every 500 steps).
OFF_POLICY_DEFAULTS: OffPolicyArgs = {
    "n_step": 1,
    "target_network_update_freq": 500,
    "tau": 1.0,
    "num_steps_sampled_before_learning_starts": 1000,
    "training_intensity": None,
    "replay_buffer_config": REPLAY_BUFFER_DEFAULTS,
    "store_buffer_in_checkpoints": False,
    "before_learn_on_batch": None,
}


def unused_lr_issues(lr: Any, own_lr: float, algorithm: str, instead: str) -> list[FieldIssue]:
    """``lr`` for an algorithm whose optimizers take their rates from other keys: its own
    default is accepted (it changes nothing), any other value is refused, naming ``instead``."""
    if lr is NOT_SET or (isinstance(lr, int | float) and math.isclose(float(lr), own_lr)):
        return []
    return [
        FieldIssue(
            "lr",
            f"is not used by {algorithm}: set {instead} instead (allowed: {own_lr!r})",
            lr,
        )
    ]
