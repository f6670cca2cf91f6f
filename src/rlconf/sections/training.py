"""``AlgorithmConfig.training()``: the learner's settings common to every algorithm."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field
from typing_extensions import TypedDict

from rlconf.field_types import JsonDict, PosFloat, PosInt, UnitFloat
from rlconf.model_config import MODEL_DEFAULTS, ModelConfigDict
from rlconf.section import Section


class TrainingArgs(TypedDict, total=False):
    gamma: Annotated[UnitFloat, Field(description="Discount factor of the MDP.")]
    lr: Annotated[PosFloat, Field(description="Learning rate.")]
    train_batch_size: Annotated[
        PosInt, Field(description="Steps per training batch, concatenated from fragments.")
    ]
    model: Annotated[
        ModelConfigDict, Field(description="Model catalog options; updates the current ones.")
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
