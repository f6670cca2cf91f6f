"""Every key of the reference's model dict is accepted at its default value, so that a
``params.json`` RLlib wrote with its full model dict loads; set to another value, a key acts
or is refused with the reason; the recurrent and attention keys build the LSTM and attention
networks (``tests/test_memory_models.py`` trains them)."""

from __future__ import annotations

import json
import logging
import typing
from pathlib import Path
from typing import Any, cast

import pytest
from gymnasium.spaces import Box, Discrete

from rlconf import ConfigError, PPOConfig
from rlconf.model_config import ModelConfigDict
from runtime import ModelCatalog

#: RLlib's MODEL_DEFAULTS (rllib/models/catalog.py) of the era rlconf reproduces (Ray 2.0),
#: as its params.json holds them; -1 is its DEPRECATED_VALUE.
RLLIB_MODEL_DEFAULTS: dict[str, Any] = {
    "_use_default_native_models": False,
    "_disable_preprocessor_api": False,
    "_disable_action_flattening": False,
    "fcnet_hiddens": [256, 256],
    "fcnet_activation": "tanh",
    "conv_filters": None,
    "conv_activation": "relu",
    "post_fcnet_hiddens": [],
    "post_fcnet_activation": "relu",
    "free_log_std": False,
    "no_final_linear": False,
    "vf_share_layers": True,
    "use_lstm": False,
    "max_seq_len": 20,
    "lstm_cell_size": 256,
    "lstm_use_prev_action": False,
    "lstm_use_prev_reward": False,
    "_time_major": False,
    "use_attention": False,
    "attention_num_transformer_units": 1,
    "attention_dim": 64,
    "attention_num_heads": 1,
    "attention_head_dim": 32,
    "attention_memory_inference": 50,
    "attention_memory_training": 50,
    "attention_position_wise_mlp_dim": 32,
    "attention_init_gru_gate_bias": 2.0,
    "attention_use_n_prev_actions": 0,
    "attention_use_n_prev_rewards": 0,
    "framestack": True,
    "dim": 84,
    "grayscale": False,
    "zero_mean": True,
    "custom_model": None,
    "custom_model_config": {},
    "custom_action_dist": None,
    "custom_preprocessor": None,
    "lstm_use_prev_action_reward": -1,
}

#: What later RLlib 2.x releases added to it (RLModules, weight initializers), and changed.
RLLIB_2X_ADDITIONS: dict[str, Any] = {
    "_use_default_native_models": -1,
    "encoder_latent_dim": None,
    "always_check_shapes": False,
    "log_std_clip_param": 20.0,
    **{
        f"{layers}_{part}_initializer{suffix}": None
        for layers, part in [
            ("fcnet", "weights"),
            ("fcnet", "bias"),
            ("conv", "kernel"),
            ("conv", "bias"),
            ("conv_transpose", "kernel"),
            ("conv_transpose", "bias"),
            ("post_fcnet", "weights"),
            ("post_fcnet", "bias"),
            ("lstm", "weights"),
            ("lstm", "bias"),
        ]
        for suffix in ("", "_config")
    },
}


def _small(model: dict[str, Any]) -> PPOConfig:
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .rollouts(num_workers=0, rollout_fragment_length=10)
        .training(
            train_batch_size=20,
            sgd_minibatch_size=10,
            num_sgd_iter=1,
            model=cast(ModelConfigDict, model),
        )
    )


def test_every_key_of_rllibs_model_dict_is_a_model_key() -> None:
    keys = set(typing.get_type_hints(ModelConfigDict))
    assert set(RLLIB_MODEL_DEFAULTS) | set(RLLIB_2X_ADDITIONS) <= keys


@pytest.mark.parametrize(
    "model",
    [RLLIB_MODEL_DEFAULTS, {**RLLIB_MODEL_DEFAULTS, **RLLIB_2X_ADDITIONS}],
    ids=["ray-2.0", "ray-2.x"],
)
def test_rllibs_full_model_dict_loads_and_builds(
    model: dict[str, Any], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config = _small(model)
    assert config["model"]["lstm_cell_size"] == 256 and config["model"]["dim"] == 84
    # as a params.json (JSON: null, false, lists) read back
    params = tmp_path / "params.json"
    params.write_text(json.dumps({"env": "CartPole-v1", "model": model}))
    assert PPOConfig.from_dict(json.loads(params.read_text()))["model"] == config["model"]
    with caplog.at_level(logging.WARNING, logger="runtime"):
        algo = config.build()
    try:
        assert algo.train()["timesteps_total"] == 20
    finally:
        algo.stop()
    # the keys that ask for nothing here are named in the build's one warning
    (note,) = [r.getMessage() for r in caplog.records if "no effect" in r.getMessage()]
    assert "model.lstm_use_prev_action_reward=-1" in note and "model._time_major=False" in note
    assert "lstm_cell_size" not in note and "attention_dim" not in note


#: The memory keys at other values, and what each changes in the network built.
MEMORY_KEYS: list[tuple[dict[str, Any], str, Any]] = [
    ({"use_lstm": True, "lstm_cell_size": 64}, "lstm.hidden_size", 64),
    ({"use_lstm": True, "lstm_use_prev_action": True}, "uses_prev_actions", True),
    ({"use_lstm": True, "lstm_use_prev_reward": True}, "uses_prev_rewards", True),
    ({"use_lstm": True, "lstm_use_prev_action": True}, "lstm.input_size", 256 + 2),
    ({"use_attention": True, "attention_dim": 32}, "dim", 32),
    ({"use_attention": True, "attention_num_transformer_units": 2}, "units.__len__", 2),
    ({"use_attention": True, "attention_memory_inference": 10}, "memory_inference", 10),
    ({"use_attention": True, "attention_memory_training": 12}, "memory_training", 12),
    ({"use_attention": True, "attention_use_n_prev_actions": 3}, "n_prev_actions", 3),
    ({"use_attention": True, "attention_use_n_prev_rewards": 2}, "n_prev_rewards", 2),
]


@pytest.mark.parametrize(("model", "attribute", "expected"), MEMORY_KEYS)
def test_the_memory_keys_build_what_they_name(
    model: dict[str, Any], attribute: str, expected: Any
) -> None:
    config = PPOConfig().training(model=cast(ModelConfigDict, model))
    built = ModelCatalog.get_model(Box(-1, 1, (4,)), Discrete(2), 2, dict(config["model"]))
    value: Any = built
    for part in attribute.split("."):
        value = getattr(value, part)
    assert (value() if callable(value) else value) == expected


@pytest.mark.parametrize(
    ("key", "value", "reason"),
    [
        ("_time_major", True, "batch-major"),
        ("lstm_use_prev_action_reward", True, "lstm_use_prev_action and lstm_use_prev_reward"),
    ],
)
def test_memory_switches_without_an_effect_here_are_refused_with_the_reason(
    key: str, value: Any, reason: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        PPOConfig().training(model=cast(ModelConfigDict, {key: value}))
    (issue,) = caught.value.issues
    assert issue.field == f"model.{key}" and reason in issue.problem
    with pytest.raises(ConfigError, match=rf"model\.{key}"):
        PPOConfig.from_dict({"model": {key: value}})


@pytest.mark.parametrize(
    ("key", "value", "reason"),
    [
        ("encoder_latent_dim", 32, "RLModules"),
        ("always_check_shapes", True, "RLModules"),
        ("log_std_clip_param", 5.0, "log-std"),
        # (the initializers of the layers rlconf builds act: tests/test_model_init_keys.py)
        ("post_fcnet_weights_initializer", "xavier_uniform_", "don't have"),
        ("conv_transpose_bias_initializer_config", {"val": 0.1}, "don't have"),
        ("_use_default_native_models", True, "own torch models"),
    ],
)
def test_rllib_2x_keys_at_another_value_are_refused_with_the_reason(
    key: str, value: Any, reason: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        PPOConfig().training(model=cast(ModelConfigDict, {key: value}))
    (issue,) = caught.value.issues
    assert issue.field == f"model.{key}" and reason in issue.problem
