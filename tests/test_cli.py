"""The rlconf command line prints validated configs, schemas and algorithms."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from rlconf import PPOConfig
from rlconf.cli import main


def test_config_prints_the_validated_config(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "PPO", "--env", "CartPole-v1", "--config", '{"lr": 0.001}']) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["env"] == "CartPole-v1" and data["lr"] == 0.001 and data["$algorithm"] == "PPO"
    assert PPOConfig.from_json(json.dumps(data)).lr == 0.001


def test_config_errors_exit_with_code_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "PPO", "--config", '{"lr": -1, "num_wrkers": 2}']) == 2
    err = capsys.readouterr().err
    assert "lr=-1" in err and "num_wrkers" in err
    assert main(["config", "PPX"]) == 2
    assert main(["config", "PPO", "--config", "[1]"]) == 2


def test_schema_and_list(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", "A2C"]) == 0
    assert "microbatch_size" in json.loads(capsys.readouterr().out)["properties"]
    assert main(["list"]) == 0
    assert capsys.readouterr().out.split() == [
        "A2C",
        "A2CConfig",
        "PG",
        "PGConfig",
        "PPO",
        "PPOConfig",
    ]


def test_console_script_runs() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "rlconf.cli", "config", "PG", "--env", "CartPole-v1"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(out.stdout)["lr"] == 0.0004


def test_train_stops_on_the_criterion_and_checkpoints(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    config = json.dumps(
        {
            "num_workers": 0,
            "train_batch_size": 200,
            "rollout_fragment_length": 100,
            "sgd_minibatch_size": 100,
            "num_sgd_iter": 1,
            "model": {"fcnet_hiddens": [8]},
        }
    )
    code = main(
        [
            "train",
            "--run",
            "PPO",
            "--env",
            "CartPole-v1",
            "--config",
            config,
            "--stop",
            '{"timesteps_total": 600}',
            "--checkpoint-freq",
            "2",
            "--checkpoint-at-end",
            "--local-dir",
            str(tmp_path),
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert out.count("iter ") == 3 and "steps      600" in out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint_000002", "checkpoint_000003"]


def test_train_refuses_bad_input_before_building(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["train", "--run", "PPO", "--config", '{"lr": "x"}']) == 2
    assert "lr='x'" in capsys.readouterr().err
    assert main(["train", "--run", "PPO", "--stop", '{"episode_reward_mean": "high"}']) == 2
    assert "--stop.episode_reward_mean" in capsys.readouterr().err
