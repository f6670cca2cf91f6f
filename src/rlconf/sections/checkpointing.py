"""``AlgorithmConfig.checkpointing()``: RLlib's checkpoint switches, accepted at the value that
asks for what rlconf's checkpoints hold anyway."""

from __future__ import annotations

from typing_extensions import TypedDict

from rlconf.section import Section


class CheckpointingArgs(TypedDict, total=False):
    """No fields: both switches are inert keys (``rlconf.inert_keys``)."""


CHECKPOINTING = Section(
    method="checkpointing",
    fields=CheckpointingArgs,
    doc="Takes RLlib's checkpoint switches at the value rlconf's checkpoints do anyway (every "
    "policy's state, no native model files).",
    defaults={},
    keywords=("export_native_model_files", "checkpoint_trainable_policies_only"),
)
