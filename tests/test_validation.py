"""Bad input fails at the call that gives it, with a message that says what is wrong."""

from __future__ import annotations

import pytest

from rlconf import AlgorithmConfig, ConfigError, PolicySpec, PPOConfig


def test_setter_error_names_class_method_field_value_and_allowed() -> None:
    with pytest.raises(ConfigError) as info:
        PPOConfig().training(lr="abc")  # type: ignore[arg-type]
    text = str(info.value)
    assert "PPOConfig.training()" in text
    assert "lr='abc'" in text and "float > 0" in text
    assert isinstance(info.value, ValueError)
    assert [issue.field for issue in info.value.issues] == ["lr"]


def test_every_error_of_a_call_is_reported() -> None:
    with pytest.raises(ConfigError) as info:
        PPOConfig().training(lr=-1.0, gamma=2.0, clip_param="x", lrr=1, num_workers=1)  # type: ignore[arg-type, call-arg]
    fields = {issue.field for issue in info.value.issues}
    assert fields == {"lr", "gamma", "clip_param", "lrr", "num_workers"}
    text = str(info.value)
    assert "5 invalid settings" in text
    assert "did you mean 'lr'" in text
    assert "is set by PPOConfig.rollouts()" in text


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda c: c.rollouts(num_workers=-1), "num_workers"),
        (lambda c: c.rollouts(num_workers="2"), "num_workers"),
        (lambda c: c.rollouts(num_workers=2.0), "num_workers"),
        (lambda c: c.rollouts(num_workers=True), "num_workers"),
        (lambda c: c.rollouts(batch_mode="episodes"), "batch_mode"),
        (lambda c: c.training(lr=float("nan")), "lr"),
        (lambda c: c.training(model={"fcnet_hiddens": [64, "x"]}), "model.fcnet_hiddens.1"),
        (lambda c: c.training(model={"fcnet_hidens": [64]}), "model.fcnet_hidens"),
        (lambda c: c.training(model={"max_seq_len": 0}), "model.max_seq_len"),
        (lambda c: c.resources(num_gpus=-0.5), "num_gpus"),
        (lambda c: c.resources(placement_strategy="PACKED"), "placement_strategy"),
        (
            lambda c: c.resources(custom_resources_per_worker={"tpu": -1}),
            "custom_resources_per_worker.tpu",
        ),
        (lambda c: c.evaluation(evaluation_duration=0), "evaluation_duration"),
        (lambda c: c.evaluation(evaluation_duration="forever"), "evaluation_duration"),
        (lambda c: c.evaluation(evaluation_duration_unit="steps"), "evaluation_duration_unit"),
        (lambda c: c.evaluation(custom_eval_function=3), "custom_eval_function"),
        (lambda c: c.framework("tf"), "framework"),
        (lambda c: c.multi_agent(count_steps_by="steps"), "count_steps_by"),
        (lambda c: c.multi_agent(policies=[1, 2]), "policies"),
        (lambda c: c.environment(env=3), "env"),
        (lambda c: c.environment(observation_space="Box"), "observation_space"),
        (lambda c: c.callbacks("no_such_module:Callbacks"), "callbacks"),
        (lambda c: c.exploration(exploration_config={"type": "Nope"}), "exploration_config"),
        (
            lambda c: c.exploration(exploration_config={"type": "EpsilonGreedy", "eps": 1}),
            "exploration_config",
        ),
        (
            lambda c: c.exploration(
                exploration_config={"type": "StochasticSampling", "random_timesteps": -1}
            ),
            "exploration_config",
        ),
        (lambda c: c.training(lr_schedule=[[100, 1e-3], [0, 1e-4]]), "lr_schedule"),
        (lambda c: c.debugging(log_level="LOUD"), "log_level"),
    ],
)
def test_wrong_values_fail_at_the_setter(call, field) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ConfigError) as info:
        call(PPOConfig())
    assert [issue.field for issue in info.value.issues] == [field]


def test_tensorflow_is_refused_with_a_reason() -> None:
    with pytest.raises(ConfigError, match="TensorFlow"):
        PPOConfig().framework("tf2")  # type: ignore[arg-type]


def test_a_failed_call_changes_nothing() -> None:
    config = PPOConfig()
    with pytest.raises(ConfigError):
        config.training(lr=1e-3, gamma=5.0)
    assert config.lr == 5e-5
    with pytest.raises(ConfigError):
        config.update_from_dict({"lr": 1e-3, "num_wrkers": 1})
    assert config.lr == 5e-5


def test_unknown_keys_are_refused_on_every_path() -> None:
    with pytest.raises(ConfigError, match="num_wrkers"):
        PPOConfig.from_dict({"num_wrkers": 1})
    with pytest.raises(ConfigError, match="num_wrkers"):
        PPOConfig().update_from_dict({"num_wrkers": 1})
    with pytest.raises(ConfigError, match="expolre"):
        PPOConfig.overrides(expolre=False)
    with pytest.raises(ConfigError, match=r"evaluation_config\.expolre"):
        PPOConfig().evaluation(evaluation_config={"expolre": False})
    with pytest.raises(ConfigError, match=r"multiagent\.polices"):
        PPOConfig.from_dict({"multiagent": {"polices": ["a"]}})
    with pytest.raises(ConfigError, match="lrr"):
        PPOConfig().lrr = 1.0
    with pytest.raises(ConfigError, match=r"clip_param.*PPOConfig setting"):
        AlgorithmConfig.from_dict({"clip_param": 0.2})


def test_overrides_validate_values_and_feed_evaluation_config() -> None:
    overrides = PPOConfig.overrides(explore=False, env_config={"level": 2}, lambda_=0.9)
    assert overrides == {"explore": False, "env_config": {"level": 2}, "lambda": 0.9}
    config = PPOConfig().evaluation(evaluation_config=overrides)
    assert config.evaluation_config == overrides
    with pytest.raises(ConfigError, match=r"evaluation_config\.explore='no'"):
        PPOConfig().evaluation(evaluation_config={"explore": "no"})
    with pytest.raises(ConfigError, match="gamma"):
        PPOConfig.overrides(gamma=3)
    with pytest.raises(ConfigError, match="evaluation_config"):
        PPOConfig.overrides(evaluation_config={})


def test_attribute_assignment_is_validated_like_a_setter() -> None:
    config = PPOConfig()
    config.lr = 1e-3
    config.lambda_ = 0.9
    assert config.lr == 1e-3 and config["lambda"] == 0.9
    with pytest.raises(ConfigError, match="lr='abc'"):
        config.lr = "abc"
    assert config.lr == 1e-3


def test_validate_reports_every_cross_field_violation() -> None:
    config = (
        PPOConfig()
        .training(train_batch_size=100, sgd_minibatch_size=500)
        .rollouts(rollout_fragment_length=200)
        .evaluation(evaluation_duration="auto", evaluation_parallel_to_training=False)
        .multi_agent(policies={"a", "b"}, policies_to_train=["c"])
    )
    with pytest.raises(ConfigError) as info:
        config.validate()
    fields = [issue.field for issue in info.value.issues]
    assert "PPOConfig.validate()" in str(info.value)
    assert set(fields) == {
        "train_batch_size",
        "sgd_minibatch_size",
        "evaluation_duration",
        "policies_to_train",
        "policy_mapping_fn",
    }


def test_parallel_evaluation_needs_remote_evaluation_workers() -> None:
    config = PPOConfig().evaluation(evaluation_parallel_to_training=True, evaluation_num_workers=0)
    with pytest.raises(ConfigError, match="evaluation_num_workers > 0"):
        config.validate()
    config.evaluation(evaluation_num_workers=2, evaluation_duration="auto").validate()


def test_use_gae_false_needs_complete_episodes() -> None:
    with pytest.raises(ConfigError, match="complete_episodes"):
        PPOConfig().training(use_gae=False).validate()
    PPOConfig().training(use_gae=False).rollouts(batch_mode="complete_episodes").validate()


def test_policies_forms_and_policy_spec_configs() -> None:
    config = AlgorithmConfig().multi_agent(
        policies=["a", "b"], policy_mapping_fn=lambda aid, *a, **k: "a"
    )
    assert config.policies == {"a": PolicySpec(), "b": PolicySpec()}
    config.multi_agent(
        policies={"a": PolicySpec(config={"gamma": 0.5}), "b": None}, policies_to_train=["a"]
    )
    config.validate()
    assert config.policies["a"].config == {"gamma": 0.5}
    with pytest.raises(ConfigError, match=r"policies\.a\.config\.gama"):
        config.multi_agent(policies={"a": PolicySpec(config={"gama": 0.5})})


def test_frozen_config_refuses_every_change() -> None:
    config = PPOConfig().training(model={"fcnet_hiddens": [32]}).freeze()
    assert config.is_frozen
    with pytest.raises(ConfigError, match="frozen"):
        config.training(lr=1e-3)
    with pytest.raises(ConfigError, match="frozen"):
        config.lr = 1e-3
    with pytest.raises(ConfigError, match="frozen"):
        config.update_from_dict({"lr": 1e-3})
    with pytest.raises(ConfigError):
        config.model["fcnet_hiddens"] = [1]
    with pytest.raises(ConfigError):
        config.model["fcnet_hiddens"].append(1)
    with pytest.raises(ConfigError):
        config["env_config"]["x"] = 1
    assert config.model["fcnet_hiddens"] == [32]


def test_freeze_runs_validate() -> None:
    with pytest.raises(ConfigError, match="train_batch_size"):
        PPOConfig().training(train_batch_size=10).freeze()


def test_copy_is_an_independent_unfrozen_deep_copy() -> None:
    original = PPOConfig().environment(env_config={"a": [1]}).freeze()
    clone = original.copy()
    assert not clone.is_frozen and clone == original
    clone.training(lr=1e-2).environment(env_config={"a": [2]})
    assert original.lr == 5e-5 and original.env_config == {"a": [1]}
    plain = original.to_dict()
    plain["env_config"]["a"].append(3)
    assert original.env_config == {"a": [1]}


def test_gae_needs_the_critic() -> None:
    from rlconf import A2CConfig

    for config_class in (PPOConfig, A2CConfig):
        with pytest.raises(ConfigError, match="use_critic"):
            config_class().training(use_critic=False).validate()
        config_class().training(use_critic=False, use_gae=False).rollouts(
            batch_mode="complete_episodes"
        ).validate()
