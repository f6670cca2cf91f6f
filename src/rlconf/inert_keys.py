"""Reference keys that rlconf accepts for compatibility only with a value that asks for nothing.

Config files and code written for the reference (or for RLlib 2.x) often carry TensorFlow-only
or 2.x-only switches at their "off" value: ``eager_tracing: false``, ``model: {use_lstm:
false}``, ``replay_buffer_config: {worker_side_prioritization: false}``. Such a value asks for
exactly what rlconf does anyway, so it is accepted, kept in the config (``to_dict()`` and JSON
give it back) and named in a one-line warning when the algorithm is built. Any other value asks
for something rlconf cannot do and is refused with the reason. A few switches change nothing
here at any value (``enable_connectors``: rlconf's workers do what connectors do, either way)
and are accepted at both.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import annotated_types
from pydantic import BeforeValidator, WithJsonSchema

_TF_ONLY = "a TensorFlow-only setting; rlconf runs on torch"
_RL_MODULES = (
    "a setting of RLlib 2.x's RLModules; rlconf builds its models from the model dict "
    "(model.custom_model for your own)"
)
_INITIALIZER = (
    "an RLlib 2.x initializer of layers rlconf's networks don't have (transposed convs, and "
    "the post_fcnet head layers of RLlib 2.x's RL modules, whose counterpart here is "
    "head_fcnet_hiddens); the fcnet_, conv_, head_fcnet_ and lstm_ kernel and bias "
    "initializers act on the layers rlconf builds"
)
_ONE_PATH = (
    "rlconf has one learning path, which both of RLlib's API stacks map onto: RL modules "
    "(runtime.RLModule) built from the model dict, trained by the learner group, sampled by "
    "rlconf's own rollout workers"
)
#: RLlib's DEPRECATED_VALUE: what it writes into params.json for a deprecated key left unset.
_DEPRECATED_VALUE = -1

#: The reference's default ``tf_session_args`` and ``local_tf_session_args``.
_TF_SESSION_ARGS = {
    "intra_op_parallelism_threads": 2,
    "inter_op_parallelism_threads": 2,
    "gpu_options": {"allow_growth": True},
    "log_device_placement": False,
    "device_count": {"CPU": 1},
    "allow_soft_placement": True,
}
_LOCAL_TF_SESSION_ARGS = {"intra_op_parallelism_threads": 8, "inter_op_parallelism_threads": 8}


def _same(value: Any, accepted: Any) -> bool:
    """Equal and of the same kind (``0`` is not ``False``), nested dicts included."""
    if isinstance(accepted, Mapping):
        return (
            isinstance(value, Mapping)
            and value.keys() == accepted.keys()
            and all(_same(value[k], accepted[k]) for k in accepted)
        )
    return type(value) is type(accepted) and bool(value == accepted)


@dataclass(frozen=True)
class InertKey(annotated_types.GroupedMetadata):
    """A key accepted with one of ``accepted`` (what rlconf does anyway) and refused otherwise.

    ``method`` is the fluent method that takes it as a keyword (None: dict paths only). As
    pydantic metadata in a TypedDict it validates a nested key (``model.use_lstm``) the same way.
    """

    accepted: tuple[Any, ...]
    why: str
    method: str | None = None

    def accepts(self, value: Any) -> bool:
        return any(_same(value, ok) for ok in self.accepted)

    @property
    def problem(self) -> str:
        return f"is not supported: {self.why}"

    @property
    def values(self) -> str:
        return " or ".join(repr(ok) for ok in self.accepted)

    @property
    def allowed(self) -> str:
        return f"{self.values} (accepted for compatibility; it has no effect)"

    @property
    def description(self) -> str:
        return (
            f"Reference compatibility: only {self.values} is accepted, and has no effect "
            f"({self.why}); other values are refused."
        )

    def _check(self, value: Any) -> Any:
        if not self.accepts(value):
            raise ValueError(self.problem)
        return value

    def __iter__(self) -> Iterator[Any]:
        yield BeforeValidator(self._check)
        yield WithJsonSchema({"enum": list(self.accepted), "description": self.description})


@dataclass(frozen=True)
class RefusedKey(annotated_types.GroupedMetadata):
    """A reference key refused at every value: ``why``, and ``instead`` (what to set). As
    pydantic metadata in a TypedDict it refuses a nested key with that reason rather than as an
    unknown key."""

    why: str
    instead: str

    def _check(self, value: Any) -> Any:
        raise ValueError(f"is not supported: {self.why}")

    def __iter__(self) -> Iterator[Any]:
        yield BeforeValidator(self._check)
        yield WithJsonSchema({"not": {}, "description": f"nothing: leave it out; {self.instead}"})


#: Top-level keys, by config key.
INERT_KEYS: dict[str, InertKey] = {
    "eager_tracing": InertKey((False,), _TF_ONLY, "framework"),
    "eager_max_retraces": InertKey((20, None), _TF_ONLY, "framework"),
    "tf_session_args": InertKey((_TF_SESSION_ARGS, {}), _TF_ONLY, "framework"),
    "local_tf_session_args": InertKey((_LOCAL_TF_SESSION_ARGS, {}), _TF_ONLY, "framework"),
    "_tf_policy_handles_more_than_one_loss": InertKey((False,), _TF_ONLY, "framework"),
    "_disable_execution_plan_api": InertKey(
        (True, False),
        "rlconf has no execution plans; every algorithm runs its training_step()",
        "training",
    ),
    "enable_connectors": InertKey(
        (True, False),
        "connectors are an RLlib 2.x API; rlconf's rollout workers preprocess, filter and "
        "clip themselves, whichever is asked for",
        "rollouts",
    ),
    # RLlib 2.x's switches to its RLModule/Learner stack: rlconf always runs that stack (every
    # policy's networks are an RLModule built from the model dict, trained by the learners of
    # the algorithm's learner group), so neither value changes anything.
    "_enable_rl_module_api": InertKey(
        (True, False),
        "rlconf's policies are always RL modules (runtime.RLModule) built from the model dict "
        "(model.custom_model for your own), whichever is asked for",
        "training",
    ),
    "_enable_learner_api": InertKey(
        (True, False),
        "rlconf's policies always learn through the algorithm's learner group "
        "(runtime.Learner), whichever is asked for",
        "training",
    ),
    "evaluation_force_reset_envs_before_iteration": InertKey(
        (True,),
        "every evaluation starts its sub-envs on fresh episodes (RLlib 2.6's default); "
        "episodes carried over from one evaluation to the next are not available",
        "evaluation",
    ),
    # RLlib's switches between its two stacks (Ray 2.10's experimental one, and api_stack()'s
    # two since Ray 2.20). rlconf has one learning path, which either spelling runs: its
    # policies' networks are RL modules trained by the learner group, sampled by its own
    # rollout workers; so no value changes anything.
    "_enable_new_api_stack": InertKey((True, False), _ONE_PATH, "training"),
    "enable_rl_module_and_learner": InertKey((True, False), _ONE_PATH, "api_stack"),
    "enable_env_runner_and_connector_v2": InertKey((True, False), _ONE_PATH, "api_stack"),
    # RLlib's checkpointing(): rlconf's checkpoints are always the same files.
    "export_native_model_files": InertKey(
        (False,),
        "a checkpoint holds rlconf's own state and tensor files, no native model files; "
        "algo.get_policy().model is the torch module to save",
        "checkpointing",
    ),
    "checkpoint_trainable_policies_only": InertKey(
        (False,), "a checkpoint holds every policy's state", "checkpointing"
    ),
}

#: RLlib 2.x's initializer keys of layers rlconf doesn't build (all None by default), and
#: their ``_config`` dicts; those of the layers it builds act (``rlconf.layer_init_keys``).
_INITIALIZER_KEYS = [
    f"{layers}_{part}_initializer{suffix}"
    for layers, part in (
        ("conv_transpose", "kernel"),
        ("conv_transpose", "bias"),
        ("post_fcnet", "weights"),
        ("post_fcnet", "bias"),
    )
    for suffix in ("", "_config")
]

#: Keys of the ``model`` dict; ``rlconf.model_config`` declares them with this metadata.
INERT_MODEL_KEYS: dict[str, InertKey] = {
    "lstm_use_prev_action_reward": InertKey(
        (_DEPRECATED_VALUE,),
        "the reference's deprecated switch; set lstm_use_prev_action and lstm_use_prev_reward",
    ),
    "_time_major": InertKey(
        (False,),
        "sequence batches are batch-major (B, T, ...); the time-major layout was a switch of "
        "the reference's TensorFlow and custom RNN models",
    ),
    "_disable_preprocessor_api": InertKey(
        (False,),
        "the top-level _disable_preprocessor_api (rollouts()) is the switch that acts; RLlib "
        "copies it here",
    ),
    "_disable_action_flattening": InertKey(
        (False,), "the runtime's action spaces are flat (Box, Discrete, MultiDiscrete)"
    ),
    "_use_default_native_models": InertKey(
        (False, _DEPRECATED_VALUE), "rlconf always builds its own torch models from the model dict"
    ),
    "custom_preprocessor": InertKey(
        (None,), "custom preprocessors are not supported; transform observations in an env wrapper"
    ),
    "encoder_latent_dim": InertKey((None,), _RL_MODULES),
    "always_check_shapes": InertKey((False,), _RL_MODULES),
    "log_std_clip_param": InertKey(
        (20.0,),
        "it clips the log-std of RLlib 2.x's Gaussian heads; rlconf's diagonal Gaussian takes "
        "the model's log-std as it is",
    ),
    **{key: InertKey((None,), _INITIALIZER) for key in _INITIALIZER_KEYS},
    # The heads' biases start at zero here (head_fcnet_bias_initializer None): "zeros_" asks
    # for that.
    "post_fcnet_bias_initializer": InertKey((None, "zeros_"), _INITIALIZER),
}


_ONE_BUFFER_PER_POLICY = (
    "each policy has one buffer of single timesteps on the driver, replayed on its own"
)
_NO_SEQUENCES = (
    "rlconf's buffers store and replay single timesteps: the off-policy algorithms train no "
    "model with memory (refused at build), so no sequences are replayed"
)

#: RLlib 2.x's keys of ``replay_buffer_config`` (its ``MultiAgentReplayBuffer`` arguments and
#: the algorithm's switches) that ask for nothing at the value given here;
#: ``rlconf.replay_buffer_config`` declares them with this metadata.
INERT_REPLAY_BUFFER_KEYS: dict[str, InertKey] = {
    "worker_side_prioritization": InertKey(
        (False,),
        "priorities are computed by the learner after each update, from the TD errors of the "
        "replayed rows; there is no worker-side priority computation",
    ),
    "storage_unit": InertKey(("timesteps",), _NO_SEQUENCES),
    "replay_sequence_length": InertKey((1,), _NO_SEQUENCES),
    "replay_burn_in": InertKey((0,), _NO_SEQUENCES),
    # Both only shape stored sequences, which are never made here.
    "replay_zero_init_states": InertKey((True, False), _NO_SEQUENCES),
    "replay_sequence_override": InertKey((True, False), _NO_SEQUENCES),
    "replay_mode": InertKey(
        ("independent",), f"{_ONE_BUFFER_PER_POLICY}; lockstep replay is not available"
    ),
    "num_shards": InertKey(
        (1,),
        f"{_ONE_BUFFER_PER_POLICY}; buffer shards (APEX's replay actors) are not available",
    ),
    "replay_buffer_shards_colocated_with_driver": InertKey(
        (True, False),
        f"{_ONE_BUFFER_PER_POLICY}; there are no buffer shard actors to place",
    ),
    "no_local_replay_buffer": InertKey(
        (False,),
        f"{_ONE_BUFFER_PER_POLICY}; the off-policy algorithms learn only from those buffers",
    ),
    "underlying_buffer_config": InertKey(
        (None,),
        f"{_ONE_BUFFER_PER_POLICY}, the one type names; set its settings with capacity and "
        "the prioritized_replay_* keys",
    ),
    "_enable_replay_buffer_api": InertKey(
        (True,), "rlconf's buffers are those of RLlib 2.x's replay buffer API"
    ),
    # RLlib's DEPRECATED_VALUE, which its 2.x DQN config carries for this key.
    "prioritized_replay": InertKey(
        (_DEPRECATED_VALUE,),
        "RLlib 2.x ignores it here and refuses it at the top level: type chooses the buffer "
        "('PrioritizedReplayBuffer' or 'ReplayBuffer')",
    ),
}

#: Keys RLlib 2.x refuses (or reads for buffer types that are not available here) in
#: ``replay_buffer_config``: refused at any value, with what to set instead.
REFUSED_REPLAY_BUFFER_KEYS: dict[str, RefusedKey] = {
    "buffer_size": RefusedKey(
        "RLlib 2.x refuses this old name", "capacity sets the rows each policy's buffer keeps"
    ),
    "replay_batch_size": RefusedKey(
        "RLlib 2.x refuses it: a replayed batch is train_batch_size rows",
        "set train_batch_size",
    ),
    "replay_ratio": RefusedKey(
        "it is a setting of RLlib's MultiAgentMixInReplayBuffer, which is not available",
        "IMPALA and APPO mix replayed batches in with replay_proportion",
    ),
    # RLlib's new API stack names of prioritized_replay_alpha / _beta (renamed as the dict is
    # given, rlconf.replay_buffer_config.with_buffer_key_names): what is left of them here was
    # given beside its twin with another value.
    **{
        key: RefusedKey(
            f"it is RLlib's new API stack name of prioritized_replay_{key}, given beside it "
            "with a different value",
            f"one of {key} and prioritized_replay_{key}, or the same value for both",
        )
        for key in ("alpha", "beta")
    },
}


def inert_settings(
    config_inert: Mapping[str, Any],
    model: Mapping[str, Any],
    replay_buffer_config: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The inert keys a config was given, by path (``"eager_tracing"``, ``"model.use_lstm"``,
    ``"replay_buffer_config.worker_side_prioritization"``)."""
    found = dict(config_inert)
    found.update({f"model.{k}": v for k, v in model.items() if k in INERT_MODEL_KEYS})
    if isinstance(replay_buffer_config, Mapping):
        found.update(
            {
                f"replay_buffer_config.{k}": v
                for k, v in replay_buffer_config.items()
                if k in INERT_REPLAY_BUFFER_KEYS
            }
        )
    return found
