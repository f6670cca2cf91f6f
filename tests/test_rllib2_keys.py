"""RLlib 2.x tuned-example files load and run unchanged: the keys every algorithm shares.

RLlib 2.x's names of the reporting keys (``min_sample_timesteps_per_iteration``, ...) and of
``custom_eval_function`` set rlconf's keys; ``metrics_smoothing_episodes`` works with a
DeprecationWarning; ``replay_buffer_config`` takes RLlib's multi-agent buffer names,
``min_size_for_sampling`` (which holds back replay) and ``worker_side_prioritization: false``;
``enable_connectors`` and ``evaluation_force_reset_envs_before_iteration: true`` are accepted
with a note; results carry ``sampler_results`` so stop keys written for 2.x work.
"""

from __future__ import annotations

import json
import logging
import re
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from rlconf import ConfigError, DQNConfig, PGConfig, PPOConfig, SACConfig
from rlconf.cli import main
from rlconf.experiment import Overrides, load_experiments
from rlconf.key_aliases import KEY_ALIASES
from rlconf.replay_buffer_config import complete_replay_buffer_config
from rlconf.result_keys import describe
from rlconf.stop_criteria import StopCriteria, stop_issues
from runtime.buffers import PrioritizedReplayBuffer, ReplayBuffer, make_replay_buffer
from tests import child_process

#: RLlib 2.x's own tuned example (rllib/tuned_examples/sac/pendulum-sac.yaml), as written.
PENDULUM_SAC_YAML = """\
pendulum-sac:
    env: Pendulum-v1
    run: SAC
    stop:
        episode_reward_mean: -250
        timesteps_total: 10000
    config:
        framework: tf
        horizon: 200
        soft_horizon: false
        q_model_config: {fcnet_activation: relu, fcnet_hiddens: [256, 256]}
        policy_model_config: {fcnet_activation: relu, fcnet_hiddens: [256, 256]}
        tau: 0.005
        target_entropy: auto
        no_done_at_end: true
        n_step: 1
        rollout_fragment_length: 1
        train_batch_size: 256
        target_network_update_freq: 1
        min_sample_timesteps_per_iteration: 1000
        replay_buffer_config:
          type: MultiAgentPrioritizedReplayBuffer
          min_size_for_sampling: 256
        optimization: {actor_learning_rate: 0.0003, critic_learning_rate: 0.0003, \
entropy_learning_rate: 0.0003}
        num_workers: 0
        num_gpus: 0
        metrics_smoothing_episodes: 5
"""

#: The shared keys of RLlib 2.x's DDPG / TD3 pendulum files.
DDPG_STYLE_KEYS: dict[str, Any] = {
    "replay_buffer_config": {
        "type": "MultiAgentReplayBuffer",
        "capacity": 10000,
        "worker_side_prioritization": False,
        "min_size_for_sampling": 500,
    },
    "soft_horizon": False,
    "no_done_at_end": True,
    "clip_rewards": False,
    "min_sample_timesteps_per_iteration": 600,
    "seed": 42,
    "model": {},
    "horizon": 200,
    "num_gpus": 0,
}

REPORTING_ALIASES: dict[str, tuple[str, Any]] = {
    "min_sample_timesteps_per_iteration": ("min_sample_timesteps_per_reporting", 600),
    "min_train_timesteps_per_iteration": ("min_train_timesteps_per_reporting", 256),
    "min_time_s_per_iteration": ("min_time_s_per_reporting", 2.5),
}


# ------------------------------------------------------------------ the tuned file, end to end


def test_rllib2_pendulum_sac_yaml_trains_through_the_cli(tmp_path: Path) -> None:
    path = tmp_path / "pendulum-sac.yaml"
    path.write_text(PENDULUM_SAC_YAML)
    stop = {"timesteps_total": 600, "sampler_results/episode_reward_mean": 10_000}
    # A short run that still learns: learning starts at 450 sampled steps (the buffer then
    # holds more than min_size_for_sampling=256 rows), and one iteration is 600 steps.
    overrides = {
        "num_steps_sampled_before_learning_starts": 450,
        "min_sample_timesteps_per_reporting": 600,
    }
    done = child_process.run(
        [
            sys.executable,
            "-m",
            "rlconf.cli",
            "train",
            "-f",
            str(path),
            "--framework",
            "torch",
            "--stop",
            json.dumps(stop),
            "--config",
            json.dumps(overrides),
            "--local-dir",
            str(tmp_path / "results"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "'metrics_smoothing_episodes' is deprecated" in done.stderr
    assert "use 'metrics_num_episodes_for_smoothing'" in done.stderr
    (result_file,) = (tmp_path / "results").glob("*/result.json")
    (result,) = [json.loads(line) for line in result_file.read_text().splitlines()]
    params = json.loads((result_file.parent / "params.json").read_text())
    assert result["timesteps_total"] == 600
    learner = result["info"]["learner"]["default_policy"]
    assert learner["num_grad_updates"] > 0
    assert result["sampler_results"]["episode_reward_mean"] == result["episode_reward_mean"]
    assert params["metrics_num_episodes_for_smoothing"] == 5
    assert params["min_sample_timesteps_per_reporting"] == 600
    assert "min_sample_timesteps_per_iteration" not in params
    assert params["replay_buffer_config"]["min_size_for_sampling"] == 256


def test_rllib2_pendulum_sac_yaml_loads_with_its_settings(tmp_path: Path) -> None:
    path = tmp_path / "pendulum-sac.yaml"
    path.write_text(PENDULUM_SAC_YAML)
    with pytest.warns(DeprecationWarning, match="metrics_num_episodes_for_smoothing"):
        (experiment,) = load_experiments(path, Overrides(framework="torch"))
    config = experiment.config
    assert config["min_sample_timesteps_per_reporting"] == 1000
    assert config["metrics_num_episodes_for_smoothing"] == 5
    assert config["replay_buffer_config"]["type"] == "MultiAgentPrioritizedReplayBuffer"
    assert config["replay_buffer_config"]["min_size_for_sampling"] == 256
    assert config["framework"] == "torch"
    assert experiment.stop == {"episode_reward_mean": -250, "timesteps_total": 10000}


def test_rllib2_ddpg_style_shared_keys_are_accepted() -> None:
    config = SACConfig.from_dict({**DDPG_STYLE_KEYS, "env": "Pendulum-v1"}).validate()
    assert config.min_sample_timesteps_per_reporting == 600
    assert config.seed == 42 and config.no_done_at_end is True and config.clip_rewards is False
    assert config.inert_settings() == {"replay_buffer_config.worker_side_prioritization": False}
    settings = complete_replay_buffer_config(config.replay_buffer_config)
    assert settings["type"] == "ReplayBuffer" and settings["min_size_for_sampling"] == 500
    assert settings["capacity"] == 10000


# ------------------------------------------------------------------ RLlib 2.x key names


@pytest.mark.parametrize("name", sorted(REPORTING_ALIASES))
def test_rllib2_reporting_names_set_rlconfs_key_on_every_path(name: str) -> None:
    key, value = REPORTING_ALIASES[name]
    expected = PPOConfig().reporting(**{key: value})
    configs = [
        PPOConfig.from_dict({name: value}),
        PPOConfig().update_from_dict({name: value}),
        PPOConfig().reporting(**{name: value}),
    ]
    assigned = PPOConfig()
    assigned[name] = value
    configs.append(assigned)
    attribute = PPOConfig()
    setattr(attribute, name, value)
    configs.append(attribute)
    for config in configs:
        assert config == expected
        assert config[key] == value and config[name] == value
        assert getattr(config, name) == value and name in config
    # one setting, given back under rlconf's name
    as_dict = expected.to_dict()
    assert as_dict[key] == value and name not in as_dict
    assert PPOConfig.from_dict(as_dict) == expected
    assert PPOConfig.overrides(**{name: value}) == {key: value}
    # the same value under both names is the one setting
    assert PPOConfig.from_dict({key: value, name: value}) == expected


@pytest.mark.parametrize("name", sorted(REPORTING_ALIASES))
def test_both_names_with_different_values_are_an_error_naming_both(name: str) -> None:
    key, value = REPORTING_ALIASES[name]
    calls: list[Callable[[], object]] = [
        lambda: PPOConfig.from_dict({key: value, name: value * 2}),
        lambda: PPOConfig().reporting(**{name: value * 2, key: value}),
    ]
    for call in calls:
        with pytest.raises(ConfigError) as caught:
            call()
        (issue,) = caught.value.issues
        assert issue.field == name
        message = issue.render()
        assert f"the RLlib 2.x name of {key}" in message
        assert f"{key}={value!r}" in message and f"{name}={value * 2!r}" in message


def test_a_bad_value_under_the_rllib2_name_is_reported_under_that_name() -> None:
    with pytest.raises(ConfigError) as caught:
        PPOConfig.from_dict({"min_sample_timesteps_per_iteration": -5})
    (issue,) = caught.value.issues
    assert issue.field == "min_sample_timesteps_per_iteration" and issue.value == -5
    assert ">= 0" in issue.allowed
    with pytest.raises(ConfigError, match=r"min_time_s_per_iteration.*is set by PPOConfig\.rep"):
        PPOConfig().training(min_time_s_per_iteration=1.0)  # type: ignore[call-arg]


def test_the_schema_takes_the_rllib2_names() -> None:
    schema = SACConfig.json_schema()
    validator = jsonschema.Draft202012Validator(schema)
    validator.validate(
        {"min_sample_timesteps_per_iteration": 1000, "metrics_smoothing_episodes": 5}
    )
    assert not validator.is_valid({"min_sample_timesteps_per_iteration": -1})
    entry = schema["properties"]["min_sample_timesteps_per_iteration"]
    assert "RLlib 2.x name of min_sample_timesteps_per_reporting" in entry["description"]
    assert schema["properties"]["metrics_smoothing_episodes"]["deprecated"] is True
    # Every name of a key SAC has (num_epochs, PPO's and IMPALA's num_sgd_iter, is not one).
    fields = set(SACConfig.field_names())
    assert {n for n, a in KEY_ALIASES.items() if a.key in fields} <= set(schema["properties"])
    assert "num_epochs" not in schema["properties"]


def test_metrics_smoothing_episodes_warns_and_sets_the_new_key() -> None:
    with pytest.warns(DeprecationWarning, match="use 'metrics_num_episodes_for_smoothing'") as rec:
        config = PPOConfig.from_dict({"metrics_smoothing_episodes": 5})
    assert config.metrics_num_episodes_for_smoothing == 5
    assert rec[0].filename == __file__  # shown where the user's code gave it
    with pytest.warns(DeprecationWarning, match="metrics_smoothing_episodes"):
        PPOConfig().reporting(metrics_smoothing_episodes=3)  # type: ignore[call-arg]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert PPOConfig.from_dict({"metrics_num_episodes_for_smoothing": 5}) == config
    with (
        pytest.raises(ConfigError, match="metrics_smoothing_episodes=0"),
        pytest.warns(DeprecationWarning),
    ):
        PPOConfig.from_dict({"metrics_smoothing_episodes": 0})


def _score(algorithm: Any, eval_workers: Any) -> dict[str, float]:
    return {"score": 7.0, "eval_workers": float(eval_workers is algorithm.evaluation_workers)}


def test_custom_evaluation_function_is_custom_eval_function() -> None:
    config = PGConfig().evaluation(custom_evaluation_function=_score)
    assert config.custom_eval_function is _score
    assert PGConfig.from_dict({"custom_evaluation_function": _score}) == config
    (issue,) = stop_issues({"evaluation/score": 1}, "stop.", config)
    assert "no evaluation runs" in issue.problem  # the function's key itself is accepted
    config.evaluation(evaluation_interval=1)
    assert stop_issues({"evaluation/score": 1}, "stop.", config) == []
    algo = (
        config.environment("CartPole-v1")
        .rollouts(num_workers=0, rollout_fragment_length=20)
        .training(train_batch_size=20, model={"fcnet_hiddens": [8]})
        .evaluation(evaluation_interval=1)
        .build()
    )
    try:
        evaluation = algo.train()["evaluation"]
    finally:
        algo.stop()
    assert evaluation["score"] == 7.0 and evaluation["eval_workers"] == 1.0
    assert "episode_reward_mean" not in evaluation  # instead of the default evaluation


# ------------------------------------------------------------------ switches with a note


def _small_pg(**extra: Any) -> PGConfig:
    return (
        PGConfig()
        .environment("CartPole-v1")
        .rollouts(num_workers=0, rollout_fragment_length=100)
        .training(train_batch_size=100, model={"fcnet_hiddens": [8]})
        .debugging(seed=0, log_sys_usage=False)
        .update_from_dict(extra)
    )


@pytest.mark.parametrize("value", [True, False])
def test_enable_connectors_is_accepted_at_either_value_with_a_note(
    value: bool, caplog: pytest.LogCaptureFixture
) -> None:
    config = PPOConfig().rollouts(enable_connectors=value)  # type: ignore[call-arg]
    assert config.inert_settings() == {"enable_connectors": value}
    assert PPOConfig.from_dict({"enable_connectors": value}) == config
    with pytest.raises(ConfigError, match="enable_connectors"):
        PPOConfig.from_dict({"enable_connectors": "yes"})
    with caplog.at_level(logging.WARNING, logger="runtime"):
        _small_pg(enable_connectors=value).build().stop()
    (note,) = [r.getMessage() for r in caplog.records if "no effect" in r.getMessage()]
    assert f"enable_connectors={value!r}" in note and "\n" not in note


def test_evaluation_force_reset_envs_true_is_noted_and_false_refused() -> None:
    config = PPOConfig().evaluation(
        evaluation_force_reset_envs_before_iteration=True  # type: ignore[call-arg]
    )
    assert config.inert_settings() == {"evaluation_force_reset_envs_before_iteration": True}
    with pytest.raises(ConfigError) as caught:
        PPOConfig.from_dict({"evaluation_force_reset_envs_before_iteration": False})
    (issue,) = caught.value.issues
    assert issue.field == "evaluation_force_reset_envs_before_iteration" and issue.value is False
    assert "every evaluation starts its sub-envs on fresh episodes" in issue.problem
    assert "True" in issue.allowed


# ------------------------------------------------------------------ replay_buffer_config


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("MultiAgentReplayBuffer", ReplayBuffer),
        ("MultiAgentPrioritizedReplayBuffer", PrioritizedReplayBuffer),
        ("PrioritizedReplayBuffer", PrioritizedReplayBuffer),
    ],
)
def test_rllibs_multi_agent_buffer_names_make_the_same_buffers(name: str, kind: type) -> None:
    config = DQNConfig().training(replay_buffer_config={"type": name})  # type: ignore[typeddict-item]
    assert config.replay_buffer_config["type"] == name
    buffer = make_replay_buffer(config.replay_buffer_config)
    assert type(buffer) is kind


def test_replay_buffer_config_keys_of_rllib2() -> None:
    config = DQNConfig().training(
        replay_buffer_config={"min_size_for_sampling": 500, "worker_side_prioritization": False}
    )
    assert config.replay_buffer_config["min_size_for_sampling"] == 500
    assert config.inert_settings() == {"replay_buffer_config.worker_side_prioritization": False}
    assert DQNConfig().replay_buffer_config["min_size_for_sampling"] == 0
    assert DQNConfig().inert_settings() == {}
    with pytest.raises(ConfigError) as caught:
        DQNConfig().training(replay_buffer_config={"worker_side_prioritization": True})
    (issue,) = caught.value.issues
    assert issue.field == "replay_buffer_config.worker_side_prioritization" and issue.value is True
    assert "priorities are computed by the learner after each update" in issue.problem
    assert "no worker-side priority computation" in issue.problem
    bad: Any
    for bad in (-1, 1.5, True):
        with pytest.raises(ConfigError, match=r"replay_buffer_config\.min_size_for_sampling"):
            DQNConfig().training(replay_buffer_config={"min_size_for_sampling": bad})
    with pytest.raises(ConfigError) as caught:
        DQNConfig().training(replay_buffer_config={"min_size_for_samples": 1})  # type: ignore[typeddict-unknown-key]
    (issue,) = caught.value.issues
    assert "unknown key" in issue.problem and "min_size_for_sampling" in issue.allowed
    with pytest.raises(ConfigError, match="'MultiAgentReplayBuffer'"):
        DQNConfig().training(replay_buffer_config={"type": "MultiAgentBuffer"})  # type: ignore[typeddict-item]


def _dqn(learning_starts: int, min_size: int) -> Any:
    return (
        DQNConfig()
        .environment("CartPole-v1")
        .rollouts(num_workers=0, rollout_fragment_length=4)
        .training(
            train_batch_size=8,
            num_steps_sampled_before_learning_starts=learning_starts,
            replay_buffer_config={"min_size_for_sampling": min_size, "capacity": 1000},
            model={"fcnet_hiddens": [8]},
        )
        .reporting(min_sample_timesteps_per_iteration=4)
        .debugging(seed=0, log_sys_usage=False)
        .build()
    )


@pytest.mark.parametrize(
    ("learning_starts", "min_size", "first_update_at"),
    [(0, 20, 20), (0, 0, 4), (12, 28, 28), (28, 12, 28)],
)
def test_min_size_for_sampling_holds_back_replay(
    learning_starts: int, min_size: int, first_update_at: int
) -> None:
    algo = _dqn(learning_starts, min_size)
    try:
        for _ in range(first_update_at // 4 - 1):
            result = algo.train()
            assert result["info"]["learner"] == {}, result["timesteps_total"]
            assert result["info"]["num_env_steps_trained"] == 0
        result = algo.train()
        assert result["timesteps_total"] == first_update_at
        assert len(algo.replay_buffers["default_policy"]) == first_update_at
        assert result["info"]["learner"]["default_policy"]["num_grad_updates"] == 1
        assert result["info"]["num_env_steps_trained"] == 8
    finally:
        algo.stop()


# ------------------------------------------------------------------ sampler_results


def test_sampler_results_stop_keys_are_described_and_checked() -> None:
    config = PPOConfig().environment("CartPole-v1").validate()
    good = {
        "sampler_results/episode_reward_mean": 100,
        "sampler_results/episode_len_mean": 100,
        "sampler_results/episodes_this_iter": 1,
        "sampler_results/custom_metrics/x_mean": 1,
        "sampler_results/policy_reward_mean/default_policy": 1,
        "sampler_results/sampler_perf/mean_env_wait_ms": 1,
    }
    assert stop_issues(good, "stop.", config) == []
    bad = {"sampler_results/episode_reward_mea": 1, "sampler_results/hist_stats/episode_reward": 1}
    first, second = (i.render() for i in stop_issues(bad, "stop.", config))
    assert "did you mean 'sampler_results/episode_reward_mean'" in first
    assert "is a list of per-episode values, not a number" in second
    entry = describe("sampler_results/episode_reward_mean")
    assert entry is not None and entry.kind == "number"


def test_result_keys_lists_the_sampler_results(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["result-keys"]) == 0
    listed = [line.split()[0] for line in capsys.readouterr().out.splitlines()[1:]]
    for key in (
        "sampler_results/episode_reward_mean",
        "sampler_results/episode_reward_min",
        "sampler_results/episode_reward_max",
        "sampler_results/episode_len_mean",
        "sampler_results/episodes_this_iter",
        "sampler_results/hist_stats/<name>",
        "sampler_results/custom_metrics/<metric>_mean",
        "sampler_results/sampler_perf/<timer>",
    ):
        assert key in listed, key


def test_a_result_carries_the_sampler_results_block() -> None:
    algo = _small_pg().build()
    try:
        result = algo.train()
        result = algo.train()
    finally:
        algo.stop()
    block = result["sampler_results"]
    for key in (
        "episode_reward_mean",
        "episode_reward_min",
        "episode_reward_max",
        "episode_len_mean",
        "episodes_this_iter",
        "hist_stats",
        "custom_metrics",
        "policy_reward_mean",
        "sampler_perf",
    ):
        assert block[key] == result[key], key
    assert block["hist_stats"] is not result["hist_stats"]  # a copy: editing one keeps the other
    config = _small_pg().validate()
    reached = result["episode_reward_mean"]
    stop = StopCriteria({"sampler_results/episode_reward_mean": reached}, config, "x")
    assert stop.reached(result)
    assert not StopCriteria(
        {"sampler_results/episode_reward_mean": reached + 1}, config, "x"
    ).reached(result)


def test_a_misspelt_rllib2_name_gets_a_did_you_mean() -> None:
    with pytest.raises(ConfigError, match="did you mean 'min_sample_timesteps_per_iteration'"):
        PPOConfig.from_dict({"min_sample_timesteps_per_iteraton": 1})
    with pytest.raises(ConfigError, match="did you mean 'custom_evaluation_function'"):
        PPOConfig().evaluation(custom_evaluation_functon=_score)  # type: ignore[call-arg]


def test_num_rollout_workers_is_the_rllib_2x_name_of_num_workers() -> None:
    config = PPOConfig().rollouts(num_rollout_workers=3)  # type: ignore[call-arg]
    assert config["num_workers"] == 3 and config["num_rollout_workers"] == 3
    assert "num_rollout_workers" not in config.to_dict()
    assert PPOConfig.from_dict({"num_rollout_workers": 1})["num_workers"] == 1
    with pytest.raises(ConfigError, match=r"num_rollout_workers: is the RLlib 2.x name"):
        PPOConfig.from_dict({"num_rollout_workers": 1, "num_workers": 2})


def test_the_env_runner_names_of_ray_2_10_set_the_worker_counts() -> None:
    config = PPOConfig.from_dict({"num_env_runners": 2, "evaluation_num_env_runners": 1})
    assert config["num_workers"] == 2 and config["evaluation_num_workers"] == 1
    assert "evaluation_num_env_runners" not in config.to_dict()


def test_sacs_optimization_config_is_the_rllib_2x_name_of_optimization() -> None:
    from rlconf import SACConfig

    config = SACConfig().training(optimization_config={"actor_learning_rate": 0.005})  # type: ignore[call-arg]
    assert config["optimization"]["actor_learning_rate"] == 0.005
    assert config["optimization"]["critic_learning_rate"] == 3e-4  # merged, as the reference
    assert "optimization_config" not in config.to_dict()
    with pytest.raises(ConfigError, match=r"optimization_config: unknown key for PPOConfig"):
        PPOConfig().training(optimization_config={})  # type: ignore[call-arg]


@pytest.mark.parametrize(
    ("config_class", "key", "value", "instead"),
    [
        (DQNConfig, "learning_starts", 1000, "num_steps_sampled_before_learning_starts"),
        (DQNConfig, "buffer_size", 50000, "replay_buffer_config={'capacity': ...}"),
        (SACConfig, "prioritized_replay", True, "'PrioritizedReplayBuffer'"),
        (DQNConfig, "prioritized_replay_alpha", 0.6, "{'prioritized_replay_alpha': ...}"),
        (DQNConfig, "final_prioritized_replay_beta", 1.0, "{'prioritized_replay_beta': ...}"),
        (SACConfig, "Q_model", {"fcnet_hiddens": [64]}, "q_model_config"),
        (SACConfig, "policy_model", {"fcnet_hiddens": [64]}, "policy_model_config"),
    ],
)
def test_the_references_1x_replay_keys_are_refused_naming_the_key_to_use(
    config_class: type[DQNConfig] | type[SACConfig], key: str, value: Any, instead: str
) -> None:
    """RLlib 1.x files carry the replay keys RLlib 2.x moved into replay_buffer_config."""
    with pytest.raises(
        ConfigError, match=rf"{key}: not supported: deprecated.*{re.escape(instead)}"
    ):
        config_class.from_dict({key: value})
