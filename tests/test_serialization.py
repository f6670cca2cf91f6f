"""to_dict / from_dict / JSON round trips, and the JSON Schema of every config."""

from __future__ import annotations

import json
import math

import jsonschema
import pytest
from gymnasium import spaces

from rlconf import (
    A2CConfig,
    AlgorithmConfig,
    ConfigError,
    PGConfig,
    PolicySpec,
    PPOConfig,
    get_config_class,
)
from tests import user_objects
from tests.reference_keys import MULTIAGENT_KEYS


def _rich_config() -> PPOConfig:
    box = spaces.Box(-1.0, 1.0, shape=(3,))
    return (
        PPOConfig()
        .environment(
            user_objects.MyEnv,
            env_config={"level": 3, "nested": {"x": [1, 2]}},
            env_task_fn=user_objects.curriculum,
            clip_rewards=5.0,
        )
        .callbacks(user_objects.MyCallbacks)
        .training(
            lr=3e-4,
            lambda_=0.9,
            lr_schedule=[[0, 1e-3], [1000, 1e-4]],
            model={"fcnet_hiddens": [32], "custom_model_config": {"k": (1, 2)}},
        )
        .evaluation(
            evaluation_interval=2,
            custom_eval_function=user_objects.custom_eval,
            evaluation_config=PPOConfig.overrides(explore=False),
        )
        .multi_agent(
            policies={
                "p0": PolicySpec(
                    observation_space=box, action_space=spaces.Discrete(2), config={"gamma": 0.5}
                ),
                "p1": None,
            },
            policy_mapping_fn=user_objects.mapping,
            policies_to_train=["p0"],
        )
        .exploration(exploration_config={"type": "EpsilonGreedy", "final_epsilon": 0.02})
        .reporting(metrics_episode_collection_timeout_s=1e9)
    )


def test_to_dict_is_the_flat_reference_dict() -> None:
    data = PPOConfig().training(lambda_=0.8).to_dict()
    assert data["lambda"] == 0.8 and "lambda_" not in data
    assert data["input"] == "sampler"
    assert set(data["multiagent"]) == set(MULTIAGENT_KEYS)
    assert "policies" not in data


def test_from_dict_keeps_the_subclass_and_its_fields() -> None:
    original = PPOConfig().training(clip_param=0.1, num_sgd_iter=3)
    again = PPOConfig.from_dict(original.to_dict())
    assert type(again) is PPOConfig and again == original
    assert again.clip_param == 0.1
    assert type(A2CConfig.from_dict({"microbatch_size": 8})) is A2CConfig
    assert PGConfig.from_dict({"lr_schedule": [[0, 0.1]]}).lr_schedule == [[0, 0.1]]


def test_from_dict_accepts_partial_dicts_and_nested_multiagent() -> None:
    config = PPOConfig.from_dict(
        {"lr": 1e-3, "multiagent": {"policies": ["a"], "policies_to_train": ["a"]}}
    )
    assert config.lr == 1e-3 and set(config.policies) == {"a"}


def test_json_round_trip_is_lossless() -> None:
    original = _rich_config()
    text = original.to_json()
    json.loads(text)  # valid JSON
    again = PPOConfig.from_json(text)
    assert type(again) is PPOConfig
    assert again == original
    assert again.env is user_objects.MyEnv
    assert again["callbacks"] is user_objects.MyCallbacks
    assert again.callbacks_class is user_objects.MyCallbacks
    assert again.policies["p0"].observation_space == original.policies["p0"].observation_space
    assert again.model["custom_model_config"]["k"] == (1, 2)
    # The base class dispatches on the stored algorithm name.
    assert type(AlgorithmConfig.from_json(text)) is PPOConfig
    assert again.to_json() == text


def test_non_finite_floats_survive_json() -> None:
    config = AlgorithmConfig().environment(env_config={"limit": math.inf})
    text = config.to_json()
    assert "Infinity" not in text
    assert AlgorithmConfig.from_json(text).env_config["limit"] == math.inf


def _local_function_config() -> AlgorithmConfig:
    def local(*args: object) -> str:
        return "p"

    return AlgorithmConfig().multi_agent(policy_mapping_fn=local)


def test_unnameable_callables_are_a_clear_error() -> None:
    with pytest.raises(ConfigError, match="lambda"):
        AlgorithmConfig().environment(env_task_fn=lambda *a: 0).to_json()
    with pytest.raises(ConfigError, match=r"policy_mapping_fn.*inside a function"):
        _local_function_config().to_json()


def test_from_json_rejects_bad_input() -> None:
    with pytest.raises(ConfigError, match="not valid JSON"):
        PPOConfig.from_json("{")
    with pytest.raises(ConfigError, match="lrr"):
        PPOConfig.from_json('{"lrr": 1}')
    with pytest.raises(ConfigError, match="PGConfig"):
        PPOConfig.from_json(PGConfig().to_json())


def test_import_path_strings_are_accepted_for_classes_and_functions() -> None:
    config = (
        AlgorithmConfig()
        .callbacks("tests.user_objects:MyCallbacks")
        .environment(env_task_fn="tests.user_objects.curriculum")
    )
    assert config["callbacks"] is user_objects.MyCallbacks
    assert config.env_task_fn is user_objects.curriculum


@pytest.mark.parametrize("config_class", [AlgorithmConfig, PPOConfig, PGConfig, A2CConfig])
def test_json_schema_is_valid_and_describes_the_json_form(
    config_class: type[AlgorithmConfig],
) -> None:
    schema = config_class.json_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    validator.validate(json.loads(config_class().to_json()))
    assert schema["properties"]["lr"]["description"].startswith("Learning rate.")
    assert schema["properties"]["lr"]["default"] == config_class().lr
    assert "policies" in schema["properties"]["multiagent"]["properties"]
    assert not validator.is_valid({"num_wrkers": 1})
    assert not validator.is_valid({"lr": "abc"})
    assert not validator.is_valid({"multiagent": {"count_steps_by": "x"}})


def test_rich_json_validates_against_the_schema() -> None:
    schema = PPOConfig.json_schema()
    jsonschema.Draft202012Validator(schema).validate(json.loads(_rich_config().to_json()))
    assert "lambda" in schema["properties"] and "clip_param" in schema["properties"]


def test_registry() -> None:
    assert get_config_class("PPO") is PPOConfig
    assert get_config_class("PG") is PGConfig and get_config_class("A2C") is A2CConfig
    with pytest.raises(ConfigError, match="did you mean 'PPO'"):
        get_config_class("PP0")
