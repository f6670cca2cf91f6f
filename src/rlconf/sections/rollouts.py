"""``AlgorithmConfig.rollouts()``: rollout workers and how they collect experience."""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeAlias

from pydantic import BeforeValidator, Field
from typing_extensions import TypedDict

from rlconf.field_types import CallableValue, NonNegFloat, NonNegInt, PosInt
from rlconf.section import Section

#: gymnasium's ``VectorizeMode`` values (RLlib writes them in capitals too).
VectorizeModeName: TypeAlias = Literal[
    "sync", "vector_entry_point", "async", "SYNC", "VECTOR_ENTRY_POINT", "ASYNC"
]


def _vectorize_mode(value: Any) -> Any:
    """gymnasium's ``VectorizeMode`` members and any letter case of their names or values
    (RLlib takes ``"SYNC"`` as well as ``gym.VectorizeMode.SYNC``) as the value."""
    value = getattr(value, "value", value)
    return value.lower() if isinstance(value, str) else value


class RolloutsArgs(TypedDict, total=False):
    num_workers: Annotated[
        NonNegInt, Field(description="Remote rollout worker actors; 0 samples in the driver.")
    ]
    num_envs_per_worker: Annotated[
        PosInt, Field(description="Sub-envs per worker, stepped with one batched forward pass.")
    ]
    create_env_on_driver: Annotated[
        bool, Field(description="Also create an env on the driver when num_workers > 0.")
    ]
    rollout_fragment_length: Annotated[
        PosInt | Literal["auto"],
        Field(
            description="Steps per sub-env in each sample() fragment; 'auto': "
            "ceil(train_batch_size / max(1, num_workers) / num_envs_per_worker), for DQN and "
            "SAC n_step (the high end of a range)."
        ),
    ]
    batch_mode: Annotated[
        Literal["truncate_episodes", "complete_episodes"],
        Field(description="Cut fragments at rollout_fragment_length or at episode ends."),
    ]
    horizon: Annotated[
        PosInt | None, Field(description="Force an episode end after this many steps.")
    ]
    soft_horizon: Annotated[
        bool, Field(description="At the horizon, end the episode without resetting the env.")
    ]
    no_done_at_end: Annotated[
        bool, Field(description="Do not mark the last step of an episode as done.")
    ]
    gym_env_vectorize_mode: Annotated[
        VectorizeModeName,
        BeforeValidator(_vectorize_mode),
        Field(
            description="How a worker steps its num_envs_per_worker sub-envs (gymnasium's "
            "VectorizeMode, any letter case): 'sync', one after the other in its process; "
            "'vector_entry_point', an Atari id's sub-envs as one ale_py AtariVectorEnv that "
            "steps them together in C++ threads with the DeepMind preprocessing (training "
            "workers; evaluation workers step theirs one by one), refused for other envs; "
            "'async' (a process per sub-env) is refused at build: use num_workers."
        ),
    ]
    remote_worker_envs: Annotated[
        bool,
        Field(
            description="Run each sub-env in its own actor process; not available, True is "
            "refused at build."
        ),
    ]
    remote_env_batch_wait_ms: Annotated[
        NonNegFloat,
        Field(
            description="How long to wait for remote sub-envs when polling; only matters with "
            "remote_worker_envs, so any value but 0 is refused at build."
        ),
    ]
    preprocessor_pref: Annotated[
        Literal["deepmind", "rllib"] | None,
        Field(
            description="'deepmind': Atari envs get the DeepMind wrappers (noop reset, frame "
            "skip with max-pooling, episodic life, fire reset, model.dim x dim grayscale, "
            "model.framestack; rewards clipped to their sign unless clip_rewards says "
            "otherwise); 'rllib': no wrappers, raw 210x160x3 frames go through the pixel "
            "preprocessor (model.dim, grayscale, zero_mean); other envs are the same under "
            "both. None: no preprocessing, observations reach the model as the env returns "
            "them (Box observation spaces only; others are refused at build)."
        ),
    ]
    observation_filter: Annotated[
        Literal["NoFilter", "MeanStdFilter"],
        Field(description="Element-wise observation filter."),
    ]
    synchronize_filters: Annotated[
        bool,
        Field(
            description="After each iteration send the driver's filter statistics (merged "
            "from all workers) back to the remote workers; False: each remote worker keeps "
            "normalising with its own statistics."
        ),
    ]
    compress_observations: Annotated[
        bool,
        Field(
            description="LZ4-compress observations in sample batches. No effect: replay "
            "buffers always hold each distinct image frame once, which is what it saves memory "
            "for (output_compress_columns compresses output files)."
        ),
    ]
    sample_async: Annotated[
        bool,
        Field(
            description="Sample in a background thread (slightly off-policy); not available, "
            "True is refused at build."
        ),
    ]
    _disable_preprocessor_api: Annotated[
        bool,
        Field(
            description="Hand the env's observations to the model without preprocessing (the "
            "DeepMind wrappers of preprocessor_pref='deepmind' still wrap Atari envs); Box "
            "observation spaces only, others are refused at build."
        ),
    ]
    _disable_action_flattening: Annotated[
        bool,
        Field(
            description="Keep nested actions as they are; the runtime's action spaces are "
            "flat (Box, Discrete, MultiDiscrete), True is refused at build."
        ),
    ]
    # RLlib's new API stack setting of the observation filter (rlconf.new_stack_names): a
    # keyword that sets observation_filter, typed as RLlib takes it, not a field.
    env_to_module_connector: Annotated[
        CallableValue | None,
        Field(
            description="RLlib's new API stack name of observation_filter (one setting): a "
            "function (env, spaces, device) returning rlconf.connectors.MeanStdFilter() sets "
            "'MeanStdFilter', None sets 'NoFilter'; other ConnectorV2 pieces are refused."
        ),
    ]


ROLLOUTS = Section(
    method="rollouts",
    fields=RolloutsArgs,
    doc="Sets the rollout workers and how they sample experience.",
    defaults={
        "num_workers": 2,
        "num_envs_per_worker": 1,
        "create_env_on_driver": False,
        "rollout_fragment_length": 200,
        "batch_mode": "truncate_episodes",
        "horizon": None,
        "soft_horizon": False,
        "no_done_at_end": False,
        "gym_env_vectorize_mode": "sync",
        "remote_worker_envs": False,
        "remote_env_batch_wait_ms": 0.0,
        "preprocessor_pref": "deepmind",
        "observation_filter": "NoFilter",
        "synchronize_filters": True,
        "compress_observations": False,
        "sample_async": False,
        "_disable_preprocessor_api": False,
        "_disable_action_flattening": False,
    },
)
