"""``AlgorithmConfig.debugging()``: logging, seeding and debug aids."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, Field
from typing_extensions import TypedDict

from rlconf.field_types import JsonDict, NonNegInt
from rlconf.logger_config import check_logger_config
from rlconf.section import Section


class DebuggingArgs(TypedDict, total=False):
    log_level: Annotated[
        Literal["DEBUG", "INFO", "WARN", "WARNING", "ERROR", "CRITICAL"],
        Field(description="Log level of the runtime and its workers."),
    ]
    log_sys_usage: Annotated[
        bool, Field(description="Add CPU and memory usage to every result (under 'perf').")
    ]
    fake_sampler: Annotated[
        bool,
        Field(
            description="Each rollout worker samples once and returns that batch on every "
            "later sample() call (to measure learning speed without env cost)."
        ),
    ]
    seed: Annotated[
        NonNegInt | None, Field(description="Seed for torch, numpy, envs; offset per worker.")
    ]
    logger_config: Annotated[
        JsonDict | None,
        AfterValidator(check_logger_config),
        Field(
            description="Where the results go (logdir, local_dir) and an experiment tracker "
            "beside them: type 'wandb' or 'mlflow' with their keys."
        ),
    ]


DEBUGGING = Section(
    method="debugging",
    fields=DebuggingArgs,
    doc="Sets logging, seeding and other debugging aids.",
    defaults={
        "log_level": "WARN",
        "log_sys_usage": True,
        "fake_sampler": False,
        "seed": None,
        "logger_config": None,
    },
)
