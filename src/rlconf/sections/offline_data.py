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
            description="'sampler', a file, folder or glob of experience files, a list of "
            "them, 'minari://<dataset id>', {source: probability} (a source may be 'sampler'), "
            "or fn(io_context) -> reader (None: that worker samples its envs)."
        ),
    ]
    input_config: Annotated[
        JsonDict,
        Field(
            description="Settings for a custom input reader, given to it as "
            "io_context.input_config."
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
            description="Estimate the policy's value on the input's episodes: 'is' "
            "(importance sampling), 'wis' (weighted), reported each iteration as "
            "off_policy_estimation/<name> (they need the behaviour policy's action_logp in "
            "the input); 'simulation' also samples the envs beside the input for episode "
            "metrics only. Acts only when input is not 'sampler'. Default [] as RLlib 2.x "
            "(whose off_policy_estimation_methods defaults to none); the older reference "
            "defaulted to ['is', 'wis']."
        ),
    ]
    postprocess_inputs: Annotated[
        bool,
        Field(
            description="Postprocess input rows with the current policy (advantages, n-step "
            "returns, ...) even when they hold those columns; False: only rows lacking them "
            "are postprocessed."
        ),
    ]
    shuffle_buffer_size: Annotated[
        NonNegInt,
        Field(
            description="Shuffle input batches through a buffer of this many batches (0: in "
            "the order read)."
        ),
    ]
    output: Annotated[
        str | CallableValue | None,
        Field(
            description="None, 'logdir', a folder, 'minari://<dataset id>', or "
            "fn(io_context) -> writer."
        ),
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
