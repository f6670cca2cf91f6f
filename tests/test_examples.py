"""Every script in examples/ runs to the end on a small budget (as a user would run it)."""

from __future__ import annotations

import os
import runpy
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import child_process
from tests.ray_session import local_ray

EXAMPLES = sorted((Path(__file__).resolve().parents[1] / "examples").glob("*.py"))

#: The examples that run in one process in seconds: the fast tier. The others start Ray
#: workers, Tune or a cluster, or train for longer, and run in the slow tier
#: (`python -m pytest -m slow`); a new example is slow until it is listed here.
FAST = {
    "config_basics",
    "curriculum",
    "custom_env",
    "custom_metrics",
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
    "custom_algorithm": ("tests/test_custom_algorithm.py", "main(budget="),
    "fractional_gpus": ("tests/test_gpu_sharing.py", "fractional_gpus.train_four("),
    "sweep_lr": ("tests/test_tune.py", "sweep_lr.main("),
}

#: Slow examples that start and stop Ray themselves: each runs as a process of its own. The
#: other slow ones run in this process, as ``python examples/<name>.py`` would run them
#: (``__main__``), one after another in this module's Ray session: a process each would import
#: torch and start a Ray of its own every time.
OWN_RAY = {"global_coordination"}


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
    imported = f"import {stem}\n" in text or f"from {stem} import" in text
    assert imported and call in text, f"{module} no longer runs {stem}"


RUN_HERE = [p for p in EXAMPLES if p.stem not in DRIVEN_BY]


@pytest.mark.parametrize(
    "path",
    [pytest.param(p, marks=() if p.stem in FAST else pytest.mark.slow) for p in RUN_HERE],
    ids=[p.stem for p in RUN_HERE],
)
def test_example_runs(path: Path, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    small = {
        "RLCONF_EXAMPLE_ITERATIONS": "1",
        "RLCONF_EXAMPLE_STEPS": "1000",
        "RLCONF_RESULTS_DIR": str(tmp_path / "results"),
    }
    if path.stem not in FAST and path.stem not in OWN_RAY:
        request.getfixturevalue("example_ray")
        capsys = request.getfixturevalue("capsys")
        run_in_this_process(path, small, tmp_path, request.getfixturevalue("monkeypatch"))
        out = capsys.readouterr().out
        assert out.strip(), "an example says what it did"
        return
    env = {**os.environ, **small}
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


@pytest.fixture(scope="module")
def example_ray() -> Iterator[None]:
    """The Ray session of the examples run in this process: 4 logical CPUs, as many as a Ray
    that the quickstart (2 rollout and 2 evaluation workers) starts for itself would have."""
    with local_ray(num_cpus=4):
        yield


def run_in_this_process(
    path: Path, env: dict[str, str], cwd: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run the script as ``__main__`` with ``env`` set, in ``cwd``, without arguments."""
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(cwd)
    monkeypatch.setattr(sys, "argv", [str(path), *ARGS.get(path.stem, [])])
    runpy.run_path(str(path), run_name="__main__")
