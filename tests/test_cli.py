"""The rlconf command line prints validated configs, schemas and algorithms."""

from __future__ import annotations

import csv
import json
import os
import signal
import struct
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from rlconf import PPOConfig
from rlconf.cli import main
from rlconf.train_command import STOP_SIGNALS, StopSignals
from tests import child_process


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
        "APPO",
        "APPOConfig",
        "BC",
        "BCConfig",
        "DDPG",
        "DDPGConfig",
        "DQN",
        "DQNConfig",
        "IMPALA",
        "IMPALAConfig",
        "MARWIL",
        "MARWILConfig",
        "PG",
        "PGConfig",
        "PPO",
        "PPOConfig",
        "SAC",
        "SACConfig",
        "TD3",
        "TD3Config",
    ]


def test_console_script_runs() -> None:
    out = child_process.run(
        [sys.executable, "-m", "rlconf.cli", "config", "PG", "--env", "CartPole-v1"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(out.stdout)["lr"] == 0.0004


SMALL_PPO = {
    "num_workers": 0,
    "train_batch_size": 200,
    "rollout_fragment_length": 100,
    "sgd_minibatch_size": 100,
    "num_sgd_iter": 1,
    "model": {"fcnet_hiddens": [8]},
    "evaluation_interval": 2,
    "evaluation_duration": 2,
}


TRAIN_SMALL_PPO = [
    "train",
    "--run",
    "PPO",
    "--env",
    "CartPole-v1",
    "--config",
    json.dumps(SMALL_PPO),
]


def _tensorboard_tags(folder: Path) -> set[str]:
    """Scalar tags in the TensorBoard event files of ``folder`` (TFRecord framing read here)."""
    from tensorboardX.proto import event_pb2

    tags: set[str] = set()
    for file in folder.glob("events.out.tfevents.*"):
        data = file.read_bytes()
        offset = 0
        while offset < len(data):
            (length,) = struct.unpack("<Q", data[offset : offset + 8])
            record = data[offset + 12 : offset + 12 + length]
            offset += 12 + length + 4
            event = event_pb2.Event.FromString(record)
            tags.update(value.tag for value in event.summary.value)
    return tags


def test_train_checkpoint_evaluate_and_the_results_directory(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code = main(
        [
            *TRAIN_SMALL_PPO,
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
    (run_dir,) = tmp_path.iterdir()
    assert run_dir.name.startswith("PPO_CartPole-v1_")
    assert f"results in {run_dir}" in out
    names = sorted(p.name for p in run_dir.iterdir())
    assert names[:2] == ["checkpoint_000002", "checkpoint_000003"]
    assert names[2].startswith("events.out.tfevents.")
    assert names[3:] == ["params.json", "progress.csv", "result.json", "run.json"]

    params = json.loads((run_dir / "params.json").read_text())
    assert PPOConfig.from_dict({k: v for k, v in params.items() if k != "$algorithm"}).lr == 5e-5
    results = [json.loads(line) for line in (run_dir / "result.json").read_text().splitlines()]
    assert [r["training_iteration"] for r in results] == [1, 2, 3]
    assert results[1]["evaluation"]["episodes_this_iter"] == 2
    with open(run_dir / "progress.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [int(r["timesteps_total"]) for r in rows] == [200, 400, 600]
    # evaluation ran at iteration 2 only; its column exists for every row
    assert [r["evaluation/episodes_this_iter"] for r in rows] == ["", "2", ""]
    tags = _tensorboard_tags(run_dir)
    assert {"episode_reward_mean", "evaluation/episode_reward_mean"} <= tags
    assert "info/learner/default_policy/learner_stats/total_loss" in tags

    report = tmp_path / "eval" / "returns.json"
    checkpoint = run_dir / "checkpoint_000003"
    assert (
        main(["evaluate", str(checkpoint), "--episodes", "3", "--no-explore", "--out", str(report)])
        == 0
    )
    printed = capsys.readouterr().out
    assert printed.count("episode ") == 3 and "3 episodes" in printed
    data = json.loads(report.read_text())
    assert len(data["episode_returns"]) == 3 and data["env"] == "CartPole-v1"
    # --no-explore: the greedy policy on the same seeds gives the same returns again
    assert main(["evaluate", str(checkpoint), "--steps", "50", "-q"]) == 0
    assert capsys.readouterr().out == ""

    # the results folder itself: its latest checkpoint (iteration 3, not 2)
    assert main(["evaluate", str(run_dir), "--episodes", "1", "--out", str(report)]) == 0
    assert f"using the latest checkpoint: {checkpoint}" in capsys.readouterr().out
    assert json.loads(report.read_text())["checkpoint"] == str(checkpoint)


def test_evaluate_refuses_a_folder_without_checkpoints_and_an_unknown_env(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "checkpoints_old").mkdir()
    assert main(["evaluate", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "is neither a checkpoint nor a results folder holding checkpoint_<iteration>" in err
    assert main(["evaluate", str(tmp_path / "missing")]) == 2
    assert "is not a folder" in capsys.readouterr().err
    assert main(["evaluate", str(tmp_path), "--env", "CartPol-v1"]) == 2
    assert "--env='CartPol-v1'" in capsys.readouterr().err


def test_train_refuses_bad_input_before_building(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["train", "--run", "PPO", "--config", '{"lr": "x"}']) == 2
    assert "lr='x'" in capsys.readouterr().err
    assert main(["train", "--run", "PPO", "--stop", '{"episode_reward_mean": "high"}']) == 2
    assert "--stop.episode_reward_mean" in capsys.readouterr().err


def _ignore_sigint() -> None:
    """``preexec_fn``: the child starts with SIGINT ignored, as under nohup or a CI runner."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _interrupt_training(
    tmp_path: Path, signum: int, preexec_fn: Callable[[], None] | None = None
) -> tuple[int, str]:
    """Start ``rlconf train`` on a small PPO, send ``signum`` once it has printed its first
    progress line, and return its exit code and stderr."""
    env = {**os.environ, "RLCONF_RESULTS_DIR": str(tmp_path)}
    options = {} if preexec_fn is None else {"preexec_fn": preexec_fn}
    with child_process.popen(
        [sys.executable, "-m", "rlconf.cli", *TRAIN_SMALL_PPO],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        **options,
    ) as process:
        assert process.stdout is not None
        for line in process.stdout:
            if line.startswith("iter "):
                break
        process.send_signal(signum)
        _out, err = process.communicate(timeout=120)
    (run_dir,) = tmp_path.iterdir()
    assert list(run_dir.glob("checkpoint_*")), err
    return process.returncode, err


def test_ctrl_c_stops_training_and_writes_a_checkpoint(tmp_path: Path) -> None:
    code, err = _interrupt_training(tmp_path, signal.SIGINT)
    assert code == 130, err
    assert "SIGINT: stopping after this iteration" in err
    assert "interrupted: writing a checkpoint" in err


def test_ctrl_c_stops_training_started_with_sigint_ignored(tmp_path: Path) -> None:
    # nohup, a CI runner or `trap "" INT`: Python raises no KeyboardInterrupt there by itself
    code, err = _interrupt_training(tmp_path, signal.SIGINT, preexec_fn=_ignore_sigint)
    assert code == 130, err
    assert "interrupted: writing a checkpoint" in err


def test_sigterm_stops_training_and_writes_a_checkpoint(tmp_path: Path) -> None:
    code, err = _interrupt_training(tmp_path, signal.SIGTERM, preexec_fn=_ignore_sigint)
    assert code == 128 + signal.SIGTERM, err
    assert "SIGTERM: stopping after this iteration" in err
    assert "interrupted: writing a checkpoint" in err


def test_stop_signals_ask_once_then_interrupt_and_restore_the_handlers() -> None:
    before = {signum: signal.getsignal(signum) for signum in STOP_SIGNALS}
    with StopSignals() as signals:
        assert all(callable(signal.getsignal(signum)) for signum in STOP_SIGNALS)
        signal.raise_signal(signal.SIGTERM)
        assert signals.signum == signal.SIGTERM
        with pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signal.SIGINT)
    assert {signum: signal.getsignal(signum) for signum in STOP_SIGNALS} == before


def test_train_in_process_restores_the_signal_handlers(tmp_path: Path) -> None:
    before = {signum: signal.getsignal(signum) for signum in STOP_SIGNALS}
    args = [*TRAIN_SMALL_PPO, "--stop", '{"training_iteration": 1}', "--local-dir", str(tmp_path)]
    assert main([*args, "-q"]) == 0
    assert {signum: signal.getsignal(signum) for signum in STOP_SIGNALS} == before


@pytest.mark.parametrize(
    "command", [["result-keys"], ["list"], ["schema", "PPO"], ["config", "PPO"]], ids=" ".join
)
def test_a_closed_stdout_ends_a_command_quietly(command: list[str]) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)  # `rlconf result-keys | head`, the reader gone before the first line
    try:
        done = child_process.run(
            [sys.executable, "-m", "rlconf.cli", *command],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    finally:
        os.close(write_end)
    assert done.stderr == ""
    assert done.returncode == 141  # 128 + SIGPIPE, as for a program SIGPIPE stops


def test_a_plan_the_cluster_cannot_hold_is_one_error_line_and_code_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code = main(
        [
            "train",
            "--run",
            "PPO",
            "--env",
            "CartPole-v1",
            "--config",
            json.dumps({"num_workers": 1, "num_gpus_per_worker": 1}),
            "--stop",
            '{"training_iteration": 1}',
            "--local-dir",
            str(tmp_path),
        ]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert "error: PPO: the config asks for more than the Ray cluster has: GPU 1" in err
    assert "Traceback" not in err
    import ray

    # The Ray this build started went with it: a later ray.init() here starts afresh.
    assert not ray.is_initialized()
