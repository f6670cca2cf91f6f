"""Config files and code written for the reference: its "off" switches are accepted (and named
in a warning at build), item assignment validates like attribute assignment, and
``rollout_fragment_length="auto"`` resolves as in the reference 2.x."""

from __future__ import annotations

import inspect
import logging
import typing
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from rlconf import A2CConfig, ConfigError, PGConfig, PPOConfig
from rlconf.experiment import load_experiments
from rlconf.inert_keys import INERT_KEYS, INERT_MODEL_KEYS
from rlconf.model_config import ModelConfigDict

#: What a config file written for RLlib 2.x typically carries; none of it asks for anything.
OFF_SWITCHES: dict[str, Any] = {
    "eager_tracing": False,
    "eager_max_retraces": 20,
    "tf_session_args": {
        "intra_op_parallelism_threads": 2,
        "inter_op_parallelism_threads": 2,
        "gpu_options": {"allow_growth": True},
        "log_device_placement": False,
        "device_count": {"CPU": 1},
        "allow_soft_placement": True,
    },
    "local_tf_session_args": {"intra_op_parallelism_threads": 8, "inter_op_parallelism_threads": 8},
    "enable_connectors": False,
    "_enable_rl_module_api": False,
    "_enable_learner_api": False,
    "_disable_execution_plan_api": True,
    "model": {
        "_time_major": False,
        "_disable_preprocessor_api": False,
        "custom_preprocessor": None,
    },
}


def _small(config: Any) -> Any:
    return (
        config.environment("CartPole-v1")
        .rollouts(num_workers=0, rollout_fragment_length=10)
        .training(train_batch_size=20, model={"fcnet_hiddens": [8]})
    )


# ------------------------------------------------------------------ inert reference keys


def test_off_switches_are_accepted_and_kept_on_every_dict_path(tmp_path: Path) -> None:
    config = PPOConfig.from_dict(OFF_SWITCHES)
    expected = {k: v for k, v in OFF_SWITCHES.items() if k != "model"}
    expected.update({f"model.{k}": v for k, v in OFF_SWITCHES["model"].items()})
    assert config.inert_settings() == expected
    assert config["eager_tracing"] is False and config.enable_connectors is False
    assert config.model["_time_major"] is False
    assert PPOConfig().update_from_dict(OFF_SWITCHES) == config
    # they don't vanish: to_dict(), JSON and pickling give them back
    assert PPOConfig.from_dict(config.to_dict()) == config
    assert PPOConfig.from_json(config.to_json()) == config
    assert config.copy() == config and config != PPOConfig()
    path = tmp_path / "exp.yaml"
    path.write_text(
        "cartpole:\n  run: PPO\n  env: CartPole-v1\n  stop: {training_iteration: 1}\n"
        "  config: {eager_tracing: false, enable_connectors: false, model: {_time_major: false}}\n"
    )
    (experiment,) = load_experiments(path)
    assert experiment.config.inert_settings() == {
        "eager_tracing": False,
        "enable_connectors": False,
        "model._time_major": False,
    }


def test_off_switches_are_accepted_as_keywords_of_their_method_and_by_assignment() -> None:
    config = PPOConfig()
    config.framework("torch", eager_tracing=False)  # type: ignore[call-arg]
    config.rollouts(enable_connectors=False)  # type: ignore[call-arg]
    config.training(_enable_learner_api=False, model={"_time_major": False})  # type: ignore[call-arg]
    config["_enable_rl_module_api"] = False
    assert set(config.inert_settings()) == {
        "eager_tracing",
        "enable_connectors",
        "_enable_learner_api",
        "_enable_rl_module_api",
        "model._time_major",
    }
    with pytest.raises(ConfigError, match=r"eager_tracing: is accepted by PPOConfig\.framework"):
        config.rollouts(eager_tracing=False)  # type: ignore[call-arg]
    evaluation = PPOConfig.overrides(eager_tracing=False)
    assert evaluation == {"eager_tracing": False}


@pytest.mark.parametrize(
    ("given", "field", "reason"),
    [
        ({"eager_tracing": True}, "eager_tracing", "TensorFlow-only"),
        (
            {"evaluation_force_reset_envs_before_iteration": False},
            "evaluation_force_reset_envs_before_iteration",
            "fresh episodes",
        ),
        ({"_enable_learner_api": 1}, "_enable_learner_api", "learner group"),
        ({"tf_session_args": {"intra_op_parallelism_threads": 4}}, "tf_session_args", "torch"),
        ({"model": {"_time_major": True}}, "model._time_major", "batch-major"),
        ({"model": {"custom_preprocessor": "mine"}}, "model.custom_preprocessor", "wrapper"),
    ],
)
def test_values_that_ask_for_something_are_refused_with_the_reason(
    given: dict[str, Any], field: str, reason: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        PPOConfig.from_dict(given)
    (issue,) = caught.value.issues
    assert issue.field == field and reason in issue.problem
    assert "not supported" in issue.problem


@pytest.mark.parametrize(
    ("key", "replacement"),
    [
        ("timesteps_per_iteration", "min_sample_timesteps_per_reporting"),
        ("evaluation_num_episodes", "evaluation_duration"),
        ("collect_metrics_timeout", "metrics_episode_collection_timeout_s"),
    ],
)
def test_deprecated_keys_still_name_the_key_to_use(key: str, replacement: str) -> None:
    with pytest.raises(ConfigError, match=f"use {replacement}"):
        PPOConfig.from_dict({key: 1})


def test_every_inert_key_names_a_reason_and_an_existing_method() -> None:
    methods = set(PPOConfig._sections)
    for key, inert in {**INERT_KEYS, **INERT_MODEL_KEYS}.items():
        assert inert.why and inert.accepted, key
        assert inert.method is None or inert.method in methods, key
    assert set(INERT_MODEL_KEYS) <= set(typing.get_type_hints(ModelConfigDict))


def test_json_schema_takes_the_off_switches_and_refuses_the_rest() -> None:
    schema = PPOConfig.json_schema()
    jsonschema.validate({"eager_tracing": False, "model": {"use_lstm": False}}, schema)
    validator = jsonschema.Draft202012Validator(schema)
    assert not validator.is_valid({"eager_tracing": True})
    assert not validator.is_valid({"model": {"_time_major": True}})
    assert "has no effect" in schema["properties"]["enable_connectors"]["description"]


def test_build_names_every_off_switch_in_one_warning(caplog: pytest.LogCaptureFixture) -> None:
    config = _small(PGConfig()).update_from_dict(
        {"eager_tracing": False, "model": {"_time_major": False}}
    )
    with caplog.at_level(logging.WARNING, logger="runtime"):
        algo = config.build()
    algo.stop()
    (record,) = [r for r in caplog.records if "no effect" in r.getMessage()]
    assert "eager_tracing=False" in record.getMessage()
    assert "model._time_major=False" in record.getMessage()
    assert "\n" not in record.getMessage()
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="runtime"):
        _small(PGConfig()).build().stop()
    assert not [r for r in caplog.records if "no effect" in r.getMessage()]


# ------------------------------------------------------------------ item assignment


def test_item_assignment_validates_and_sets_like_attribute_assignment() -> None:
    config = PPOConfig()
    config["num_workers"] = 1
    config["lambda"] = 0.9
    config["multiagent"] = {"count_steps_by": "agent_steps"}
    config["evaluation_config"] = {"explore": False}
    assert config.num_workers == 1 and config.lambda_ == 0.9
    assert config["multiagent"]["count_steps_by"] == "agent_steps"
    assert config == PPOConfig().update_from_dict(
        {
            "num_workers": 1,
            "lambda": 0.9,
            "multiagent": {"count_steps_by": "agent_steps"},
            "evaluation_config": {"explore": False},
        }
    )
    with pytest.raises(ConfigError, match=r"(?s)PPOConfig\['num_wrkers'\].*did you mean 'num_w"):
        config["num_wrkers"] = 1
    with pytest.raises(ConfigError, match=r"num_workers=-1 .*>= 0"):
        config["num_workers"] = -1
    with pytest.raises(ConfigError, match=r"evaluation_config\.expolre"):
        config["evaluation_config"] = {"expolre": False}
    with pytest.raises(ConfigError, match=r"clip_param.*PPOConfig setting"):
        PGConfig()["clip_param"] = 0.2
    assert config.num_workers == 1
    config.freeze()
    with pytest.raises(ConfigError, match="frozen"):
        config["lr"] = 1e-3


# ------------------------------------------------------------------ rollout_fragment_length


def test_auto_fragment_length_fills_one_train_batch_per_round() -> None:
    config = PPOConfig().rollouts(
        rollout_fragment_length="auto", num_workers=2, num_envs_per_worker=3
    )
    config.training(train_batch_size=100)
    assert config.get_rollout_fragment_length() == 17  # ceil(100 / 2 / 3)
    config.rollouts(num_workers=0)
    assert config.get_rollout_fragment_length() == 34  # ceil(100 / 1 / 3)
    config.rollouts(rollout_fragment_length=25)
    assert config.get_rollout_fragment_length() == 25
    # "auto" is never longer than a train batch
    A2CConfig().rollouts(rollout_fragment_length="auto").training(train_batch_size=1).validate()


def test_auto_fragment_length_on_every_path(tmp_path: Path) -> None:
    annotation = inspect.signature(PPOConfig.rollouts).parameters["rollout_fragment_length"]
    assert "auto" in repr(annotation.annotation)
    schema = PPOConfig.json_schema()
    jsonschema.validate({"rollout_fragment_length": "auto"}, schema)
    assert not jsonschema.Draft202012Validator(schema).is_valid({"rollout_fragment_length": "x"})
    assert PPOConfig.from_dict({"rollout_fragment_length": "auto"}).rollout_fragment_length == (
        "auto"
    )
    path = tmp_path / "auto.yaml"
    path.write_text(
        "auto:\n  run: A2C\n  env: CartPole-v1\n  stop: {training_iteration: 1}\n"
        "  config: {rollout_fragment_length: auto, train_batch_size: 50}\n"
    )
    (experiment,) = load_experiments(path)
    assert experiment.config.get_rollout_fragment_length() == 25  # 2 workers by default
    with pytest.raises(ConfigError, match="rollout_fragment_length"):
        PPOConfig().rollouts(rollout_fragment_length="sometimes")  # type: ignore[arg-type]


def test_auto_fragment_length_is_what_the_workers_sample() -> None:
    config = _small(PGConfig()).rollouts(rollout_fragment_length="auto", num_envs_per_worker=2)
    algo = config.build()
    try:
        batch = algo.workers.local_worker().sample()
        assert len(batch) == 20  # 2 sub-envs x ceil(20 / 1 / 2) steps
        assert algo.train()["timesteps_this_iter"] == 20
    finally:
        algo.stop()
