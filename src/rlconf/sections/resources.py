"""``AlgorithmConfig.resources()``: CPUs, GPUs and custom resources, and their placement."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field
from typing_extensions import TypedDict

from rlconf.field_types import NonNegFloat, NonNegInt, PosFloat
from rlconf.section import Section


class ResourcesArgs(TypedDict, total=False):
    num_gpus: Annotated[
        NonNegFloat,
        Field(
            description="GPUs for the learner (driver): a fraction shares one GPU; k > 1 "
            "trains k data-parallel towers, one per GPU."
        ),
    ]
    _fake_gpus: Annotated[
        bool,
        Field(
            description="Simulate the num_gpus towers on CPU and reserve no GPU (for "
            "testing multi-GPU settings)."
        ),
    ]
    num_learner_workers: Annotated[
        NonNegInt,
        Field(
            description="Learner actors trained data-parallel with torch.distributed (gloo on "
            "CPU, NCCL on GPUs); 0 learns in the driver."
        ),
    ]
    num_gpus_per_learner_worker: Annotated[
        NonNegFloat, Field(description="GPUs per learner worker (0: it learns on CPU).")
    ]
    num_cpus_per_learner_worker: Annotated[
        NonNegFloat, Field(description="CPUs per learner worker (also its torch threads).")
    ]
    num_cpus_per_worker: Annotated[NonNegFloat, Field(description="CPUs per rollout worker.")]
    num_gpus_per_worker: Annotated[
        NonNegFloat, Field(description="GPUs per rollout worker; may be a fraction.")
    ]
    custom_resources_per_worker: Annotated[
        dict[str, NonNegFloat], Field(description="Custom Ray resources per rollout worker.")
    ]
    num_cpus_for_driver: Annotated[
        NonNegFloat | None,
        Field(
            description="CPUs for the learner (driver): reserved in a Tune trial (None: 1), and "
            "torch's threads there (None: 1 for small networks, every core for conv nets and "
            "layers of 256x256 and up); OMP_NUM_THREADS wins."
        ),
    ]
    placement_strategy: Annotated[
        Literal["PACK", "SPREAD", "STRICT_PACK", "STRICT_SPREAD"],
        Field(description="How the placement group's bundles are spread over nodes."),
    ]
    placement_timeout_s: Annotated[
        PosFloat,
        Field(description="Seconds to wait for the placement group's resources before failing."),
    ]
    # RLlib's new API stack name of num_cpus_for_driver (rlconf.new_stack_names): a keyword
    # that sets it, typed as it, not a field.
    num_cpus_for_main_process: NonNegFloat | None


#: The CPUs a Tune trial reserves for the driver when ``num_cpus_for_driver`` is not set.
DEFAULT_DRIVER_CPUS = 1.0

RESOURCES = Section(
    method="resources",
    fields=ResourcesArgs,
    doc="Sets the resources reserved for the learner and each worker.",
    defaults={
        "num_gpus": 0.0,
        "_fake_gpus": False,
        "num_learner_workers": 0,
        "num_gpus_per_learner_worker": 0.0,
        "num_cpus_per_learner_worker": 1.0,
        "num_cpus_per_worker": 1.0,
        "num_gpus_per_worker": 0.0,
        "custom_resources_per_worker": {},
        "num_cpus_for_driver": None,
        "placement_strategy": "PACK",
        "placement_timeout_s": 60.0,
    },
)
