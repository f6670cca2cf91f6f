"""``AlgorithmConfig.evaluation()``: evaluation runs during and beside training."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field
from typing_extensions import TypedDict

from rlconf.field_types import FunctionRef, JsonDict, NonNegInt, PosInt
from rlconf.section import Section


class EvaluationArgs(TypedDict, total=False):
    evaluation_interval: Annotated[
        NonNegInt | None,
        Field(description="Evaluate every this many train() calls; None or 0: never."),
    ]
    evaluation_duration: Annotated[
        PosInt | Literal["auto"],
        Field(description="Episodes or timesteps per evaluation, or 'auto' (parallel only)."),
    ]
    evaluation_duration_unit: Annotated[
        Literal["episodes", "timesteps"],
        Field(description="What evaluation_duration counts."),
    ]
    evaluation_parallel_to_training: Annotated[
        bool, Field(description="Run evaluation concurrently with the training step.")
    ]
    in_evaluation: Annotated[
        bool, Field(description="Set on the evaluation workers' config; not for users.")
    ]
    evaluation_config: Annotated[
        JsonDict,
        Field(description="Overrides of this config for evaluation (e.g. explore=False)."),
    ]
    evaluation_num_workers: Annotated[
        NonNegInt, Field(description="Remote evaluation workers; 0 evaluates in the driver.")
    ]
    custom_eval_function: Annotated[
        FunctionRef | None,
        Field(description="fn(algorithm, eval_workers[, train_future]) -> metrics dict."),
    ]
    always_attach_evaluation_results: Annotated[
        bool, Field(description="Attach the latest evaluation results to every result.")
    ]
    # RLlib's names of evaluation_num_workers and custom_eval_function (rlconf.key_aliases):
    # keywords that set them, typed as them, not fields.
    evaluation_num_env_runners: NonNegInt
    custom_evaluation_function: FunctionRef | None


EVALUATION = Section(
    method="evaluation",
    fields=EvaluationArgs,
    doc="Sets when and how the policy is evaluated.",
    defaults={
        "evaluation_interval": None,
        "evaluation_duration": 10,
        "evaluation_duration_unit": "episodes",
        "evaluation_parallel_to_training": False,
        "in_evaluation": False,
        "evaluation_config": {},
        "evaluation_num_workers": 0,
        "custom_eval_function": None,
        "always_attach_evaluation_results": False,
    },
)
