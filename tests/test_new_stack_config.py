"""RLlib's new API stack config (Ray 2.10 and later) sets rlconf's settings: ``.api_stack()``,
``.env_runners()``, ``.learners()``, ``.rl_module()``, ``.checkpointing()``, the renamed keys of
``.training()`` / ``.evaluation()`` / ``.fault_tolerance()`` / ``.reporting()``, and
``build_algo()``.

Each new name is its twin's setting (one value): it reads back under both names, goes out under
rlconf's key (``to_dict``, JSON, params.json) and comes back in, is typed as the twin in the
signatures editors and type checkers read, and given beside its twin with another value is an
error naming both. Names without a twin are refused with the reason.
"""

from __future__ import annotations

import inspect
import json
import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jedi
import pytest

from rlconf import AlgorithmConfig, ConfigError, DQNConfig, IMPALAConfig, PPOConfig
from rlconf.experiment import Overrides, load_experiments
from rlconf.key_aliases import KEY_ALIASES, canonical_key
from rlconf.section import pyname_of, strip_annotated
from tests import child_process

#: (method, new-stack name, rlconf key, a value other than PPO's default)
TWINS: list[tuple[str, str, str, Any]] = [
    ("env_runners", "num_env_runners", "num_workers", 3),
    ("env_runners", "num_envs_per_env_runner", "num_envs_per_worker", 4),
    ("env_runners", "num_cpus_per_env_runner", "num_cpus_per_worker", 2.0),
    ("env_runners", "num_gpus_per_env_runner", "num_gpus_per_worker", 0.5),
    ("env_runners", "custom_resources_per_env_runner", "custom_resources_per_worker", {"a": 1.0}),
    ("env_runners", "create_env_on_local_worker", "create_env_on_driver", True),
    ("env_runners", "explore", "explore", False),
    ("env_runners", "rollout_fragment_length", "rollout_fragment_length", "auto"),
    ("env_runners", "batch_mode", "batch_mode", "complete_episodes"),
    ("env_runners", "observation_filter", "observation_filter", "MeanStdFilter"),
    ("learners", "num_learners", "num_learner_workers", 2),
    ("learners", "num_cpus_per_learner", "num_cpus_per_learner_worker", 2.0),
    ("learners", "num_gpus_per_learner", "num_gpus_per_learner_worker", 1.0),
    ("resources", "num_cpus_for_main_process", "num_cpus_for_driver", 2.0),
    ("training", "num_epochs", "num_sgd_iter", 6),
    ("training", "minibatch_size", "sgd_minibatch_size", 64),
    ("training", "train_batch_size_per_learner", "train_batch_size", 2000),
    ("evaluation", "evaluation_num_env_runners", "evaluation_num_workers", 1),
    ("fault_tolerance", "restart_failed_env_runners", "recreate_failed_workers", True),
    ("fault_tolerance", "ignore_env_runner_failures", "ignore_worker_failures", True),
    ("reporting", "min_sample_timesteps_per_iteration", "min_sample_timesteps_per_reporting", 10),
]


#: Names that already set their key before the new methods came (their signatures are new).
_ALIASES_BEFORE = {"evaluation_num_env_runners", "min_sample_timesteps_per_iteration"}
_NEW = [t for t in TWINS if t[1] not in _ALIASES_BEFORE]


@pytest.mark.parametrize(("method", "name", "key", "value"), _NEW, ids=[t[1] for t in _NEW])
def test_a_new_stack_name_sets_its_twin_and_round_trips_under_rlconfs_key(
    method: str, name: str, key: str, value: Any
) -> None:
    config = getattr(PPOConfig(), method)(**{name: value})
    assert config[key] == value and config[name] == value and getattr(config, name) == value
    flat = config.to_dict()
    assert flat[key] == value
    assert name == key or name not in flat
    assert PPOConfig.from_dict(flat) == config
    assert PPOConfig.from_json(config.to_json()) == config
    assert PPOConfig.from_dict({name: value}) == config


@pytest.mark.parametrize(("method", "name", "key", "value"), TWINS, ids=[t[1] for t in TWINS])
def test_a_new_stack_name_is_in_its_methods_signature_typed_as_its_twin(
    method: str, name: str, key: str, value: Any
) -> None:
    param = inspect.signature(getattr(PPOConfig, method)).parameters[name]
    section = PPOConfig._info().section_of_key[key]
    twin = inspect.signature(getattr(PPOConfig, section.method)).parameters[key]
    assert param.annotation == twin.annotation
    assert param.default == twin.default
    assert param.kind is inspect.Parameter.KEYWORD_ONLY


@pytest.mark.parametrize("cls", [AlgorithmConfig, PPOConfig, IMPALAConfig, DQNConfig])
def test_the_other_names_a_section_declares_are_typed_as_their_twins(
    cls: type[AlgorithmConfig],
) -> None:
    """A section's TypedDict declares the other names of its keys (so that a hand-written
    ``**kwargs: Unpack[...]`` override extending it takes them); each must be typed as its key,
    which is what the generated signatures show, but a name whose value is turned into the key's
    (``env_to_module_connector``), typed as RLlib takes it."""
    declared = 0
    for section in cls._sections.values():
        for name in section.aliases:
            key = canonical_key(name)
            assert key in section.names and name not in section.names, (section.method, name)
            if KEY_ALIASES[name].convert is not None:
                continue
            twin = strip_annotated(section.hints[pyname_of(key)])
            assert strip_annotated(section.hints[name]) == twin, (section.method, name)
            declared += 1
    assert declared >= 7


@pytest.mark.parametrize(
    ("call", "twin"),
    [
        (
            # A name that sets the same key is taken by the method (as RLlib's deprecated one).
            lambda: PPOConfig().env_runners(num_env_runners=1, num_workers=2),  # type: ignore[call-arg]
            "num_workers",
        ),
        (lambda: PPOConfig().training(num_epochs=3, num_sgd_iter=4), "num_sgd_iter"),
        (lambda: PPOConfig.from_dict({"num_epochs": 3, "num_sgd_iter": 4}), "num_sgd_iter"),
        (
            lambda: PPOConfig().learners(num_learners=1, num_learner_workers=2),  # type: ignore[call-arg]
            "num_learner_workers",
        ),
        (
            lambda: PPOConfig().rl_module(
                model_config={"fcnet_hiddens": [8]}, model_config_dict={"fcnet_hiddens": [16]}
            ),
            "model_config_dict",
        ),
    ],
)
def test_both_names_with_different_values_are_an_error_naming_both(call: Any, twin: str) -> None:
    with pytest.raises(ConfigError) as caught:
        call()
    (issue,) = caught.value.issues
    message = issue.render()
    assert "new API stack name of" in message and "both are given" in message
    assert twin in message


def test_api_stack_takes_either_value_and_names_it_in_a_note_at_build(
    caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    for value in (True, False):
        config = PPOConfig().api_stack(
            enable_rl_module_and_learner=value, enable_env_runner_and_connector_v2=value
        )
        assert config["enable_rl_module_and_learner"] is value
        assert PPOConfig.from_dict(config.to_dict()) == config
    with pytest.raises(ConfigError, match="enable_rl_module_and_learner"):
        PPOConfig().api_stack(enable_rl_module_and_learner="yes")  # type: ignore[arg-type]
    config = (
        PPOConfig()
        .api_stack(enable_rl_module_and_learner=False)
        .environment("CartPole-v1")
        .env_runners(num_env_runners=0)
        .debugging(logger_config={"logdir": str(tmp_path)})
    )
    with caplog.at_level(logging.WARNING):
        algo = config.build_algo()
    algo.stop()
    assert "enable_rl_module_and_learner=False" in caplog.text


def test_connectors_and_custom_modules_are_refused_with_the_reason() -> None:
    with pytest.raises(ConfigError, match="other ConnectorV2 pieces are not available"):
        PPOConfig().env_runners(env_to_module_connector=lambda env: None)
    with pytest.raises(ConfigError, match="come with the runtime's own pipeline"):
        PPOConfig().env_runners(module_to_env_connector=lambda env, module: None)  # type: ignore[call-arg]
    with pytest.raises(ConfigError, match="expected an RLModuleSpec, a MultiRLModuleSpec or None"):
        PPOConfig().rl_module(rl_module_spec=object())  # type: ignore[arg-type]
    calls: list[Callable[[], object]] = [
        lambda: PPOConfig().fault_tolerance(max_num_env_runner_restarts=10),  # type: ignore[call-arg]
        lambda: PPOConfig().learners(learner_class=object),  # type: ignore[call-arg]
        lambda: PPOConfig().env_runners(env_runner_cls=object),  # type: ignore[call-arg]
        lambda: PPOConfig.from_dict({"num_aggregator_actors_per_learner": 2}),
    ]
    for call in calls:
        with pytest.raises(ConfigError, match="not supported: "):
            call()


def test_model_config_is_the_model_dict_with_default_model_configs_keys() -> None:
    config = PPOConfig().rl_module(
        model_config={
            "fcnet_hiddens": [32],
            "fcnet_activation": "linear",
            "vf_share_layers": True,
            "use_lstm": True,
            "lstm_cell_size": 16,
            "max_seq_len": 8,
            "head_fcnet_hiddens": [],
            "head_fcnet_activation": "relu",
            "fcnet_kernel_initializer": None,
            "lstm_kernel_initializer_kwargs": None,
        }
    )
    model = config.model
    assert model["fcnet_hiddens"] == [32] and model["fcnet_activation"] == "linear"
    assert model["use_lstm"] and model["lstm_cell_size"] == 16 and model["max_seq_len"] == 8
    assert model["free_log_std"] is False  # the keys not given keep their values
    assert config.model_config == model
    # The head and initializer keys act (tests/test_model_init_keys.py): none is inert.
    assert not any("head_fcnet" in key for key in config.inert_settings())
    # The older name of Ray 2.10-2.30 is the same setting.
    assert PPOConfig().rl_module(model_config_dict={"fcnet_hiddens": [32]}).model[
        "fcnet_hiddens"
    ] == [32]
    with pytest.raises(ConfigError) as caught:
        PPOConfig().rl_module(model_config={"head_fcnet_hiddens": [0]})
    assert caught.value.issues[0].field == "model_config.head_fcnet_hiddens.0"
    with pytest.raises(ConfigError, match=r"no torch\.nn\.init function"):
        PPOConfig().rl_module(model_config={"fcnet_kernel_initializer": "xavier_uniformly"})


def test_a_per_learner_batch_is_refused_beside_several_learners() -> None:
    calls: list[Callable[[], object]] = [
        lambda: PPOConfig().learners(num_learners=2).training(train_batch_size_per_learner=500),
        lambda: PPOConfig.from_dict({"num_learners": 2, "minibatch_size": 64}),
        lambda: PPOConfig().update_from_dict(
            {"num_learner_workers": 3, "train_batch_size_per_learner": 500}
        ),
    ]
    for call in calls:
        with pytest.raises(ConfigError, match=r"whole (mini)?batch, split between"):
            call()
    with pytest.raises(ConfigError) as caught:
        PPOConfig().learners(num_learners=2).training(train_batch_size_per_learner=500)
    assert "train_batch_size=1000" in caught.value.issues[0].allowed
    # With at most one learner the per-learner batch is the whole batch.
    config = PPOConfig().learners(num_learners=1).training(train_batch_size_per_learner=500)
    assert config.train_batch_size == 500
    assert PPOConfig().learners(num_learners=2).training(train_batch_size=1000).num_learners == 2


def test_overrides_take_the_new_names_and_refuse_exploration_naming_explore() -> None:
    assert PPOConfig.overrides(num_env_runners=1, num_epochs=3, explore=False) == {
        "num_workers": 1,
        "num_sgd_iter": 3,
        "explore": False,
    }
    config = PPOConfig().evaluation(
        evaluation_num_env_runners=1,
        evaluation_config=PPOConfig.overrides(num_envs_per_env_runner=2),
    )
    assert config.evaluation_config == {"num_envs_per_worker": 2}
    with pytest.raises(ConfigError, match="explore=False") as caught:
        PPOConfig.overrides(exploration=False)
    assert caught.value.issues[0].field == "exploration"


def test_the_keywords_a_class_lacks_are_not_offered_and_are_refused() -> None:
    assert "num_epochs" not in inspect.signature(DQNConfig.training).parameters
    assert "num_epochs" in inspect.signature(IMPALAConfig.training).parameters
    assert (
        "max_requests_in_flight_per_env_runner"
        in inspect.signature(IMPALAConfig.env_runners).parameters
    )
    assert (
        "max_requests_in_flight_per_env_runner"
        not in inspect.signature(PPOConfig.env_runners).parameters
    )
    with pytest.raises(ConfigError, match="num_epochs"):
        DQNConfig().training(num_epochs=2)  # type: ignore[call-arg]
    with pytest.raises(ConfigError, match=r"is set by PPOConfig\.rollouts"):
        PPOConfig().env_runners(horizon=10)  # type: ignore[call-arg]


def test_editors_complete_the_new_methods_keywords() -> None:
    def offered(source: str) -> list[str]:
        lines = source.split("\n")
        script = jedi.Script(source)
        return [c.name for c in script.complete(len(lines), len(lines[-1]))]

    head = "from rlconf import PPOConfig\nPPOConfig()"
    assert "num_env_runners=" in offered(head + ".env_runners(num_env")
    assert "num_envs_per_env_runner=" in offered(head + ".env_runners(num_envs")
    assert "num_epochs=" in offered(head + ".training(num_ep")
    assert "train_batch_size_per_learner=" in offered(head + ".training(train_batch")
    assert "num_gpus_per_learner=" in offered(head + ".learners(num_gpus")
    assert "model_config=" in offered(head + ".rl_module(model")
    assert "enable_rl_module_and_learner=" in offered(head + ".api_stack(enable_rl")
    assert "restart_failed_env_runners=" in offered(head + ".fault_tolerance(restart")


def test_build_algo_is_build_with_rllibs_signature(tmp_path: Path) -> None:
    params = inspect.signature(PPOConfig.build_algo).parameters
    assert list(params) == ["self", "env", "logger_creator", "use_copy"]
    assert [params[n].default for n in ("env", "logger_creator", "use_copy")] == [None, None, True]
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=0, rollout_fragment_length="auto")
        .training(train_batch_size_per_learner=64, minibatch_size=32, num_epochs=1)
        .debugging(logger_config={"logdir": str(tmp_path)})
    )
    with pytest.raises(ConfigError, match="logger_config"):
        config.build_algo(logger_creator=lambda cfg: None)
    algo = config.build_algo()
    try:
        assert type(algo).__name__ == "PPO" and algo.config.num_sgd_iter == 1
    finally:
        algo.stop()
    frozen = [config.is_frozen]
    config.build_algo(use_copy=False).stop()
    assert [*frozen, config.is_frozen] == [False, True]
    with pytest.raises(ConfigError, match=r"AlgorithmConfig.build_algo\(\)"):
        AlgorithmConfig().build_algo()


NEW_STACK_YAML = """\
cartpole-ppo-new-stack:
    env: CartPole-v1
    run: PPO
    stop:
        training_iteration: 1
    config:
        enable_rl_module_and_learner: true
        enable_env_runner_and_connector_v2: true
        num_env_runners: 0
        num_envs_per_env_runner: 2
        rollout_fragment_length: auto
        num_epochs: 2
        minibatch_size: 64
        train_batch_size_per_learner: 256
        model_config: {fcnet_hiddens: [32], vf_share_layers: true}
"""


def test_a_new_stack_yaml_loads_with_its_settings(tmp_path: Path) -> None:
    path = tmp_path / "cartpole-ppo.yaml"
    path.write_text(NEW_STACK_YAML)
    (experiment,) = load_experiments(path, Overrides())
    config = experiment.config
    assert (config.num_workers, config.num_envs_per_worker) == (0, 2)
    assert (config.num_sgd_iter, config.sgd_minibatch_size, config.train_batch_size) == (2, 64, 256)
    assert config.model["fcnet_hiddens"] == [32]
    path.write_text(NEW_STACK_YAML + "        num_workers: 1\n")
    with pytest.raises(ConfigError, match="num_env_runners"):
        load_experiments(path, Overrides())


def test_a_new_stack_yaml_trains_through_the_cli(tmp_path: Path) -> None:
    path = tmp_path / "cartpole-ppo.yaml"
    path.write_text(NEW_STACK_YAML)
    done = child_process.run(
        [
            sys.executable,
            "-m",
            "rlconf.cli",
            "train",
            "-f",
            str(path),
            "--local-dir",
            str(tmp_path / "results"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "enable_rl_module_and_learner=True" in done.stderr  # the note at build
    (result_file,) = (tmp_path / "results").glob("*/result.json")
    (result,) = [json.loads(line) for line in result_file.read_text().splitlines()]
    params = json.loads((result_file.parent / "params.json").read_text())
    assert result["timesteps_total"] >= 256
    assert (params["num_sgd_iter"], params["sgd_minibatch_size"]) == (2, 64)
    assert (params["train_batch_size"], params["num_workers"]) == (256, 0)
    assert "num_epochs" not in params and "num_env_runners" not in params
