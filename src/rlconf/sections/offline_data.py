"""``AlgorithmConfig.offline_data()``: reading and writing experience files."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field
from typing_extensions import TypedDict

from rlconf.field_types import CallableValue, JsonDict, ListOf, NonNegFloat, NonNegInt, PosInt
from rlconf.section import Section


class OfflineDataArgs(TypedDict, total=False):
    input_: Annotated[
        str | ListOf[str] | dict[str, NonNegFloat] | CallableValue,
        Field(
            description="'sampler', a path or glob, a list of files, {source: probability} "
            "or fn(io_context) -> reader."
        ),
    ]
    input_config: Annotated[
        JsonDict,
        Field(
            description="Settings for a custom input reader; custom readers are not "
            "available, so anything but {} is refused at build."
        ),
    ]
    actions_in_input_normalized: Annotated[
        bool,
        Field(
            description="The input files hold actions in the policy's normalised space "
            "(files written by output with normalize_actions=True do); False: Box actions are "
            "normalised when read (with normalize_actions=True)."
        ),
    ]
    input_evaluation: Annotated[
        ListOf[Literal["is", "wis", "simulation"]],
        Field(
            description="Off-policy estimators run on offline input; none is available, so "
            "anything but [] is refused at build (the reference's default ['is', 'wis'] only "
            "acts on offline input)."
        ),
    ]
    postprocess_inputs: Annotated[
        bool,
        Field(
            description="Run trajectory postprocessing on offline input; not available, True "
            "is refused at build."
        ),
    ]
    shuffle_buffer_size: Annotated[
        NonNegInt,
        Field(
            description="Shuffle input batches through a buffer of this size; input is read "
            "in file order, so anything but 0 is refused at build."
        ),
    ]
    output: Annotated[
        str | CallableValue | None,
        Field(description="None, 'logdir', a folder, or fn(io_context) -> writer."),
    ]
    output_compress_columns: Annotated[
        ListOf[str], Field(description="Sample batch columns compressed in output files.")
    ]
    output_max_file_size: Annotated[
        PosInt, Field(description="Bytes per output file before a new one is started.")
    ]


OFFLINE_DATA = Section(
    method="offline_data",
    fields=OfflineDataArgs,
    doc="Sets where experiences are read from and written to.",
    defaults={
        "input_": "sampler",
        "input_config": {},
        "actions_in_input_normalized": False,
        "input_evaluation": [],
        "postprocess_inputs": False,
        "shuffle_buffer_size": 0,
        "output": None,
        "output_compress_columns": ["obs", "new_obs"],
        "output_max_file_size": 64 * 1024 * 1024,
    },
)
