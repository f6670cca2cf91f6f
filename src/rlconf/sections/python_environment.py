"""``AlgorithmConfig.python_environment()``: environment variables for the processes."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field
from typing_extensions import TypedDict

from rlconf.section import Section


class PythonEnvironmentArgs(TypedDict, total=False):
    extra_python_environs_for_driver: Annotated[
        dict[str, str],
        Field(description="Environment variables set in the driver process at build."),
    ]
    extra_python_environs_for_worker: Annotated[
        dict[str, str],
        Field(description="Environment variables set in every remote worker process."),
    ]


PYTHON_ENVIRONMENT = Section(
    method="python_environment",
    fields=PythonEnvironmentArgs,
    doc="Sets environment variables of the driver and worker processes.",
    defaults={"extra_python_environs_for_driver": {}, "extra_python_environs_for_worker": {}},
)
