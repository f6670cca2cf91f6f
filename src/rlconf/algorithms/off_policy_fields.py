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
from typing import TYPE_CHECKING, Annotated, Any, TypeAlias

from pydantic import AfterValidator, BeforeValidator, Field, WithJsonSchema
from typing_extensions import TypedDict

from rlconf.errors import FieldIssue
from rlconf.field_types import FunctionRef, NonNegInt, PosFloat, PosInt, UnitFloat
from rlconf.fluent import NOT_SET
from rlconf.replay_buffer_config import REPLAY_BUFFER_DEFAULTS, ReplayBufferConfig


def _n_step_pair(value: Any) -> Any:
    """A list of two (JSON's and YAML's form of a range) as the tuple it stands for."""
    return tuple(value) if isinstance(value, list) else value


def _check_n_step_range(value: Any) -> Any:
    if isinstance(value, tuple) and not value[0] < value[1]:
        raise ValueError(
            f"a range of n-steps (low, high) draws n from low to high - 1 (numpy's "
            f"integers(low, high), as RLlib's episode buffers), so it needs low < high; got "
            f"{value!r}"
        )
    return value


if TYPE_CHECKING:
    NStep: TypeAlias = int | tuple[int, int]
else:
    NStep = Annotated[
        PosInt
        | Annotated[
            tuple[PosInt, PosInt],
            WithJsonSchema(
                {
                    "type": "array",
                    "prefixItems": [
                        {"type": "integer", "minimum": 1},
                        {"type": "integer", "minimum": 2},
                    ],
                    "minItems": 2,
                    "maxItems": 2,
                    "description": "[low, high] with 1 <= low < high",
                }
            ),
        ],
        BeforeValidator(_n_step_pair),
        AfterValidator(_check_n_step_range),
    ]


def n_step_range(n_step: int | tuple[int, int]) -> tuple[int, int]:
    """``n_step`` as the ``(low, high)`` the steps of each row are drawn from, ``high``
    excluded: ``(n, n + 1)`` for a fixed ``n``."""
    if isinstance(n_step, tuple):
        return int(n_step[0]), int(n_step[1])
    return int(n_step), int(n_step) + 1


class OffPolicyArgs(TypedDict, total=False):
    n_step: Annotated[
        NStep,
        Field(
            description="Steps of rewards in each TD target; a range (low, high), RLlib's new "
            "API stack's, draws each sampled row's n from low to high - 1 (numpy's "
            "integers(low, high), as RLlib's episode buffers draw it per replayed row), its "
            "bootstrap discounted by gamma**n."
        ),
    ]
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
    default and None (RLlib's new API stack's way of saying so) are accepted (they change
    nothing), any other value is refused, naming ``instead``."""
    if lr is NOT_SET or lr is None:
        return []
    if isinstance(lr, int | float) and math.isclose(float(lr), own_lr):
        return []
    return [
        FieldIssue(
            "lr",
            f"is not used by {algorithm}: set {instead} instead (allowed: {own_lr!r} or None)",
            lr,
        )
    ]
