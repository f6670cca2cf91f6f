"""``rlconf train -f FILE``: every error names the file and the experiment, and import paths in
the file resolve from the current directory, as with ``python -m`` (the console script puts it
on ``sys.path``)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from rlconf.cli import main, put_cwd_on_path
from tests import child_process

ROOT = Path(__file__).resolve().parents[1]
RLCONF = Path(sys.executable).with_name("rlconf")
SMALL_PG = {"num_workers": 0, "train_batch_size": 100, "rollout_fragment_length": 100}


class BrokenEnv:
    """An env class whose constructor fails (named by import path below)."""

    def __init__(self, _ctx: Any) -> None:
        raise RuntimeError("this env can't be made")


def _write(path: Path, experiments: dict[str, Any]) -> Path:
    path.write_text(json.dumps(experiments))  # JSON is YAML
    return path


def _experiment(env: str, **config: Any) -> dict[str, Any]:
    return {"run": "PG", "env": env, "stop": {"training_iteration": 1}, "config": config}


@pytest.mark.parametrize(
    ("env", "problem"),
    [
        (
            "no_such_package.envs:MyEnv",
            "can't be imported: can't import module 'no_such_package.envs' of "
            "'no_such_package.envs:MyEnv'",
        ),
        ("tests.envs:NoSuchEnv", "can't be imported: module 'tests.envs' has no attribute"),
        ("tests.test_cli_files:SMALL_PG", "names neither an env class nor a creator function"),
    ],
)
def test_a_bad_env_import_path_names_the_file_and_the_experiment(
    env: str, problem: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(
        tmp_path / "bad-env.yaml",
        {"fine": _experiment("CartPole-v1"), "my-experiment": _experiment(env)},
    )
    assert main(["train", "-f", str(path), "--local-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"error: rlconf train -f {path}: 1 invalid setting" in err
    assert f"my-experiment.env={env!r} (str): {problem}" in err
    assert not list(tmp_path.glob("PG_*"))  # reported before anything ran


def test_an_error_while_an_experiment_runs_names_the_file_and_the_experiment(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    refused = _write(
        tmp_path / "refused.yaml",
        {"async-run": _experiment("CartPole-v1", **SMALL_PG, sample_async=True)},
    )
    assert main(["train", "-f", str(refused), "--local-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"error: rlconf train -f {refused}: 1 invalid setting" in err
    assert "async-run.sample_async=True (bool): is not supported by the runtime" in err

    broken = _write(
        tmp_path / "broken.yaml",
        {"broken-env": _experiment("tests.test_cli_files:BrokenEnv", **SMALL_PG)},
    )
    with pytest.raises(RuntimeError, match="this env can't be made") as error:
        main(["train", "-f", str(broken), "--local-dir", str(tmp_path)])
    assert error.value.__notes__ == [
        f"(while running experiment 'broken-env' of rlconf train -f {broken})"
    ]


def test_the_console_script_puts_the_current_directory_first_on_the_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", ["/somewhere/bin", "/somewhere/lib"])
    put_cwd_on_path()
    put_cwd_on_path()
    assert sys.path == [str(tmp_path), "/somewhere/bin", "/somewhere/lib"]
    monkeypatch.setattr(sys, "path", ["", "/somewhere/lib"])  # python -m's way, or python -c's
    put_cwd_on_path()
    assert sys.path == ["", "/somewhere/lib"]


def test_the_multi_agent_tuned_file_runs_as_written_from_the_repository_root(
    tmp_path: Path,
) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = child_process.run(
        [
            RLCONF,
            "train",
            "-f",
            "examples/tuned/multi-agent-cartpole-ppo.yaml",
            "--stop",
            '{"training_iteration": 1}',
            "--local-dir",
            str(tmp_path),
            "-v",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    # The file's criteria and the --stop flag's, each against its target.
    assert "iter    1/1  steps      256/100000  " in done.stdout
    assert "worst_policy_reward_mean " in done.stdout
    (run,) = tmp_path.glob("PPO_examples.multi_agent_cartpole-MultiAgentCartPole_*")
    assert (run / "checkpoint_000001").is_dir()  # checkpoint_at_end: true
    # -v: INFO records on stderr, each once.
    assert done.stderr.count("INFO runtime.training.checkpointing: PPO: checkpoint of") == 1
    assert done.stderr.count("INFO runtime.algorithm: PPO: built for env") == 1
