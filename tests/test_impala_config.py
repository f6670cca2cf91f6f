"""``IMPALAConfig`` and ``APPOConfig`` (config only, no runtime import): the reference's keys and
defaults of the RLlib 2.3-2.5 era, each key's validation, the checks between keys, the fluent
methods' signatures, APPO extending IMPALA, the dict round trip, and RLlib's CartPole tuned
files of both loading as written."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest

import rlconf
import rlconf.algorithms
from rlconf import APPOConfig, ConfigError, IMPALAConfig, get_config_class
from rlconf.cli import main
from rlconf.experiment import Overrides, load_experiments
from rlconf.registry import algorithm_class_path, list_algorithms

TUNED = Path(__file__).parent / "data" / "rllib_tuned"

#: IMPALA's training keys and their defaults (RLlib 2.3-2.5 ``ImpalaConfig.__init__``).
IMPALA_TRAINING_DEFAULTS: dict[str, Any] = {
    "vtrace": True,
    "vtrace_clip_rho_threshold": 1.0,
    "vtrace_clip_pg_rho_threshold": 1.0,
    "vtrace_drop_last_ts": True,
    "num_multi_gpu_tower_stacks": 1,
    "minibatch_buffer_size": 1,
    "num_sgd_iter": 1,
    "replay_proportion": 0.0,
    "replay_buffer_num_slots": 0,
    "learner_queue_size": 16,
    "learner_queue_timeout": 300,
    "max_sample_requests_in_flight_per_worker": 2,
    "broadcast_interval": 1,
    "num_aggregation_workers": 0,
    "grad_clip": 40.0,
    "opt_type": "adam",
    "lr": 0.0005,
    "lr_schedule": None,
    "decay": 0.99,
    "momentum": 0.0,
    "epsilon": 0.1,
    "vf_loss_coeff": 0.5,
    "entropy_coeff": 0.01,
    "entropy_coeff_schedule": None,
    "_separate_vf_optimizer": False,
    "_lr_vf": 0.0005,
    "after_train_step": None,
}

#: The section defaults IMPALA changes (num_gpus stays rlconf's 0, not the reference's 1).
IMPALA_OTHER_DEFAULTS: dict[str, Any] = {
    "rollout_fragment_length": 50,
    "train_batch_size": 500,
    "num_workers": 2,
    "min_time_s_per_reporting": 10,
    "num_gpus": 0,
    "gamma": 0.99,
    "exploration_config": {"type": "StochasticSampling"},
}

#: APPO's own keys (RLlib 2.3-2.5 ``APPOConfig.__init__``).
APPO_TRAINING_DEFAULTS: dict[str, Any] = {
    "use_critic": True,
    "use_gae": True,
    "lambda": 1.0,
    "clip_param": 0.4,
    "use_kl_loss": False,
    "kl_coeff": 1.0,
    "kl_target": 0.01,
    "tau": 1.0,
    "target_update_frequency": 1,
    # RLlib's new API stack's period of the target (None: target_update_frequency decides)
    "target_network_update_freq": None,
}


# ---------------------------------------------------------------------------- defaults


def test_impala_has_the_references_defaults() -> None:
    config = IMPALAConfig()
    expected = {**IMPALA_TRAINING_DEFAULTS, **IMPALA_OTHER_DEFAULTS}
    assert {key: config[key] for key in expected} == expected
    # RLlib 2.x's name of min_time_s_per_reporting reads the same value.
    assert config["min_time_s_per_iteration"] == 10
    assert not set(APPO_TRAINING_DEFAULTS) & set(IMPALAConfig.field_names())


def test_appo_has_the_references_defaults() -> None:
    config = APPOConfig()
    expected = {
        **IMPALA_TRAINING_DEFAULTS,
        **IMPALA_OTHER_DEFAULTS,
        **APPO_TRAINING_DEFAULTS,
        # APPO's one change to IMPALA's values: replay slots (replay stays off at proportion 0).
        "replay_buffer_num_slots": 100,
    }
    assert {key: config[key] for key in expected} == expected


def test_both_are_registered_with_their_runtime_classes() -> None:
    assert {"IMPALA", "APPO"} <= set(list_algorithms())
    assert get_config_class("IMPALA") is IMPALAConfig
    assert get_config_class("APPO") is APPOConfig
    assert IMPALAConfig.algo_name == "IMPALA" and APPOConfig.algo_name == "APPO"
    assert algorithm_class_path("IMPALA") == "runtime.algorithms.impala:IMPALA"
    assert algorithm_class_path("APPO") == "runtime.algorithms.appo:APPO"
    assert rlconf.IMPALAConfig is rlconf.algorithms.IMPALAConfig is IMPALAConfig
    assert rlconf.APPOConfig is rlconf.algorithms.APPOConfig is APPOConfig


def test_the_configs_need_neither_torch_nor_the_runtime() -> None:
    code = (
        "import sys, rlconf; "
        "rlconf.APPOConfig().training(vtrace=False).validate(); rlconf.IMPALAConfig().freeze(); "
        "assert not {'torch', 'ray', 'runtime'} & set(sys.modules), sorted(sys.modules)"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# ---------------------------------------------------------------------------- APPO extends IMPALA


def test_appo_extends_impalas_keys() -> None:
    assert issubclass(APPOConfig, IMPALAConfig)
    impala_keys = IMPALAConfig.field_names()
    appo_keys = APPOConfig.field_names()
    assert set(impala_keys) < set(appo_keys)
    assert set(appo_keys) - set(impala_keys) == set(APPO_TRAINING_DEFAULTS)
    config = APPOConfig().training(
        vtrace_clip_rho_threshold=2.0, opt_type="rmsprop", clip_param=0.2, lambda_=0.95
    )
    assert config["vtrace_clip_rho_threshold"] == 2.0 and config["opt_type"] == "rmsprop"
    assert config["clip_param"] == 0.2 and config["lambda"] == 0.95
    # IMPALA's checks hold in APPO too.
    with pytest.raises(ConfigError, match="num_aggregation_workers=3"):
        APPOConfig().training(num_aggregation_workers=3).validate()


def test_the_shared_keys_have_the_same_descriptions_as_in_the_other_configs() -> None:
    from rlconf import A2CConfig, PPOConfig

    def description(cls: type[rlconf.AlgorithmConfig], name: str) -> str:
        return cls._sections["training"].description(name)

    for name in ("vf_loss_coeff", "entropy_coeff", "entropy_coeff_schedule", "lr_schedule"):
        assert description(IMPALAConfig, name) == description(A2CConfig, name) != ""
    assert description(IMPALAConfig, "grad_clip") == description(PPOConfig, "grad_clip")
    for name in ("use_critic", "use_gae", "lambda_", "kl_coeff", "kl_target"):
        assert description(APPOConfig, name) == description(PPOConfig, name) != ""


@pytest.mark.parametrize("cls", [IMPALAConfig, APPOConfig], ids=lambda c: c.__name__)
def test_every_training_key_says_what_it_does(cls: type[IMPALAConfig]) -> None:
    section = cls._sections["training"]
    for name in section.names:
        assert len(section.description(name)) > 10, name


# ---------------------------------------------------------------------------- one key at a time


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("vtrace", "yes"),
        ("vtrace", 1),
        ("vtrace_clip_rho_threshold", 0.0),
        ("vtrace_clip_rho_threshold", "1"),
        ("vtrace_clip_pg_rho_threshold", -1.0),
        ("vtrace_drop_last_ts", None),
        ("num_multi_gpu_tower_stacks", 0),
        ("num_multi_gpu_tower_stacks", 1.5),
        ("minibatch_buffer_size", 0),
        ("num_sgd_iter", 0),
        ("replay_proportion", -0.5),
        ("replay_buffer_num_slots", -1),
        ("replay_buffer_num_slots", 2.0),
        ("learner_queue_size", 0),
        ("learner_queue_timeout", 0),
        ("learner_queue_timeout", float("inf")),
        ("max_sample_requests_in_flight_per_worker", 0),
        ("broadcast_interval", 0),
        ("num_aggregation_workers", -1),
        ("grad_clip", 0.0),
        ("grad_clip", -40.0),
        ("opt_type", "sgd"),
        ("opt_type", "Adam"),
        ("lr", 0.0),
        ("lr_schedule", [[0, 1e-3], [10]]),
        ("lr_schedule", [[10, 1e-3], [0, 1e-4]]),
        ("decay", 1.5),
        ("decay", -0.1),
        ("momentum", -0.1),
        ("epsilon", 0.0),
        ("vf_loss_coeff", -0.5),
        ("entropy_coeff", -0.01),
        ("entropy_coeff_schedule", [[0, 0.01, 3]]),
        ("_separate_vf_optimizer", "true"),
        ("_lr_vf", 0.0),
        ("after_train_step", 3),
        ("after_train_step", "os:no_such_function"),
    ],
)
@pytest.mark.parametrize("cls", [IMPALAConfig, APPOConfig], ids=lambda c: c.__name__)
def test_a_bad_value_is_refused_with_its_key_named(
    cls: type[IMPALAConfig], key: str, value: Any
) -> None:
    with pytest.raises(ConfigError) as info:
        cls().training(**{key: value})
    assert [issue.field for issue in info.value.issues] == [key]
    assert f"{cls.__name__}.training()" in str(info.value)
    assert f"{key}=" in str(info.value)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("use_critic", "no"),
        ("use_gae", 0),
        ("lambda_", 1.5),
        ("clip_param", 0.0),
        ("use_kl_loss", None),
        ("kl_coeff", -1.0),
        ("kl_target", 0.0),
        ("tau", 1.1),
        ("tau", -0.1),
        ("target_update_frequency", 0),
        ("target_update_frequency", 1.0),
    ],
)
def test_a_bad_value_of_an_appo_key_is_refused_with_its_key_named(key: str, value: Any) -> None:
    with pytest.raises(ConfigError) as info:
        APPOConfig().training(**{key: value})
    assert [issue.field for issue in info.value.issues] == [key.rstrip("_")]


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("vtrace", False),
        ("vtrace_clip_rho_threshold", None),
        ("vtrace_clip_pg_rho_threshold", 2.5),
        ("vtrace_drop_last_ts", False),
        ("num_multi_gpu_tower_stacks", 4),
        ("replay_proportion", 0.5),
        ("replay_buffer_num_slots", 0),
        ("learner_queue_timeout", 30),
        ("grad_clip", None),
        ("opt_type", "rmsprop"),
        ("lr_schedule", [[0, 1e-3], [1000, 1e-4]]),
        ("decay", 0.9),
        ("momentum", 0.9),
        ("entropy_coeff", 0.0),
        ("entropy_coeff_schedule", [(0, 0.01), (10_000, 0.0)]),
        ("_lr_vf", 1e-3),
        ("after_train_step", "os:getcwd"),
        ("after_train_step", print),
    ],
)
def test_a_good_value_is_kept(key: str, value: Any) -> None:
    config = IMPALAConfig().training(**{key: value})
    config.validate()
    if isinstance(value, list):
        assert config[key] == [list(point) for point in value]
    elif isinstance(value, str) and ":" in value:
        assert callable(config[key])
    else:
        assert config[key] == value


def test_an_unknown_training_key_is_refused_with_a_hint() -> None:
    with pytest.raises(ConfigError, match=r"vtrace_clip_rho_treshold.*did you mean"):
        IMPALAConfig().training(vtrace_clip_rho_treshold=1.0)  # type: ignore[call-arg]
    # PPO's keys are not IMPALA's.
    with pytest.raises(ConfigError, match="sgd_minibatch_size"):
        IMPALAConfig().training(sgd_minibatch_size=32)  # type: ignore[call-arg]


def test_keys_are_set_by_item_and_attribute_with_the_same_checks() -> None:
    config = IMPALAConfig()
    config["vtrace"] = False
    config.replay_proportion = 0.25
    assert config.vtrace is False and config["replay_proportion"] == 0.25
    with pytest.raises(ConfigError, match="opt_type"):
        config["opt_type"] = "sgd"
    with pytest.raises(ConfigError, match="learner_queue_size"):
        config.learner_queue_size = 0


# ---------------------------------------------------------------------------- checks between keys


def test_aggregation_workers_are_at_most_the_rollout_workers() -> None:
    IMPALAConfig().training(num_aggregation_workers=2).validate()  # num_workers=2
    config = IMPALAConfig().training(num_aggregation_workers=3)
    with pytest.raises(ConfigError) as info:
        config.validate()
    (issue,) = info.value.issues
    assert issue.field == "num_aggregation_workers" and issue.value == 3
    assert "num_workers (2)" in issue.problem and issue.allowed == "0 to 2"
    assert "num_aggregation_workers=3" in str(info.value)
    # Fixed from either side.
    config.rollouts(num_workers=3).validate()
    with pytest.raises(ConfigError, match=r"num_aggregation_workers=1.*num_workers \(0\)"):
        IMPALAConfig().rollouts(num_workers=0).training(num_aggregation_workers=1).validate()


def test_a_separate_value_function_optimizer_needs_adam() -> None:
    IMPALAConfig().training(_separate_vf_optimizer=True).validate()  # adam, the default
    IMPALAConfig().training(opt_type="rmsprop").validate()
    config = IMPALAConfig().training(_separate_vf_optimizer=True, opt_type="rmsprop")
    with pytest.raises(ConfigError) as info:
        config.validate()
    (issue,) = info.value.issues
    assert issue.field == "_separate_vf_optimizer" and issue.value is True
    assert "opt_type='adam'" in issue.problem and "'rmsprop'" in issue.problem
    assert "opt_type='rmsprop'" in issue.allowed


def test_the_checks_run_when_the_config_is_frozen() -> None:
    with pytest.raises(ConfigError, match="_separate_vf_optimizer"):
        APPOConfig().training(_separate_vf_optimizer=True, opt_type="rmsprop").freeze()
    with pytest.raises(ConfigError, match="train_batch_size"):
        IMPALAConfig().training(train_batch_size=20).freeze()  # < rollout_fragment_length 50


def test_appo_without_vtrace_needs_the_critic_for_gae() -> None:
    # With V-trace (the default) use_critic and use_gae shape nothing.
    APPOConfig().training(use_critic=False).validate()
    with pytest.raises(ConfigError) as info:
        APPOConfig().training(vtrace=False, use_critic=False).validate()
    assert [issue.field for issue in info.value.issues] == ["use_critic"]
    APPOConfig().training(vtrace=False, use_critic=False, use_gae=False).validate()


def test_every_problem_of_a_validation_is_reported_at_once() -> None:
    config = APPOConfig().training(
        num_aggregation_workers=5,
        _separate_vf_optimizer=True,
        opt_type="rmsprop",
        vtrace=False,
        use_critic=False,
    )
    with pytest.raises(ConfigError) as info:
        config.validate()
    fields = {issue.field for issue in info.value.issues}
    assert fields == {"num_aggregation_workers", "_separate_vf_optimizer", "use_critic"}


# ---------------------------------------------------------------------------- fluent methods


@pytest.mark.parametrize("cls", [IMPALAConfig, APPOConfig], ids=lambda c: c.__name__)
def test_the_fluent_training_method_lists_every_key_with_its_default(
    cls: type[IMPALAConfig],
) -> None:
    parameters = inspect.signature(cls.training).parameters
    config = cls()
    section = cls._sections["training"]
    assert set(section.names) <= set(parameters)
    source = inspect.getsource(type(config).__mro__[1])  # the generated mixin
    for name in section.names:
        assert f"\n        {name}: " in source, name
    assert "vtrace_drop_last_ts: bool = True" in source
    assert 'opt_type: Literal["adam", "rmsprop"] = "adam"' in source


def test_a_wrong_type_in_a_fluent_call_names_the_key() -> None:
    with pytest.raises(ConfigError) as info:
        IMPALAConfig().training(
            vtrace="on",  # type: ignore[arg-type]
            num_sgd_iter=2.5,  # type: ignore[arg-type]
            opt_type="sgd",  # type: ignore[arg-type]
        )
    assert {issue.field for issue in info.value.issues} == {"vtrace", "num_sgd_iter", "opt_type"}
    text = str(info.value)
    assert "vtrace='on'" in text and "num_sgd_iter=2.5" in text
    assert "'adam'" in text and "'rmsprop'" in text
    with pytest.raises(ConfigError, match="tau='1'"):
        APPOConfig().training(tau="1")  # type: ignore[arg-type]


def test_the_fluent_methods_chain_and_return_the_config() -> None:
    config = (
        APPOConfig()
        .training(vtrace=False, use_kl_loss=True, kl_coeff=0.5, num_sgd_iter=6)
        .rollouts(num_workers=1, num_envs_per_worker=5)
        .resources(num_gpus=0)
    )
    assert isinstance(config, APPOConfig)
    assert (config.vtrace, config.use_kl_loss, config.kl_coeff, config.num_sgd_iter) == (
        False,
        True,
        0.5,
        6,
    )


# ---------------------------------------------------------------------------- dicts and files


@pytest.mark.parametrize("cls", [IMPALAConfig, APPOConfig], ids=lambda c: c.__name__)
def test_to_dict_and_from_dict_round_trip(cls: type[IMPALAConfig]) -> None:
    config = cls().training(
        vtrace_drop_last_ts=False,
        opt_type="rmsprop",
        lr_schedule=[[0, 1e-3], [1000, 1e-4]],
        replay_proportion=0.5,
        replay_buffer_num_slots=8,
        vtrace_clip_rho_threshold=None,
        after_train_step="os:getcwd",
    )
    plain = config.to_dict()
    assert plain["opt_type"] == "rmsprop" and plain["vtrace_drop_last_ts"] is False
    assert set(IMPALA_TRAINING_DEFAULTS) <= set(plain)
    if cls is APPOConfig:
        assert "lambda" in plain and "lambda_" not in plain
    again = cls.from_dict(plain)
    assert again == config
    assert again.to_dict() == plain


def test_from_dict_takes_the_references_flat_dict_with_rllib_2_names() -> None:
    config = APPOConfig.from_dict(
        {
            "vtrace": False,
            "lambda": 0.95,
            "num_rollout_workers": 1,
            "min_time_s_per_iteration": 0,
            "replay_buffer_num_slots": 10,
        }
    )
    assert config["num_workers"] == 1 and config["min_time_s_per_reporting"] == 0
    assert config["lambda"] == 0.95 and config["replay_buffer_num_slots"] == 10
    with pytest.raises(ConfigError, match="opt_type"):
        IMPALAConfig.from_dict({"opt_type": "sgd"})


def test_json_round_trip_and_schema(capsys: pytest.CaptureFixture[str]) -> None:
    config = APPOConfig().training(kl_target=0.02, _lr_vf=1e-3)
    assert APPOConfig.from_dict(json.loads(json.dumps(config.to_dict()))) == config
    for name in ("IMPALA", "APPO"):
        assert main(["schema", name]) == 0
        properties = json.loads(capsys.readouterr().out)["properties"]
        assert properties["opt_type"]["enum"] == ["adam", "rmsprop"]
        assert properties["vtrace_drop_last_ts"]["default"] is True
    assert "clip_param" in properties and "kl_coeff" in properties


@pytest.mark.parametrize(
    ("path", "run", "expected"),
    [
        (
            TUNED / "impala" / "cartpole-impala.yaml",
            "IMPALA",
            {"vtrace_drop_last_ts": False, "grad_clip": 40, "num_workers": 2, "num_gpus": 0},
        ),
        (
            TUNED / "appo" / "cartpole-appo.yaml",
            "APPO",
            {
                "vtrace": False,
                "num_sgd_iter": 6,
                "vf_loss_coeff": 0.01,
                "num_workers": 1,
                "num_envs_per_worker": 5,
                "observation_filter": "MeanStdFilter",
            },
        ),
    ],
    ids=lambda value: value.name if isinstance(value, Path) else "",
)
def test_rllibs_tuned_cartpole_files_load_as_written(
    path: Path, run: str, expected: dict[str, Any]
) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        (experiment,) = load_experiments(path, Overrides(framework="torch"))
    assert experiment.run == run
    assert type(experiment.config) is get_config_class(run)
    plain = experiment.config.to_dict()
    assert plain["framework"] == "torch"
    assert {key: plain[key] for key in expected} == expected
    assert experiment.stop["sampler_results/episode_reward_mean"] == 150
