"""Stop criteria, sweeps, the progress line, ``rlconf train`` and ``rlconf plot`` take a result
key in either layout: RLlib's new API stack's (``env_runners/episode_return_mean``, joined with
``/`` or as nested dicts, as RLlib's examples write stop dicts) or the 2.x one."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import rlconf.metrics as m
from rlconf.cli import main
from rlconf.plot_command import load_panels
from rlconf.progress_line import Iteration, plain_line
from rlconf.seed_groups import Curve
from rlconf.stop_criteria import StopCriteria, stop_issues
from rlconf.stop_progress import StopProgress
from rlconf.sweep_run import make_plan
from tests.test_new_stack_results import TINY_PPO, _ppo

RLLIB_STOP = {
    f"{m.ENV_RUNNER_RESULTS}/{m.EPISODE_RETURN_MEAN}": 150,
    m.NUM_ENV_STEPS_SAMPLED_LIFETIME: 100_000,
}
NESTED_STOP = {m.ENV_RUNNER_RESULTS: {m.EPISODE_RETURN_MEAN: 5, m.NUM_EPISODES_LIFETIME: 10**6}}


#: What a result holds of the keys above (values as a real one would have them).
RESULT = {
    "training_iteration": 2,
    "episode_reward_mean": 20.0,
    "hist_stats": {"episode_reward": [20.0]},
    m.NUM_ENV_STEPS_SAMPLED_LIFETIME: 128,
    m.ENV_RUNNER_RESULTS: {m.EPISODE_RETURN_MEAN: 20.0, m.NUM_EPISODES_LIFETIME: 7},
    m.LEARNER_RESULTS: {"default_policy": {"total_loss": 8.0}},
}


def test_stop_criteria_take_new_stack_keys_joined_or_nested(tmp_path: Path) -> None:
    config = _ppo(tmp_path).evaluation(evaluation_interval=1).validate()
    more = {
        "evaluation/env_runners/episode_return_mean": 1,
        "learners/default_policy/total_loss": 1,
        "env_runners/module_episode_returns_mean/default_policy": 1,
    }
    assert stop_issues({**RLLIB_STOP, **NESTED_STOP, **more}, "stop.", config) == []
    (issue,) = stop_issues({"env_runners": {"episode_return_mea": 1}}, "stop.", config)
    assert issue.field == "stop.env_runners/episode_return_mea"
    assert "did you mean 'env_runners/episode_return_mean'" in issue.render()

    assert not StopCriteria(RLLIB_STOP, config, "x").reached(RESULT)
    assert StopCriteria(NESTED_STOP, config, "x").reached(RESULT)
    assert StopCriteria({m.NUM_ENV_STEPS_SAMPLED_LIFETIME: 128}, config, "x").reached(RESULT)
    learner = {"learners": {"default_policy": {"total_loss": 1}}}
    assert StopCriteria(learner, config, "x").reached(RESULT)

    plan = make_plan(
        config,
        stop=NESTED_STOP,
        metric="env_runners/episode_return_mean",
        mode="max",
        num_samples=1,
        max_concurrent=None,
        scheduler=None,
        name=None,
        local_dir=str(tmp_path),
        checkpoint_freq=0,
        checkpoint_at_end=False,
        reuse_actors=None,
        progress=False,
        address=None,
    )
    assert plan.stop == {
        "env_runners/episode_return_mean": 5,
        "env_runners/num_episodes_lifetime": 10**6,
    }


def test_the_progress_line_follows_a_new_stack_criterion_and_shows_the_reward_once() -> None:
    progress = StopProgress({"env_runners": {"num_env_steps_sampled_lifetime": 1000}})
    result = {
        "training_iteration": 1,
        "timesteps_total": 250,
        "time_total_s": 10.0,
        "episode_reward_mean": 20.0,
        "env_runners": {"num_env_steps_sampled_lifetime": 250, "episode_return_mean": 20.0},
    }
    (criterion,) = progress.update(result)
    assert (criterion.fraction, criterion.seconds_left) == (0.25, 30.0)
    on_reward = StopProgress({"env_runners/episode_return_mean": 100})
    line = plain_line(Iteration(result, on_reward.update(result), 10.0))
    assert "env_runners/episode_return_mean 20/100" in line and "reward" not in line


def test_rlconf_train_stops_on_a_nested_new_stack_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = ["train", "--run", "PPO", "--env", "CartPole-v1", "--config", json.dumps(TINY_PPO)]
    run += ["--local-dir", str(tmp_path)]
    typo = json.dumps({"env_runners": {"num_env_steps_sampled_lifetme": 128}})
    assert main([*run, "--stop", typo]) == 2
    assert "did you mean 'env_runners/num_env_steps_sampled_lifetime'" in capsys.readouterr().err
    stop = json.dumps({"env_runners": {"num_env_steps_sampled_lifetime": 128}})
    assert main([*run, "--stop", stop]) == 0
    out = capsys.readouterr().out
    assert out.count("iter ") == 2
    assert "env_runners/num_env_steps_sampled_lifetime reached 128" in out
    (run_dir,) = tmp_path.iterdir()
    last = json.loads((run_dir / "result.json").read_text().splitlines()[-1])
    assert last["env_runners"]["num_env_steps_sampled_lifetime"] == 128


def _write_rows(folder: Path, rows: list[dict[str, Any]]) -> Path:
    folder.mkdir(parents=True)
    (folder / "result.json").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return folder


@pytest.fixture
def both_layouts(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    old = _write_rows(
        tmp_path / "old",
        [{"timesteps_total": 100 * i, "episode_reward_mean": float(i)} for i in (1, 2)],
    )
    new = _write_rows(
        tmp_path / "new",
        [
            {
                "num_env_steps_sampled_lifetime": 100 * i,
                "env_runners": {"episode_return_mean": float(10 * i)},
            }
            for i in (1, 2)
        ],
    )
    yield old, new


def test_plot_reads_a_metric_under_either_api_stacks_name(both_layouts: tuple[Path, Path]) -> None:
    old, new = both_layouts
    for metric in ("env_runners/episode_return_mean", "episode_reward_mean"):
        (panel,) = load_panels([old, new], [metric])
        assert panel.metric == metric
        curves = {
            line.label: (list(line.steps), list(line.values))
            for line in panel.lines
            if isinstance(line, Curve)
        }
        assert curves == {"old": ([100, 200], [1.0, 2.0]), "new": ([100, 200], [10.0, 20.0])}
    (default,) = load_panels([new])
    assert default.metric == "episode_reward_mean"
