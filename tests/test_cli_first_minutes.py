"""A user's first minutes with ``rlconf``: a mistake is reported before torch or Ray is imported,
at its line of the file, an unknown algorithm is named as the flag or key that gave it, a plain
``rlconf train --run PPO`` does not start Ray, and Ctrl-C during start-up exits quietly."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from rlconf import ConfigError
from rlconf.cli import main
from rlconf.experiment import Experiment, load_experiments
from tests import child_process
from tests.ray_session import ROOT

BAD_FILE = """\
cartpole-ppo:
    run: PPO
    env: CartPole-v1
    stop: {episode_reward_mean: 450, timesteps_totl: 1000}
    checkpoint_freq: -1
    config:
        num_workrs: 0
        gamma: high
        model:
            fcnet_hiddens: [64, many]
        multiagent:
            policies: 3
other:
    run: PPX
    env: CartPole-v1
"""

#: Runs the console script's ``run()`` with the arguments given, then prints which of torch and
#: Ray the process had imported when the command ended.
CONSOLE_SCRIPT = """
import json, sys
import rlconf.cli as cli
sys.argv = ["rlconf", *sys.argv[1:]]
try:
    cli.run()
except SystemExit as exit_:
    code = exit_.code
print(json.dumps({"code": code, "loaded": [m for m in ("torch", "ray") if m in sys.modules]}))
"""


def _console_script(*argv: str) -> tuple[dict[str, Any], str]:
    done = child_process.run(
        [sys.executable, "-c", CONSOLE_SCRIPT, *argv],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    report: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return report, done.stderr


def _bad_file(tmp_path: Path) -> Path:
    path = tmp_path / "bad.yaml"
    path.write_text(BAD_FILE)
    return path


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["train", "-f", "{bad}"], "cartpole-ppo.num_workrs: unknown key"),
        (
            ["train", "--run", "PPO", "--env", "CartPole-v1", "--config", '{"lr": "x"}'],
            "--config.lr='x' (str)",
        ),
        (
            [
                *("train", "--run", "PPO", "--env", "CartPole-v1", "--num-samples", "2"),
                *("--metric", "episode_rewrd_mean"),
            ],
            "metric='episode_rewrd_mean' (str): is not a result key",
        ),
        (["evaluate", "{tmp}/missing"], "CHECKPOINT='{tmp}/missing' (str): is not a folder"),
        (["evaluate", "{tmp}", "--episodes", "0"], "--episodes=0 (int): must be >= 1"),
    ],
)
def test_the_console_script_checks_before_it_imports_torch_or_ray(
    argv: list[str], message: str, tmp_path: Path
) -> None:
    def fill(text: str) -> str:
        return text.replace("{bad}", str(_bad_file(tmp_path))).replace("{tmp}", str(tmp_path))

    report, err = _console_script(*map(fill, argv))
    assert report == {"code": 2, "loaded": []}, err
    assert fill(message) in err


def test_an_unknown_algorithm_is_named_as_the_flag_or_key_that_gave_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["train", "--run", "PPX", "--env", "CartPol-v1"]) == 2
    err = capsys.readouterr().err
    assert "error: rlconf train: 2 invalid settings" in err
    assert "--run='PPX' (str): is not registered (did you mean 'PPO'?); allowed: A2C, " in err
    assert "--env='CartPol-v1' (str)" in err  # reported with it
    assert "get_config_class" not in err

    path = _bad_file(tmp_path)
    assert main(["train", "-f", str(path)]) == 2
    assert f"{path}:14: other.run='PPX' (str): is not registered (did you mean 'PPO'?)" in (
        capsys.readouterr().err
    )
    assert main(["config", "PPX"]) == 2
    assert "rlconf config: 1 invalid setting\n  - ALGORITHM='PPX' (str)" in capsys.readouterr().err


def test_every_mistake_of_a_file_is_named_with_its_line(tmp_path: Path) -> None:
    path = _bad_file(tmp_path)
    with pytest.raises(ConfigError) as error:
        load_experiments(path)
    lines = str(error.value).splitlines()[1:]
    expected = {
        f"{path}:4: cartpole-ppo.stop.timesteps_totl: is not a result key",
        f"{path}:5: cartpole-ppo.checkpoint_freq=-1 (int)",
        f"{path}:7: cartpole-ppo.num_workrs: unknown key",
        f"{path}:8: cartpole-ppo.gamma='high' (str)",
        f"{path}:10: cartpole-ppo.model.fcnet_hiddens.1='many' (str)",
        # Written under multiagent:, named without it.
        f"{path}:12: cartpole-ppo.policies=3 (int)",
        f"{path}:14: other.run='PPX' (str)",
    }
    for start in expected:
        assert any(line.startswith(f"  - {start}") for line in lines), (start, lines)
    assert len(lines) == len(expected)


@pytest.mark.parametrize(
    ("text", "location", "problem"),
    [
        ("x:\n  run: PPO\n   env: CartPole-v1\n", "3:7", "mapping values are not allowed here"),
        (
            "x:\n  run: PPO\n  config: {lr: 0.1\n",
            "4:1",
            "expected ',' or '}', but got '<stream end>' (while parsing a flow mapping from "
            "line 3)",
        ),
    ],
)
def test_a_file_that_is_no_yaml_is_refused_at_the_parsers_line_and_column(
    text: str, location: str, problem: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text(text)
    assert main(["train", "-f", str(path)]) == 2
    assert f"  - {path}:{location}: file: is not valid YAML: {problem}\n" in capsys.readouterr().err


def test_a_setting_refused_at_build_is_named_with_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "refused.yaml"
    path.write_text(
        textwrap.dedent(
            """\
            async-run:
                run: PG
                env: CartPole-v1
                stop: {training_iteration: 1}
                config:
                    num_workers: 0
                    sample_async: true
            """
        )
    )
    assert main(["train", "-f", str(path), "--local-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"  - {path}:7: async-run.sample_async=True (bool): is not supported" in err


def _trained(monkeypatch: pytest.MonkeyPatch, argv: list[str]) -> Experiment:
    """The experiment ``rlconf train`` would train (not trained)."""
    import rlconf.train_command

    experiments: list[Experiment] = []

    def run_train(experiment: Experiment, **_: Any) -> int:
        experiments.append(experiment)
        return 0

    monkeypatch.setattr(rlconf.train_command, "run_train", run_train)
    assert main(["train", *argv]) == 0
    (experiment,) = experiments
    return experiment


def test_train_from_flags_samples_in_this_process_unless_asked_for_workers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    flags = ["--run", "PPO", "--env", "CartPole-v1"]
    assert _trained(monkeypatch, flags).config["num_workers"] == 0
    assert capsys.readouterr().err == (
        "num_workers=0: PPO samples without Ray workers (rlconf train's default without -f; "
        "PPOConfig's is 2: --config '{\"num_workers\": 2}' samples in Ray workers)\n"
    )
    for key in ("num_workers", "num_rollout_workers"):
        asked = _trained(monkeypatch, [*flags, "--config", json.dumps({key: 1})])
        assert asked.config["num_workers"] == 1
        assert capsys.readouterr().err == ""
    # Nothing to say where the algorithm's own default has no workers.
    assert (
        _trained(monkeypatch, ["--run", "DQN", "--env", "CartPole-v1"]).config["num_workers"] == 0
    )
    assert capsys.readouterr().err == ""
    # A file keeps the algorithm's defaults, as RLlib's tuned files are written against them.
    path = tmp_path / "ppo.yaml"
    path.write_text("ppo:\n  run: PPO\n  env: CartPole-v1\n")
    assert _trained(monkeypatch, ["-f", str(path)]).config["num_workers"] == 2


#: Sends its line to stdout and then waits, where ``run()`` imports the runtime: SIGINT comes
#: while the runtime "imports".
INTERRUPTED_AT_START = """
import sys, time
import rlconf.cli as cli
def slow_import():
    print("importing", flush=True)
    time.sleep(120)
cli.preload_runtime = slow_import
sys.argv = ["rlconf", *sys.argv[1:]]
cli.run()
"""


def test_ctrl_c_during_start_up_exits_with_130_and_one_line() -> None:
    argv = ["train", "--run", "PG", "--env", "CartPole-v1"]
    with child_process.popen(
        [sys.executable, "-c", INTERRUPTED_AT_START, *argv],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as process:
        assert process.stdout is not None
        assert process.stdout.readline() == "importing\n"
        os.kill(process.pid, signal.SIGINT)
        _, err = process.communicate(timeout=60)
    assert process.returncode == 130
    assert err == "rlconf train: interrupted\n"


@pytest.mark.slow
def test_ray_started_for_workers_does_not_warn_that_token_authentication_is_on(
    tmp_path: Path,
) -> None:
    script = textwrap.dedent(
        """
        import ray
        from rlconf import PPOConfig
        from runtime.cluster.ray_session import ensure_ray
        try:
            assert ensure_ray(PPOConfig(), num_cpus=1)
        finally:
            ray.shutdown()
        """
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    done = child_process.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**env, "HOME": str(tmp_path)},  # Ray writes the cluster's token under ~/.ray
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Token authentication" not in done.stderr
