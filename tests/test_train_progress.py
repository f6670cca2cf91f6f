"""What `rlconf train` and a sweep's trial table show: the stop criteria against their targets,
the pace, the time left, and the lines that end a run."""

from __future__ import annotations

import io
import json
from collections.abc import Mapping
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from rlconf.cli import main
from rlconf.progress_line import Iteration, plain_line
from rlconf.stop_progress import (
    StopProgress,
    format_duration,
    format_number,
    nearest,
    steps_per_s,
)
from rlconf.train_progress import RunEnd, TrainProgress, final_lines

DQN_LIKE_STOP = {"evaluation/episode_reward_mean": 450.0, "timesteps_total": 100_000.0}


def _result(iteration: int, steps: int, seconds: float, **extra: Any) -> dict[str, Any]:
    return {
        "training_iteration": iteration,
        "timesteps_total": steps,
        "time_total_s": seconds,
        "episode_reward_mean": 20.0 + iteration,
        **extra,
    }


def test_an_evaluation_criterion_keeps_its_latest_value_between_evaluations() -> None:
    progress = StopProgress(DQN_LIKE_STOP)
    (evaluation, steps) = progress.update({})
    assert evaluation.value is None and not evaluation.reached
    progress.update(_result(1, 2000, 4.0, evaluation={"episode_reward_mean": 120.0}))
    (evaluation, steps) = progress.update(_result(2, 4000, 8.0))  # no evaluation this time
    assert (evaluation.key, evaluation.value, evaluation.target) == (
        "evaluation/episode_reward_mean",
        120.0,
        450.0,
    )
    assert (steps.value, steps.reached) == (4000.0, False)
    (evaluation, _) = progress.update(
        _result(3, 6000, 12.0, evaluation={"episode_reward_mean": 467.7})
    )
    assert evaluation.reached


def _nearest(stop: Mapping[str, float], *results: dict[str, Any]) -> tuple[str, float, float]:
    progress = StopProgress(stop)
    for result in results:
        criteria = progress.update(result)
    first = nearest(criteria)
    assert first is not None and first.fraction is not None and first.seconds_left is not None
    return first.key, first.fraction, first.seconds_left


def test_the_time_left_comes_from_the_nearest_budget() -> None:
    result = _result(4, 8000, 20.0)
    assert steps_per_s(result) == 400.0
    # 92k steps at 400 steps/s
    assert _nearest({"timesteps_total": 100_000}, result) == ("timesteps_total", 0.08, 230.0)
    # 6 more iterations at 5 s each
    assert _nearest({"training_iteration": 10}, result) == ("training_iteration", 0.4, 30.0)
    assert _nearest({"time_total_s": 60}, result) == ("time_total_s", 20 / 60, 40.0)
    both = {"timesteps_total": 100_000, "time_total_s": 60}
    assert _nearest(both, result) == ("time_total_s", 20 / 60, 40.0)
    # One reward value gives no pace: it is 0% of its way, with no time left known.
    (reward,) = StopProgress({"episode_reward_mean": 450}).update(result)
    assert (reward.fraction, reward.seconds_left) == (0.0, None)
    assert [format_duration(s) for s in (4.4, 187, 3729)] == ["4 s", "3:07", "1:02:09"]
    assert [format_duration(s) for s in (4.4, 187, 3729)] == ["4 s", "3:07", "1:02:09"]


def test_the_progress_line_shows_the_goal_the_pace_and_the_time_left() -> None:
    stop = DQN_LIKE_STOP
    criteria = StopProgress(stop).update(
        _result(5, 10_240, 25.6, evaluation={"episode_reward_mean": 312.4})
    )
    line = plain_line(Iteration(_result(5, 10_240, 25.6), criteria, 27.0))
    assert line.startswith("iter    5  steps    10240/100000  400 steps/s  ")
    assert "evaluation/episode_reward_mean 312.40/450" in line
    assert "reward    25.00" in line  # the training reward, which is not a criterion here
    assert "time 27 s" in line and line.endswith("ETA 3:44 (timesteps_total 10%)")
    # A criterion on the training reward replaces the plain reward column; no pace yet, no ETA.
    plain = plain_line(
        Iteration(
            _result(2, 400, 1.0),
            StopProgress({"episode_reward_mean": 150}).update(_result(2, 400, 1.0)),
            1.2,
        )
    )
    assert "episode_reward_mean 22/150" in plain and "reward " not in plain
    assert "ETA" not in plain


def test_the_last_lines_say_what_stopped_the_run_where_things_are_and_how_to_look() -> None:
    criteria = StopProgress(DQN_LIKE_STOP).update(
        _result(5, 10_240, 25.6, evaluation={"episode_reward_mean": 467.7})
    )
    lines = final_lines(
        RunEnd(
            result=_result(5, 10_240, 25.6),
            criteria=criteria,
            elapsed_s=27.2,
            logdir="/r/DQN",
            checkpoint="/r/DQN/checkpoint_000005",
        )
    )
    assert lines[0] == (
        "done: evaluation/episode_reward_mean reached 467.70 (target 450) at iteration 5, "
        "10240 env steps, 27 s"
    )
    assert "  training reward: 25.00" in lines
    assert not any("not reached" in line for line in lines)  # an unused budget is no news
    assert "  results:    /r/DQN" in lines
    assert "  checkpoint: /r/DQN/checkpoint_000005" in lines
    assert lines[-2:] == [
        "  look at it: rlconf plot /r/DQN",
        "              rlconf evaluate /r/DQN/checkpoint_000005 --episodes 10 --no-explore",
    ]

    budget_end = final_lines(
        RunEnd(
            result=_result(50, 100_000, 250.0),
            criteria=StopProgress(DQN_LIKE_STOP).update(
                _result(50, 100_000, 250.0, evaluation={"episode_reward_mean": 312.0})
            ),
            elapsed_s=251.0,
            logdir="/r/DQN",
            best_checkpoint="/r/DQN/checkpoint_000031",
            best_score=480.0,
            score_attr="evaluation/episode_reward_mean",
        )
    )
    assert budget_end[0].startswith("done: timesteps_total reached 100000 (target 100000)")
    assert "  not reached: evaluation/episode_reward_mean 312/450" in budget_end
    assert (
        "  best:       /r/DQN/checkpoint_000031 (evaluation/episode_reward_mean 480)" in budget_end
    )
    assert budget_end[-1].endswith(
        "rlconf evaluate /r/DQN/checkpoint_000031 --episodes 10 --no-explore"
    )

    stopped = final_lines(
        RunEnd(_result(3, 600, 2.0), [], 3.0, "/r/PPO", "/r/PPO/checkpoint_000003", signal="SIGINT")
    )
    assert stopped[0] == "stopped by SIGINT at iteration 3, 600 env steps, 3 s"


def test_plain_lines_without_a_terminal_and_a_live_bar_with_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # the bar is cut to the terminal's width
    stop = {"timesteps_total": 1000.0, "episode_reward_mean": 400.0}
    plain_out = io.StringIO()
    plain = TrainProgress("PPO", stop, out=plain_out)  # a StringIO is no terminal
    assert not plain.live
    plain.result(_result(1, 200, 1.0))
    plain.write("checkpoint: here")
    first, second = plain_out.getvalue().splitlines()
    assert first.startswith(
        "iter    1  steps      200/1000  200 steps/s  episode_reward_mean 21/400  "
    )
    assert first.endswith("ETA 4 s (timesteps_total 20%)") and second == "checkpoint: here"

    live_out = io.StringIO()
    live = TrainProgress("PPO", stop, out=live_out, live=True)
    live.result(_result(1, 200, 1.0))
    live.write("checkpoint: here")
    live.result(_result(2, 400, 2.0))
    live.close()
    text = live_out.getvalue()
    frames = [frame for frame in text.replace("\n", "\r").split("\r") if "%|" in frame]
    # The reward rises 1 a second to 400: the step budget stops the run first.
    assert frames[-1].startswith(
        "PPO  40%|████      | timesteps_total 400/1000  ETA 3 s  200 steps/s  "
        "episode_reward_mean 22/400  iter 2  time "
    )
    assert "\rcheckpoint: here\n" in text  # written above the bar, on a line of its own

    quiet_out = io.StringIO()
    quiet = TrainProgress("PPO", stop, out=quiet_out, live=True, quiet=True)
    quiet.result(_result(1, 200, 1.0))
    quiet.write("not shown")
    quiet.write("shown", always=True)
    assert quiet_out.getvalue() == "shown\n"


class _Trial(SimpleNamespace):
    """What the table reads of a Tune trial."""

    def __init__(self, trial_id: str, status: str, config: dict[str, Any]) -> None:
        super().__init__(trial_id=trial_id, status=status, config=config, last_result=None)

    def __str__(self) -> str:
        return f"PPO_{self.trial_id}"


def test_a_trial_table_shows_the_criteria_with_their_targets_and_the_time_left() -> None:
    from runtime.sweeps.trial_table import TrialTable

    table = TrialTable("grid", ["lr"], "episode_reward_mean", stop=DQN_LIKE_STOP, enabled=False)
    running = _Trial("a", "RUNNING", {"lr": 0.001})
    done = _Trial("b", "TERMINATED", {"lr": 0.01})
    first = _result(1, 2000, 5.0, evaluation={"episode_reward_mean": 130.0})
    second = _result(2, 4000, 10.0)
    table.on_trial_result(0, [running], running, first)
    running.last_result = second
    table.on_trial_result(0, [running], running, second)
    done.last_result = _result(9, 18_000, 40.0, evaluation={"episode_reward_mean": 470.0})
    table.on_trial_result(0, [running, done], done, done.last_result)
    header, row_a, row_b = table.render().splitlines()[1:]
    assert header.split() == [
        "trial",
        "status",
        "lr",
        "iter",
        "steps",
        "steps/s",
        "evaluation/episode_reward_mean>=450",
        "reward",
        "ETA",
    ]
    # 96k steps left at 400 steps/s; the evaluation value is the latest one seen.
    assert row_a.split()[1:] == ["RUNNING", "0.001", "2", "4000", "400", "130.00", "22.00", "4:00"]
    assert row_b.split()[1:] == ["TERMINATED", "0.01", "9", "18000", "450", "470.00", "29.00", "-"]


def _train_evaluated_ppo(tmp_path: Path, config: dict[str, Any], *flags: str) -> int:
    """``rlconf train`` of a small PPO on CartPole that evaluates every iteration."""
    small = {
        "num_workers": 0,
        "train_batch_size": 200,
        "sgd_minibatch_size": 50,
        "num_sgd_iter": 1,
        "evaluation_interval": 1,
    }
    return main(
        [
            *("train", "--run", "PPO", "--env", "CartPole-v1"),
            *("--config", json.dumps({**small, **config})),
            *flags,
            *("--local-dir", str(tmp_path)),
        ]
    )


def test_the_command_line_run_ends_with_the_criterion_it_reached(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code = _train_evaluated_ppo(
        tmp_path,
        {"evaluation_duration": 1},
        "--stop",
        json.dumps({"evaluation/episode_reward_mean": 5, "timesteps_total": 2000}),
        "--checkpoint-at-end",
    )
    out = capsys.readouterr().out.splitlines()
    assert code == 0
    (run_dir,) = tmp_path.iterdir()
    assert out[1].startswith("iter    1  steps      200/2000  ")
    assert "evaluation/episode_reward_mean " in out[1] and out[1].split("  ")[-1].startswith("ETA ")
    assert out[2].startswith("done: evaluation/episode_reward_mean reached ")
    assert "(target 5) at iteration 1, 200 env steps" in out[2]
    assert f"  checkpoint: {run_dir / 'checkpoint_000001'}" in out
    assert out[-1].endswith(
        f"rlconf evaluate {run_dir / 'checkpoint_000001'} --episodes 10 --no-explore"
    )


def test_the_command_line_keeps_the_best_checkpoints_and_names_the_best_at_the_end(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code = _train_evaluated_ppo(
        tmp_path,
        {"evaluation_duration": 2, "seed": 3},
        "--stop",
        json.dumps({"training_iteration": 5}),
        "--checkpoint-freq",
        "1",
        "--keep-checkpoints-num",
        "1",
        "--checkpoint-score-attr",
        "evaluation/episode_reward_mean",
    )
    out = capsys.readouterr().out.splitlines()
    assert code == 0
    (run_dir,) = tmp_path.iterdir()
    scores = [
        json.loads(line)["evaluation"]["episode_reward_mean"]
        for line in (run_dir / "result.json").read_text().splitlines()
    ]
    best_iteration = max(range(5), key=lambda i: (scores[i], i)) + 1
    kept = sorted(p.name for p in run_dir.glob("checkpoint_*"))
    # The best by the score, and the latest (where a run goes on from).
    assert kept == sorted({f"checkpoint_{best_iteration:06d}", "checkpoint_000005"})
    best = run_dir / f"checkpoint_{best_iteration:06d}"
    best_line = next(line for line in out if line.startswith("  best:"))
    score = format_number(scores[best_iteration - 1])
    assert best_line == f"  best:       {best} (evaluation/episode_reward_mean {score})"
    assert out[-1].endswith(f"rlconf evaluate {best} --episodes 10 --no-explore")
