"""``AlgorithmConfig.training()``: the learner's settings common to every algorithm."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field
from typing_extensions import TypedDict

from rlconf.default_model_config import ModelConfigInput
from rlconf.field_types import JsonDict, PosFloat, PosInt, UnitFloat
from rlconf.model_config import MODEL_DEFAULTS
from rlconf.section import Section


class TrainingArgs(TypedDict, total=False):
    gamma: Annotated[UnitFloat, Field(description="Discount factor of the MDP.")]
    lr: Annotated[
        PosFloat | None,
        Field(
            description="Learning rate. None (RLlib's new API stack's way to say it is not "
            "used) only for SAC, DDPG and TD3, whose optimizers take their rates from keys of "
            "their own."
        ),
    ]
    train_batch_size: Annotated[
        PosInt, Field(description="Steps per training batch, concatenated from fragments.")
    ]
    model: Annotated[
        ModelConfigInput,
        Field(
            description="Model catalog options (a dict, or RLlib's DefaultModelConfig: all its "
            "fields); updates the current ones."
        ),
    ]
    optimizer: Annotated[JsonDict, Field(description="Extra arguments for the optimizer.")]
    # RLlib's new API stack name of train_batch_size (rlconf.new_stack_names): a keyword that
    # sets it, typed as it, not a field.
    train_batch_size_per_learner: PosInt


TRAINING = Section(
    method="training",
    fields=TrainingArgs,
    doc="Sets the learner's hyperparameters.",
    defaults={
        "gamma": 0.99,
        "lr": 0.0001,
        "train_batch_size": 200,
        "model": MODEL_DEFAULTS,
        "optimizer": {},
    },
)
