"""``AlgorithmConfig.environment()``: which environment to run and how to treat its data."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field
from typing_extensions import TypedDict

from rlconf.field_types import ClassValue, ClipRewards, FunctionRef, JsonDict, SpaceRef
from rlconf.section import Section


class EnvironmentArgs(TypedDict, total=False):
    env_config: Annotated[
        JsonDict, Field(description="Arguments for the env creator, passed as an EnvContext.")
    ]
    observation_space: Annotated[
        SpaceRef | None, Field(description="The policies' observation space; None infers it.")
    ]
    action_space: Annotated[
        SpaceRef | None, Field(description="The policies' action space; None infers it.")
    ]
    env_task_fn: Annotated[
        FunctionRef | None,
        Field(description="fn(train_result, task_settable_env, env_context) -> new task."),
    ]
    render_env: Annotated[
        bool,
        Field(
            description="Render the env on the first sampling worker; not available, True is "
            "refused at build (render in a callback or an env wrapper)."
        ),
    ]
    record_env: Annotated[
        bool | str,
        Field(
            description="Record videos of episodes with gymnasium's RecordVideo (sub-env 0 "
            "of each worker that samples; episodes 0, 1, 8, 27, ..., 729, then every 1000th): "
            "False, True (into <logdir>/videos) or a folder. Needs an env rendering "
            "render_mode='rgb_array' (gymnasium ids are made so) and moviepy "
            "(pip install 'rlconf[video]'); refused at build otherwise, and for multi-agent "
            "envs. 'monitor' is its deprecated name."
        ),
    ]
    clip_rewards: Annotated[
        ClipRewards,
        Field(description="None: no clipping; True: sign(r); x: clip to [-x, x]; [lo, hi]."),
    ]
    normalize_actions: Annotated[
        bool, Field(description="Learn in a normalised action space; unsquash to Box bounds.")
    ]
    clip_actions: Annotated[bool, Field(description="Clip actions to the env's Box bounds.")]
    disable_env_checking: Annotated[
        bool,
        Field(
            description="Skip the checks of what the env returns: for a multi-agent env every "
            "step's dicts ('__all__', rewards of agents that acted, observations in their "
            "spaces); for a single-agent env each reset observation in its space."
        ),
    ]


class EnvironmentFields(EnvironmentArgs, total=False):
    env: Annotated[
        str | ClassValue | None,
        Field(description="Registered name, gymnasium id, import path or env class."),
    ]


ENVIRONMENT = Section(
    method="environment",
    fields=EnvironmentFields,
    positional=("env",),
    doc="Sets the environment and how its observations, rewards and actions are treated.",
    defaults={
        "env": None,
        "env_config": {},
        "observation_space": None,
        "action_space": None,
        "env_task_fn": None,
        "render_env": False,
        "record_env": False,
        "clip_rewards": None,
        "normalize_actions": True,
        "clip_actions": False,
        "disable_env_checking": False,
    },
)
