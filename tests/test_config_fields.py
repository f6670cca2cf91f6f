"""Every reference key has one home, the reference's default, and reads back as set."""

from __future__ import annotations

import inspect

import pytest

from rlconf import A2CConfig, AlgorithmConfig, ConfigError, PGConfig, PPOConfig
from tests.reference_keys import COMMON_CONFIG_KEYS, DROPPED, MULTIAGENT_KEYS

METHODS = [
    "environment",
    "rollouts",
    "training",
    "resources",
    "evaluation",
    "exploration",
    "multi_agent",
    "callbacks",
    "fault_tolerance",
    "reporting",
    "debugging",
    "framework",
    "offline_data",
    "python_environment",
]
PYNAME = {"lambda": "lambda_", "input": "input_"}


def _owners(config_class: type[AlgorithmConfig], key: str) -> list[str]:
    name = PYNAME.get(key, key)
    return [m for m in METHODS if name in inspect.signature(getattr(config_class, m)).parameters]


@pytest.mark.parametrize(
    "key", [k for k in COMMON_CONFIG_KEYS + MULTIAGENT_KEYS if k not in DROPPED]
)
def test_every_reference_key_is_set_by_exactly_one_method(key: str) -> None:
    assert len(_owners(AlgorithmConfig, key)) == 1, _owners(AlgorithmConfig, key)


def test_issue_named_keys_exist() -> None:
    for key in [
        "evaluation_duration",
        "evaluation_duration_unit",
        "evaluation_parallel_to_training",
        "always_attach_evaluation_results",
        "custom_eval_function",
        "recreate_failed_workers",
        "restart_failed_sub_environments",
        "placement_strategy",
        "_fake_gpus",
        "custom_resources_per_worker",
        "num_cpus_for_driver",
        "env_task_fn",
        "exploration_config",
        "policies",
        "policy_mapping_fn",
        "policies_to_train",
        "count_steps_by",
    ]:
        assert len(_owners(AlgorithmConfig, key)) == 1, key


@pytest.mark.parametrize("key", sorted(DROPPED))
def test_dropped_reference_keys_are_refused_with_a_reason(key: str) -> None:
    with pytest.raises(ConfigError, match="not supported"):
        AlgorithmConfig.from_dict({key: 1})


def test_reference_defaults() -> None:
    config = AlgorithmConfig()
    expected = {
        "num_workers": 2,
        "num_envs_per_worker": 1,
        "rollout_fragment_length": 200,
        "batch_mode": "truncate_episodes",
        "gamma": 0.99,
        "lr": 0.0001,
        "train_batch_size": 200,
        "framework": "torch",
        "explore": True,
        "exploration_config": {"type": "StochasticSampling"},
        "evaluation_interval": None,
        "evaluation_duration": 10,
        "evaluation_duration_unit": "episodes",
        "evaluation_num_workers": 0,
        "observation_filter": "NoFilter",
        "num_gpus": 0,
        "num_cpus_per_worker": 1,
        # The reference's 1 is what a Tune trial reserves while it is unset; unset, the
        # learner's threads fit its network (runtime.cluster.cpu_threads).
        "num_cpus_for_driver": None,
        "placement_strategy": "PACK",
        "input": "sampler",
        # the reference's ['is', 'wis'] only acts on offline input; rlconf has no estimators
        "input_evaluation": [],
        "metrics_num_episodes_for_smoothing": 100,
        "log_level": "WARN",
        "normalize_actions": True,
        "clip_actions": False,
        "_fake_gpus": False,
        "recreate_failed_workers": False,
        "restart_failed_sub_environments": False,
        "output_max_file_size": 64 * 1024 * 1024,
    }
    for key, value in expected.items():
        assert config[key] == value, key
    assert config.to_dict()["multiagent"]["count_steps_by"] == "env_steps"
    assert config.to_dict()["multiagent"]["policies"] == {}
    assert config["model"]["fcnet_hiddens"] == [256, 256]
    assert config["model"]["vf_share_layers"] is True


def test_algorithm_defaults() -> None:
    ppo = PPOConfig()
    assert (ppo.lr, ppo.train_batch_size, ppo.sgd_minibatch_size, ppo.num_sgd_iter) == (
        5e-5,
        4000,
        128,
        30,
    )
    assert (ppo.clip_param, ppo.vf_clip_param, ppo.kl_coeff, ppo.kl_target) == (
        0.3,
        10.0,
        0.2,
        0.01,
    )
    assert ppo["lambda"] == 1.0 and ppo.lambda_ == 1.0
    assert ppo.model["vf_share_layers"] is False
    assert ppo.entropy_coeff == 0.0 and ppo.grad_clip is None and ppo.use_gae is True
    a2c = A2CConfig()
    assert (a2c.rollout_fragment_length, a2c.train_batch_size, a2c.grad_clip) == (20, 200, 40.0)
    assert (a2c.vf_loss_coeff, a2c.entropy_coeff, a2c.microbatch_size) == (0.5, 0.01, None)
    assert a2c.min_time_s_per_reporting == 10
    pg = PGConfig()
    assert (pg.num_workers, pg.lr, pg.lr_schedule) == (0, 0.0004, None)
    # The base class and the other algorithms keep their own defaults.
    assert AlgorithmConfig().lr == 0.0001 and not hasattr(pg, "clip_param")


def test_fluent_methods_return_the_config_and_values_read_back() -> None:
    config = PPOConfig()
    same = (
        config.environment("CartPole-v1", env_config={"a": 1})
        .rollouts(num_workers=0, num_envs_per_worker=8)
        .training(lr=3e-4, lambda_=0.95, model={"fcnet_hiddens": [64, 64]})
        .resources(num_gpus=0.5, num_gpus_per_worker=0.25)
        .evaluation(evaluation_interval=1, evaluation_duration="auto")
        .exploration(explore=False)
        .multi_agent(count_steps_by="agent_steps")
        .fault_tolerance(recreate_failed_workers=True)
        .reporting(min_time_s_per_reporting=1.5)
        .debugging(seed=7, log_level="INFO")
        .framework("torch")
        .offline_data(input_="/tmp/*.json", output="logdir")
        .python_environment(extra_python_environs_for_worker={"OMP_NUM_THREADS": "1"})
    )
    assert same is config
    assert config.env == "CartPole-v1" and config["env_config"] == {"a": 1}
    assert config.num_envs_per_worker == 8 and config["lambda"] == 0.95
    assert config.model["fcnet_hiddens"] == [64, 64]
    assert config.model["fcnet_activation"] == "tanh"  # a partial model dict updates
    assert config.num_gpus == 0.5 and config["num_gpus_per_worker"] == 0.25
    assert config.input_ == "/tmp/*.json" and config["input"] == "/tmp/*.json"
    assert config["multiagent"]["count_steps_by"] == "agent_steps"
    assert config.get("nope", 3) == 3 and "lr" in config and "nope" not in config


def test_unknown_attribute_read_suggests_a_name() -> None:
    with pytest.raises(AttributeError, match="'lr'"):
        _ = PPOConfig().lrr
    with pytest.raises(KeyError, match="lr"):
        _ = PPOConfig()["lrr"]


def test_exploration_config_type_change_replaces_and_same_type_updates() -> None:
    config = AlgorithmConfig().exploration(
        exploration_config={"type": "EpsilonGreedy", "initial_epsilon": 0.5}
    )
    config.exploration(exploration_config={"final_epsilon": 0.01})
    assert config.exploration_config == {
        "type": "EpsilonGreedy",
        "initial_epsilon": 0.5,
        "final_epsilon": 0.01,
    }
    config.exploration(exploration_config={"type": "SoftQ"})
    assert config.exploration_config == {"type": "SoftQ"}


@pytest.mark.parametrize("config_class", [AlgorithmConfig, PPOConfig, PGConfig, A2CConfig])
def test_defaults_are_valid_and_already_in_validated_form(
    config_class: type[AlgorithmConfig],
) -> None:
    from rlconf.frozen import thaw

    for key, default in config_class._class_defaults().items():
        section = config_class._info().section_of_key[key]
        name = PYNAME.get(key, key)
        validated = section.adapter.validate_python({name: thaw(default)})[name]
        assert repr(validated) == repr(thaw(default)), key
    config_class().validate()
