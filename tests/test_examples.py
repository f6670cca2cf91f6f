"""Every script in examples/ runs to the end on a small budget (as a user would run it)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests import child_process

EXAMPLES = sorted((Path(__file__).resolve().parents[1] / "examples").glob("*.py"))

#: The examples that run in one process in seconds: the fast tier. The others start Ray
#: workers, Tune or a cluster, or train for longer, and run in the slow tier
#: (`python -m pytest -m slow`); a new example is slow until it is listed here.
FAST = {
    "config_basics",
    "curriculum",
    "multi_agent_cartpole",
    "repeat_after_me_lstm",
    "restore_and_act",
    "self_play_rps",
    "tuned_ppo_cartpole",
}


#: Arguments an example runs with here: multi_agent_cartpole trains to its target (150) by
#: default, which tests/test_multi_agent_learning.py checks; here its run ends once every
#: policy has finished an episode.
ARGS: dict[str, list[str]] = {"multi_agent_cartpole": ["--target", "0"]}

#: Examples whose functions another test module runs, with its own Ray session, as their
#: ``main`` runs them (only the ``ray.init`` or the temporary folder of ``main`` aside): their
#: script is not started again as a process here (a Ray session and its workers of its own).
DRIVEN_BY = {
    "fractional_gpus": ("tests/test_gpu_sharing.py", "fractional_gpus.train_four("),
    "sweep_lr": ("tests/test_tune.py", "sweep_lr.main("),
}


def test_the_examples_the_readme_promises_are_there() -> None:
    names = {p.stem for p in EXAMPLES}
    assert names >= FAST
    assert names >= {
        "quickstart",
        "tuned_ppo_cartpole",
        "custom_env",
        "custom_metrics",
        "curriculum",
        "custom_evaluation",
        "parallel_evaluation_demo",
        "fractional_gpus",
        "sweep_lr",
        "restore_and_act",
        "global_coordination",
    }


@pytest.mark.parametrize("stem", sorted(DRIVEN_BY))
def test_an_example_left_out_here_is_run_by_its_test_module(stem: str) -> None:
    module, call = DRIVEN_BY[stem]
    root = Path(__file__).resolve().parents[1]
    assert (root / "examples" / f"{stem}.py").exists()
    text = (root / module).read_text()
    assert f"import {stem}\n" in text and call in text, f"{module} no longer runs {stem}"


RUN_HERE = [p for p in EXAMPLES if p.stem not in DRIVEN_BY]


@pytest.mark.parametrize(
    "path",
    [pytest.param(p, marks=() if p.stem in FAST else pytest.mark.slow) for p in RUN_HERE],
    ids=[p.stem for p in RUN_HERE],
)
def test_example_runs(path: Path, tmp_path: Path) -> None:
    env = {
        **os.environ,
        "RLCONF_EXAMPLE_ITERATIONS": "1",
        "RLCONF_EXAMPLE_STEPS": "1000",
        "RLCONF_RESULTS_DIR": str(tmp_path / "results"),
    }
    done = child_process.run(
        [sys.executable, str(path), *ARGS.get(path.stem, [])],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    assert done.stdout.strip(), "an example says what it did"
