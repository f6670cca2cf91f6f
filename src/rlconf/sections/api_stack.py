"""``AlgorithmConfig.api_stack()``: RLlib's switches between its two API stacks, accepted with a
note (rlconf has one learning path, which either stack's settings describe)."""

from __future__ import annotations

from typing_extensions import TypedDict

from rlconf.section import Section


class ApiStackArgs(TypedDict, total=False):
    """No fields: both switches are inert keys (``rlconf.inert_keys``)."""


API_STACK = Section(
    method="api_stack",
    fields=ApiStackArgs,
    doc="Takes RLlib's API stack switches; rlconf runs its one learning path at either value "
    "(named in a note at build).",
    defaults={},
    keywords=("enable_rl_module_and_learner", "enable_env_runner_and_connector_v2"),
)
