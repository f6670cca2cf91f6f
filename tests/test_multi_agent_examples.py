"""The multi-agent examples on a small budget, run as a user runs them: the two scripts
(``examples/multi_agent_cartpole.py``, ``examples/self_play_rps.py``) and the experiment file
``examples/tuned/multi-agent-cartpole-ppo.yaml`` through the command line.

tests/test_examples.py runs every script once more with no arguments (multi_agent_cartpole.py
then trains until both policies reach 150)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import child_process

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
TUNED_FILE = "examples/tuned/multi-agent-cartpole-ppo.yaml"


def _run(*args: str, results: Path, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return child_process.run(
        [sys.executable, *args],
        cwd=cwd,
        env={**os.environ, "RLCONF_RESULTS_DIR": str(results)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_multi_agent_cartpole_prints_each_policy_and_fails_short_of_its_target(
    tmp_path: Path,
) -> None:
    done = _run(
        str(EXAMPLES / "multi_agent_cartpole.py"),
        "--stop-timesteps",
        "1024",
        results=tmp_path / "results",
        cwd=tmp_path,
    )
    # 1024 env steps are far too few for a mean return of 150: the exit code says so.
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-4000:]
    assert "not every policy reached 150.0 within 1024 env steps" in done.stderr
    lines = done.stdout.splitlines()
    assert sum(line.startswith("iter ") for line in lines) == 4  # 256 env steps each
    assert any(line.startswith("policy shared lr 0.0005: mean return") for line in lines)
    assert any(line.startswith("policy solo   lr 0.002: mean return") for line in lines)


def test_multi_agent_cartpole_exits_0_once_every_policy_reaches_a_low_target(
    tmp_path: Path,
) -> None:
    # A random policy averages ~22 on CartPole: 15 is reached in the first iterations.
    done = _run(
        str(EXAMPLES / "multi_agent_cartpole.py"),
        "--stop-timesteps",
        "5000",
        "--target",
        "15",
        results=tmp_path / "results",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    assert "every policy reached 15.0 after" in done.stdout


def test_the_mapping_function_shares_one_policy_between_agents_0_and_1() -> None:
    sys.path.insert(0, str(EXAMPLES))
    try:
        import multi_agent_cartpole as example
    finally:
        sys.path.remove(str(EXAMPLES))
    assert [example.map_agent(i) for i in range(3)] == ["shared", "shared", "solo"]
    config = example.make_config()
    assert set(config["policies"]) == {"shared", "solo"}
    assert {pid: spec.config["lr"] for pid, spec in config["policies"].items()} == {
        "shared": 5e-4,
        "solo": 2e-3,
    }


@pytest.mark.parametrize("api", ["aec", "parallel"])
def test_self_play_grows_the_league_every_n_iterations(api: str, tmp_path: Path) -> None:
    pytest.importorskip("pettingzoo")
    args = ["--iterations", "5", "--snapshot-every", "2"]
    if api == "parallel":
        args.append("--parallel")
    done = _run(
        str(EXAMPLES / "self_play_rps.py"), *args, results=tmp_path / "results", cwd=tmp_path
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    lines = done.stdout.splitlines()
    leagues = [int(line.split("league")[1].split()[0]) for line in lines if line.startswith("iter")]
    assert leagues == [0, 1, 1, 2, 2]
    assert all("main's mean return" in line for line in lines if line.startswith("iter"))
    assert lines[-1] == "league of 2 snapshots: main, main_v1, main_v2"


def test_the_tuned_file_trains_through_the_command_line(tmp_path: Path) -> None:
    # As the file's header says: `python -m rlconf.cli` from the repository root, so that its
    # import paths (examples.multi_agent_cartpole:...) resolve.
    done = _run(
        "-m",
        "rlconf.cli",
        "train",
        "-f",
        TUNED_FILE,
        "--stop",
        '{"timesteps_total": 1024}',
        results=tmp_path,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    assert done.stdout.count("iter ") == 4
    assert "done: timesteps_total reached 1024 (target 1024)" in done.stdout
    (run_dir,) = tmp_path.iterdir()
    assert (run_dir / "checkpoint_000004").is_dir()  # checkpoint_at_end
    params = json.loads((run_dir / "params.json").read_text())
    assert params["multiagent"]["policy_mapping_fn"] == {
        "$import": "examples.multi_agent_cartpole:map_agent"
    }
    last = json.loads((run_dir / "result.json").read_text().splitlines()[-1])
    assert last["timesteps_total"] == 1024
    assert set(last["policy_reward_mean"]) == {"shared", "solo"}
    assert last["worst_policy_reward_mean"] == min(last["policy_reward_mean"].values())
