"""RLlib 2.x's keys of ``replay_buffer_config``: ``learning_starts`` (its tuned
``sac/pendulum-sac.yaml``) sets ``num_steps_sampled_before_learning_starts``; ``type`` takes
RLlib's classes and import paths; every other key of its ``MultiAgentReplayBuffer`` and of the
DQN / SAC / DDPG / TD3 configs either acts or is refused with its reason, never as an unknown
key."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from rlconf import DDPGConfig, DQNConfig, SACConfig, TD3Config
from rlconf.cli import main
from rlconf.experiment import Overrides, load_experiments
from rlconf.replay_buffer_config import complete_replay_buffer_config
from runtime.buffers import PrioritizedReplayBuffer, ReplayBuffer, make_replay_buffer

#: rllib/tuned_examples/sac/pendulum-sac.yaml of RLlib 2.x (ray-project/ray at
#: 048f73e1902d1e464c92b7a0c7f0101e44ac11e7), as written.
PENDULUM_SAC = """\
# Pendulum SAC can attain -150+ reward in 6-7k
# Configurations are the similar to original softlearning/sac codebase
pendulum-sac:
    env: Pendulum-v1
    run: SAC
    stop:
        episode_reward_mean: -150
        timesteps_total: 10000
    config:
        # Works for both torch and tf.
        seed: 42
        framework: tf
        horizon: 200
        soft_horizon: false
        q_model_config:
          fcnet_activation: relu
          fcnet_hiddens: [256, 256]
        policy_model_config:
          fcnet_activation: relu
          fcnet_hiddens: [256, 256]
        tau: 0.005
        target_entropy: auto
        no_done_at_end: true
        n_step: 1
        rollout_fragment_length: 1
        train_batch_size: 256
        target_network_update_freq: 1
        min_sample_timesteps_per_reporting: 1000
        replay_buffer_config:
          type: MultiAgentPrioritizedReplayBuffer
          learning_starts: 256
        optimization:
          actor_learning_rate: 0.0003
          critic_learning_rate: 0.0003
          entropy_learning_rate: 0.0003
        num_workers: 0
        num_gpus: 0
        metrics_smoothing_episodes: 5
"""

#: RLlib 2.x's DQN files (rllib/tuned_examples/dqn/, the same commit era), their replay keys.
DQN_FILES: dict[str, dict[str, Any]] = {
    "pong-dqn": {
        "type": "MultiAgentPrioritizedReplayBuffer",
        "capacity": 50000,
    },
    "atari-dqn": {"type": "MultiAgentReplayBuffer", "capacity": 1000000},
    "memory-leak-test-dqn": {"capacity": 500},
    # dqn/pong-rainbow.yaml's replay_buffer_config
    "pong-rainbow": {
        "type": "MultiAgentPrioritizedReplayBuffer",
        "prioritized_replay_alpha": 0.5,
        "learning_starts": 10000,
        "capacity": 50000,
    },
}


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "pendulum-sac.yaml"
    path.write_text(text)
    return path


# ------------------------------------------------------------------ learning_starts


def test_rllibs_pendulum_sac_file_loads_with_learning_starts_as_the_warm_up(
    tmp_path: Path,
) -> None:
    with pytest.warns(DeprecationWarning, match="metrics_smoothing_episodes"):
        (experiment,) = load_experiments(
            _write(tmp_path, PENDULUM_SAC), Overrides(framework="torch")
        )
    config = experiment.config
    assert config.num_steps_sampled_before_learning_starts == 256
    assert "learning_starts" not in config.replay_buffer_config
    assert config.replay_buffer_config["type"] == "MultiAgentPrioritizedReplayBuffer"
    as_dict = config.to_dict()  # given back under rlconf's key only
    assert "learning_starts" not in as_dict["replay_buffer_config"]
    assert "learning_starts" not in as_dict


def test_rllibs_pendulum_sac_file_trains_through_the_cli(tmp_path: Path) -> None:
    # A short run: 300 steps, the first update after learning_starts=256 of them.
    argv = [
        "train",
        "-f",
        str(_write(tmp_path, PENDULUM_SAC)),
        "--framework",
        "torch",
        "--stop",
        '{"timesteps_total": 300}',
        "--config",
        json.dumps(
            {
                "min_sample_timesteps_per_reporting": 300,
                "train_batch_size": 32,
                "q_model_config": {"fcnet_hiddens": [16]},
                "policy_model_config": {"fcnet_hiddens": [16]},
            }
        ),
        "--local-dir",
        str(tmp_path / "results"),
    ]
    with pytest.warns(DeprecationWarning, match="metrics_smoothing_episodes"):
        assert main(argv) == 0
    (result_file,) = (tmp_path / "results").glob("*/result.json")
    (result,) = [json.loads(line) for line in result_file.read_text().splitlines()]
    params = json.loads(result_file.with_name("params.json").read_text())
    assert params["num_steps_sampled_before_learning_starts"] == 256
    assert result["timesteps_total"] == 300
    learner = result["info"]["learner"]["default_policy"]
    # one update per sampled step once 256 are in (rollout_fragment_length 1)
    assert 0 < learner["num_grad_updates"] <= 300 - 256 + 1


def test_learning_starts_sets_the_key_on_every_input_path() -> None:
    expected = DQNConfig().training(num_steps_sampled_before_learning_starts=256)
    given = {"replay_buffer_config": {"learning_starts": 256}}
    configs = [
        DQNConfig.from_dict(given),
        DQNConfig().update_from_dict(given),
        DQNConfig().training(replay_buffer_config={"learning_starts": 256}),  # type: ignore[typeddict-unknown-key]
    ]
    assigned = DQNConfig()
    assigned["replay_buffer_config"] = {"learning_starts": 256}
    configs.append(assigned)
    for config in configs:
        assert config == expected
    assert DQNConfig.overrides(**given) == {
        "replay_buffer_config": {},
        "num_steps_sampled_before_learning_starts": 256,
    }
    # the other keys of the dict act as before (a partial dict updates the current one)
    config = DQNConfig.from_dict({"replay_buffer_config": {"learning_starts": 5, "capacity": 9}})
    assert config.num_steps_sampled_before_learning_starts == 5
    assert config.replay_buffer_config["capacity"] == 9
    assert config.replay_buffer_config["prioritized_replay_alpha"] == 0.6
    # the same value under both names is the one setting
    both = {"num_steps_sampled_before_learning_starts": 256, **given}
    assert DQNConfig.from_dict(both) == expected


def test_learning_starts_beside_its_key_with_another_value_names_both() -> None:
    from rlconf import ConfigError

    with pytest.raises(ConfigError) as caught:
        DQNConfig().training(
            num_steps_sampled_before_learning_starts=100,
            replay_buffer_config={"learning_starts": 256},  # type: ignore[typeddict-unknown-key]
        )
    (issue,) = caught.value.issues
    assert issue.field == "replay_buffer_config.learning_starts"
    assert "RLlib 2.x name of num_steps_sampled_before_learning_starts" in issue.problem
    assert "num_steps_sampled_before_learning_starts=100" in issue.problem
    assert "replay_buffer_config.learning_starts=256" in issue.problem
    with pytest.raises(ConfigError, match=r"replay_buffer_config\.learning_starts=-1 \(int\)"):
        SACConfig.from_dict({"replay_buffer_config": {"learning_starts": -1}})


def test_the_schema_takes_learning_starts_in_replay_buffer_config() -> None:
    schema = SACConfig.json_schema()
    validator = jsonschema.Draft202012Validator(schema)
    validator.validate(
        {"replay_buffer_config": {"learning_starts": 256, "storage_unit": "timesteps"}}
    )
    assert not validator.is_valid({"replay_buffer_config": {"learning_starts": -1}})
    assert not validator.is_valid({"replay_buffer_config": {"buffer_size": 5}})
    ref = schema["properties"]["replay_buffer_config"]["$ref"].rsplit("/", 1)[-1]
    entry = schema["$defs"][ref]["properties"]["learning_starts"]
    assert "num_steps_sampled_before_learning_starts" in entry["description"]


# ------------------------------------------------------------------ type


class _RLlibBuffer:
    """Stands in for a class of ray.rllib.utils.replay_buffers (RLlib is not installed)."""


@pytest.mark.parametrize(
    ("given", "kind"),
    [
        (
            "ray.rllib.utils.replay_buffers.MultiAgentPrioritizedReplayBuffer",
            PrioritizedReplayBuffer,
        ),
        (
            "ray.rllib.utils.replay_buffers.multi_agent_replay_buffer.MultiAgentReplayBuffer",
            ReplayBuffer,
        ),
        ("ray.rllib.utils.replay_buffers.replay_buffer.ReplayBuffer", ReplayBuffer),
        (PrioritizedReplayBuffer, PrioritizedReplayBuffer),  # rlconf's own class
        ("RLLIB:MultiAgentPrioritizedReplayBuffer", PrioritizedReplayBuffer),
    ],
)
def test_type_takes_rllibs_classes_and_import_paths(given: Any, kind: type) -> None:
    if isinstance(given, str) and given.startswith("RLLIB:"):
        name = given.removeprefix("RLLIB:")
        given = type(
            name, (_RLlibBuffer,), {"__module__": "ray.rllib.utils.replay_buffers." + name.lower()}
        )
    config = DQNConfig().training(replay_buffer_config={"type": given})
    stored = config.replay_buffer_config["type"]
    assert isinstance(stored, str) and "." not in stored
    assert type(make_replay_buffer(config.replay_buffer_config)) is kind
    assert DQNConfig.from_json(config.to_json()) == config


@pytest.mark.parametrize(
    ("given", "reason"),
    [
        ("ReservoirReplayBuffer", "ReservoirReplayBuffer is not available here"),
        ("MultiAgentMixInReplayBuffer", "replay_proportion"),
        ("my_package.buffers.MyBuffer", "buffer classes of your own are not supported"),
        (dict, "builtins.dict is not one of RLlib's replay buffers"),
    ],
)
def test_type_refuses_buffers_that_are_not_here_with_the_reason(given: Any, reason: str) -> None:
    from rlconf import ConfigError

    with pytest.raises(ConfigError) as caught:
        DQNConfig().training(replay_buffer_config={"type": given})
    (issue,) = caught.value.issues
    assert issue.field == "replay_buffer_config.type" and reason in issue.problem
    assert "'PrioritizedReplayBuffer'" in issue.allowed


# ------------------------------------------------------------------ every other key


#: key -> (a value that asks for what rlconf's buffers do, a value refused, its reason)
ACCEPTED_OR_REFUSED: dict[str, tuple[Any, Any, str]] = {
    "storage_unit": ("timesteps", "episodes", "store and replay single timesteps"),
    "replay_sequence_length": (1, 20, "no sequences are replayed"),
    "replay_burn_in": (0, 10, "no sequences are replayed"),
    "replay_mode": ("independent", "lockstep", "lockstep replay is not available"),
    "num_shards": (1, 4, "buffer shards (APEX's replay actors) are not available"),
    "no_local_replay_buffer": (False, True, "learn only from those buffers"),
    "underlying_buffer_config": (None, {"type": "PrioritizedReplayBuffer"}, "the one type names"),
    "_enable_replay_buffer_api": (True, False, "RLlib 2.x's replay buffer API"),
    "prioritized_replay": (-1, True, "type chooses the buffer"),
    "worker_side_prioritization": (False, True, "no worker-side priority computation"),
}
#: Keys no value of changes anything here (they shape stored sequences, never made here).
ANY_VALUE = {
    "replay_zero_init_states": (True, False),
    "replay_sequence_override": (True, False),
    "replay_buffer_shards_colocated_with_driver": (True, False),
}
#: key -> (a value, the reason it is refused at any value)
ALWAYS_REFUSED: dict[str, tuple[Any, str]] = {
    "buffer_size": (50000, "RLlib 2.x refuses this old name"),
    "replay_batch_size": (32, "a replayed batch is train_batch_size rows"),
    "replay_ratio": (0.66, "MultiAgentMixInReplayBuffer, which is not available"),
}


@pytest.mark.parametrize("config_class", [DQNConfig, SACConfig, DDPGConfig, TD3Config])
def test_every_rllib2_key_acts_or_is_refused_with_its_reason(config_class: Any) -> None:
    from rlconf import ConfigError

    for key, (accepted, refused, reason) in ACCEPTED_OR_REFUSED.items():
        config = config_class().training(replay_buffer_config={key: accepted})
        assert config.inert_settings() == {f"replay_buffer_config.{key}": accepted}, key
        with pytest.raises(ConfigError) as caught:
            config_class.from_dict({"replay_buffer_config": {key: refused}})
        (issue,) = caught.value.issues
        assert issue.field == f"replay_buffer_config.{key}", key
        assert "unknown key" not in issue.problem and reason in issue.problem, key
        assert repr(accepted) in issue.allowed, key
    for key, values in ANY_VALUE.items():
        for value in values:
            config = config_class().training(replay_buffer_config={key: value})
            assert config.inert_settings() == {f"replay_buffer_config.{key}": value}
    for key, (value, reason) in ALWAYS_REFUSED.items():
        with pytest.raises(ConfigError) as caught:
            config_class().training(replay_buffer_config={key: value})
        (issue,) = caught.value.issues
        assert issue.field == f"replay_buffer_config.{key}"
        assert issue.problem.startswith("is not supported: ") and reason in issue.problem, key
        assert "leave it out" in issue.allowed


def test_accepted_keys_are_named_at_build_and_change_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    rllib_defaults: Any = {  # RLlib 2.x DQN's replay_buffer_config, as its params.json holds it
        "type": "MultiAgentPrioritizedReplayBuffer",
        "prioritized_replay": -1,
        "capacity": 1000,
        "prioritized_replay_alpha": 0.6,
        "prioritized_replay_beta": 0.4,
        "prioritized_replay_eps": 1e-6,
        "replay_sequence_length": 1,
        "worker_side_prioritization": False,
        "storage_unit": "timesteps",
    }
    config = (
        DQNConfig()
        .environment("CartPole-v1")
        .rollouts(num_workers=0)
        .training(replay_buffer_config=rllib_defaults, model={"fcnet_hiddens": [8]})
        .debugging(log_sys_usage=False)
    )
    settings = complete_replay_buffer_config(config.replay_buffer_config)
    assert settings["type"] == "PrioritizedReplayBuffer" and settings["capacity"] == 1000
    with caplog.at_level(logging.WARNING):
        algo = config.build()
    try:
        assert isinstance(algo.replay_buffer("default_policy"), PrioritizedReplayBuffer)
    finally:
        algo.stop()
    warned = " ".join(r.getMessage() for r in caplog.records)
    for key in ("prioritized_replay", "replay_sequence_length", "storage_unit"):
        assert f"replay_buffer_config.{key}" in warned


@pytest.mark.parametrize("name", sorted(DQN_FILES))
def test_rllibs_dqn_files_replay_keys_are_taken(name: str) -> None:
    replay = dict(DQN_FILES[name])
    config = DQNConfig.from_dict({"replay_buffer_config": replay})
    starts = replay.pop("learning_starts", None)
    if starts is not None:
        assert config.num_steps_sampled_before_learning_starts == starts
    for key, value in replay.items():
        assert config.replay_buffer_config[key] == value
    make_replay_buffer(config.replay_buffer_config)
