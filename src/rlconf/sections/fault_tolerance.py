"""``AlgorithmConfig.fault_tolerance()``: what happens when a worker dies or a sub-env
raises."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field
from typing_extensions import TypedDict

from rlconf.section import Section


class FaultToleranceArgs(TypedDict, total=False):
    ignore_worker_failures: Annotated[
        bool, Field(description="Keep training on the healthy workers when one fails.")
    ]
    recreate_failed_workers: Annotated[
        bool, Field(description="Replace a failed worker with a new one.")
    ]
    restart_failed_sub_environments: Annotated[
        bool,
        Field(
            description="Make a sub-env that raises in reset() or step() again, drop the "
            "episode it was running (counted in num_faulty_episodes) and go on sampling; "
            "False: the exception stops sampling."
        ),
    ]

    # RLlib's new API stack names of recreate_failed_workers and ignore_worker_failures
    # (rlconf.new_stack_names): keywords that set them, typed as them, not fields.
    restart_failed_env_runners: bool
    ignore_env_runner_failures: bool


FAULT_TOLERANCE = Section(
    method="fault_tolerance",
    fields=FaultToleranceArgs,
    doc="Sets how worker and sub-env failures are handled.",
    defaults={
        "ignore_worker_failures": False,
        "recreate_failed_workers": False,
        "restart_failed_sub_environments": False,
    },
)
