"""What ``rlconf train`` and ``rlconf evaluate`` show in the first minutes: the live bar's line
fitted to the terminal and following the stop criterion projected to stop the run first, the
evaluation reward of offline algorithms where they have no training reward, and rounded
returns."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path
from typing import Any

import pytest

from rlconf.cli import main
from rlconf.evaluate_command import report_lines
from rlconf.progress_line import Iteration, live_line, plain_line
from rlconf.stop_progress import StopProgress
from rlconf.train_progress import RunEnd, TrainProgress, final_lines
from tests.test_marwil import write_expert_episodes

STOP = {"episode_reward_mean": 450.0, "timesteps_total": 2_000_000.0}


def _result(
    iteration: int, steps: int, seconds: float, reward: float, **extra: Any
) -> dict[str, Any]:
    return {
        "training_iteration": iteration,
        "timesteps_total": steps,
        "time_total_s": seconds,
        "episode_reward_mean": reward,
        **extra,
    }


def _late_in_a_run(stop: dict[str, float], **extra: Any) -> Iteration:
    """Iteration 100 of a run at 12,345 steps/s, the reward from 20 to 312.4 in 99 s."""
    progress = StopProgress(stop)
    progress.update(_result(1, 12_345, 1.0, 20.0))
    last = _result(100, 1_234_500, 100.0, 312.4, **extra)
    return Iteration(last, progress.update(last), 101.0, name="cartpole-ppo")


def test_the_live_line_fits_80_columns_with_every_part_whole() -> None:
    it = _late_in_a_run(STOP)
    line = live_line(it, 80)
    # The reward (rising 2.95/s, 46.6 s left) stops the run before the steps budget (62 s).
    assert line == " 68%|██████▊   | reward 312.40/450  ETA 47 s  1.23M/2M steps  12.3k/s  iter 100"
    assert len(line) <= 80

    wide = live_line(it, 120)
    assert len(wide) <= 120
    # Wider: the whole names, the run's name and the time so far come back.
    assert wide == (
        "cartpole-ppo  68%|██████▊   | episode_reward_mean 312.40/450  ETA 47 s  "
        "1.23M/2M steps  12.3k/s  iter 100  time 1:41"
    )
    # Narrower: the bar and then the least important parts go, whole, before the pace does.
    narrow = live_line(it, 60)
    assert narrow == " 68% reward 312.40/450  ETA 47 s  1.23M/2M steps  12.3k/s"
    assert live_line(it, 40) == " 68% reward 312.40/450  ETA 47 s"
    # Without block characters (a terminal that can't encode them) the bar is of '#'.
    assert live_line(it, 80, unicode=False).startswith(" 68%|######    | reward ")


def test_an_evaluation_criterion_and_a_budget_at_80_columns() -> None:
    stop = {"evaluation/episode_reward_mean": 450.0, "timesteps_total": 2_000_000.0}
    it = _late_in_a_run(stop, evaluation={"episode_reward_mean": 100.0})
    # One evaluation value gives no pace: the budget is what will stop the run.
    line = live_line(it, 80)
    assert line == " 61%|██████▏   | steps 1.23M/2M  ETA 1:02  12.3k/s  eval/reward 100/450"
    assert plain_line(it).endswith(
        "evaluation/episode_reward_mean 100/450  reward   312.40  time 1:41  "
        "ETA 1:02 (timesteps_total 61%)"
    )


def test_the_bar_follows_the_nearest_criterion_and_ends_at_100_percent_of_the_reward(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    stop = {"episode_reward_mean": 450.0, "timesteps_total": 200_000.0}
    # 1000 steps/s; the reward rises 2/s at first (the budget is nearer), then 20/s.
    results = [
        _result(1, 1_000, 1.0, 20.0),
        _result(10, 10_000, 10.0, 38.0),
        _result(20, 20_000, 20.0, 240.0),
        _result(24, 24_000, 24.0, 455.0),
    ]
    live_out, plain_out = io.StringIO(), io.StringIO()
    live = TrainProgress("PPO", stop, out=live_out, live=True)
    plain = TrainProgress("PPO", stop, out=plain_out, live=False)
    for result in results:
        live.result(result)
        plain.result(result)
    live.close()
    frames = [f for f in live_out.getvalue().replace("\n", "\r").split("\r") if "%|" in f]
    assert all(len(frame) <= 80 for frame in frames)
    # The reward's 2 a second since the first leave 206 s against 190 s of steps: the budget.
    assert frames[1] == "  5%|▌         | steps 10k/200k  ETA 3:10  1000/s  reward 38/450  iter 10"
    # 220 in 19 s: 18 s more against 180 s of steps, and 51% of the way from 20 to 450.
    assert (
        frames[2]
        == " 51%|█████     | episode_reward_mean 240/450  ETA 18 s  20k/200k steps  1000/s"
    )
    assert frames[-1] == (
        "100%|██████████| episode_reward_mean 455/450  ETA 0 s  24k/200k steps  1000/s"
    )
    lines = plain_out.getvalue().splitlines()
    assert lines[1].endswith("ETA 3:10 (timesteps_total 5%)")
    assert lines[2].endswith("ETA 18 s (episode_reward_mean 51%)")
    assert lines[-1].endswith("ETA 0 s (episode_reward_mean 100%)")


BC_RESULT = _result(3, 3000, 3.0, math.nan, evaluation={"episode_reward_mean": 312.5})


def test_an_offline_run_shows_its_evaluation_reward_and_never_nan() -> None:
    stop = {"training_iteration": 10.0}
    progress = StopProgress(stop)
    it = Iteration(BC_RESULT, progress.update(BC_RESULT), 3.2, evaluation_reward=312.5)
    line = plain_line(it)
    assert "eval reward   312.50" in line and "nan" not in line
    live = live_line(it, 80)
    assert "eval reward 312.50" in live and "nan" not in live
    end = final_lines(RunEnd(BC_RESULT, it.criteria, 3.2, "/r/BC"))
    assert "  evaluation reward: 312.50" in end and not any("nan" in x for x in end)
    # Between evaluations the latest one stays; before the first, a dash.
    out = io.StringIO()
    shown = TrainProgress("BC", stop, out=out, live=False)
    shown.result(_result(1, 1000, 1.0, math.nan))
    shown.result(BC_RESULT)
    shown.result(_result(4, 4000, 4.0, math.nan))
    first, _, fourth = out.getvalue().splitlines()
    assert "reward -" in first and "eval reward   312.50" in fourth
    assert "nan" not in out.getvalue()


def test_a_short_bc_run_shows_the_evaluation_reward(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_expert_episodes(tmp_path / "expert", 2)
    config = {
        "input": str(tmp_path / "expert"),
        "evaluation_interval": 1,
        "evaluation_num_workers": 0,
        "evaluation_duration": 1,
        "evaluation_config": {"input": "sampler", "explore": False},
        "min_time_s_per_reporting": 0,
    }
    code = main(
        [
            *("train", "--run", "BC", "--env", "CartPole-v1", "--config", json.dumps(config)),
            *("--stop", '{"training_iteration": 1}', "--local-dir", str(tmp_path / "runs")),
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "eval reward " in out and "  evaluation reward: " in out
    assert "nan" not in out


def test_evaluate_prints_returns_to_2_decimals(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert report_lines(
        {
            "episode_returns": [-146.7649774565797, -120.0],
            "episode_lengths": [200, 200],
            "episode_reward_mean": -133.38248872828985,
            "timesteps": 400,
        }
    ) == [
        "episode    1  return    -146.76  length    200",
        "episode    2  return    -120.00  length    200",
        "2 episodes, 400 steps: mean return -133.38",
    ]
    small = {"num_workers": 0, "train_batch_size": 200, "sgd_minibatch_size": 50, "num_sgd_iter": 1}
    code = main(
        [
            *("train", "--run", "PPO", "--env", "Pendulum-v1", "--config", json.dumps(small)),
            *("--stop", '{"training_iteration": 1}', "--checkpoint-at-end"),
            *("--local-dir", str(tmp_path)),
        ]
    )
    assert code == 0
    (run_dir,) = tmp_path.iterdir()
    capsys.readouterr()
    assert main(["evaluate", str(run_dir / "checkpoint_000001"), "--episodes", "1"]) == 0
    *_, summary = capsys.readouterr().out.splitlines()
    # Pendulum's returns are never whole: 2 decimals, as `rlconf train` prints rewards.
    assert summary.startswith("1 episodes, 200 steps: mean return -")
    assert len(summary.rsplit(".", 1)[1]) == 2
