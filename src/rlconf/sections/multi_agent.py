"""``AlgorithmConfig.multi_agent()``: policies and the mapping of agents to them."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field
from typing_extensions import TypedDict

from rlconf.field_types import FunctionRef, PosInt
from rlconf.policy_spec import Policies
from rlconf.section import Section


class MultiAgentArgs(TypedDict, total=False):
    policies: Annotated[
        Policies,
        Field(description="Policy ids (set or list), or a dict of id -> PolicySpec."),
    ]
    policy_map_capacity: Annotated[
        PosInt, Field(description="Policies kept in memory before the least used are stored.")
    ]
    policy_map_cache: Annotated[
        str | None, Field(description="Folder for policies evicted from memory.")
    ]
    policy_mapping_fn: Annotated[
        FunctionRef | None, Field(description="fn(agent_id, episode, worker) -> policy id.")
    ]
    policies_to_train: Annotated[
        list[str] | FunctionRef | None,
        Field(description="Ids of the policies to train, fn(policy_id, batch) -> bool, or all."),
    ]
    observation_fn: Annotated[
        FunctionRef | None, Field(description="Function that enhances agent observations.")
    ]
    replay_mode: Annotated[
        Literal["independent", "lockstep"],
        Field(
            description="Replay agent transitions independently per policy; 'lockstep' is "
            "refused at build."
        ),
    ]
    count_steps_by: Annotated[
        Literal["env_steps", "agent_steps"],
        Field(description="Count batch sizes in env steps or in individual agent steps."),
    ]


MULTI_AGENT = Section(
    method="multi_agent",
    fields=MultiAgentArgs,
    nest_under="multiagent",
    doc="Sets the policies of a multi-agent setup, how agents map to them and which of them "
    "learn. Needs a runtime.MultiAgentEnv (or runtime.make_multi_agent(...)). "
    "replay_mode='lockstep' is refused at build (each policy replays its own transitions).",
    defaults={
        "policies": {},
        "policy_map_capacity": 100,
        "policy_map_cache": None,
        "policy_mapping_fn": None,
        "policies_to_train": None,
        "observation_fn": None,
        "replay_mode": "independent",
        "count_steps_by": "env_steps",
    },
)
