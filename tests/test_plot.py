"""``rlconf plot`` draws learning curves of results folders: a PNG with one subplot per metric,
seed groups as a mean with a min-max band, sparklines without matplotlib, one-line errors.

The results folders are written by hand (params.json and result.json lines as the runtime
writes them): nothing is trained.
"""

from __future__ import annotations

import builtins
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from matplotlib.collections import PolyCollection

from rlconf.cli import main
from rlconf.curve_figure import build_figure
from rlconf.plot_command import INSTALL_HINT, load_panels
from rlconf.seed_groups import Band, Curve
from rlconf.sparkline import BLOCKS, WIDTH, describe_curve, resample, sparkline
from tests import child_process

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
STEPS_PER_ITERATION = 100
SECONDS_PER_ITERATION = 2.5


def write_run(
    folder: Path,
    rewards: Sequence[float | None],
    *,
    seed: int | None = 0,
    lr: float = 0.001,
    evaluation_every: int = 0,
    extra: Mapping[str, Any] | None = None,
) -> Path:
    """A results folder of ``len(rewards)`` iterations, evaluating every ``evaluation_every``
    iterations (evaluation reward: 10 x the iteration)."""
    folder.mkdir(parents=True)
    params = {
        "$algorithm": "PPO",
        "env": "CartPole-v1",
        "lr": lr,
        "seed": seed,
        "logger_config": {"logdir": str(folder)},
    }
    (folder / "params.json").write_text(json.dumps(params), encoding="utf-8")
    lines = []
    for iteration, reward in enumerate(rewards, start=1):
        row: dict[str, Any] = {
            "training_iteration": iteration,
            "timesteps_total": iteration * STEPS_PER_ITERATION,
            "time_total_s": iteration * SECONDS_PER_ITERATION,
            "episode_reward_mean": reward,
            "hist_stats": {"episode_reward": [1.0, 2.0]},
            "info": {"learner": {"default_policy": {"learner_stats": {"entropy": 0.5}}}},
            **(extra or {}),
        }
        if evaluation_every and iteration % evaluation_every == 0:
            row["evaluation"] = {"episode_reward_mean": 10.0 * iteration}
        lines.append(json.dumps(row) + "\n")
    (folder / "result.json").write_text("".join(lines), encoding="utf-8")
    return folder


def plot(args: Sequence[str | Path], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["plot", *(str(a) for a in args)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def without_matplotlib(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every ``import matplotlib...`` fails from now on, as where it is not installed."""
    real_import = builtins.__import__

    def refusing_import(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "matplotlib" or name.startswith("matplotlib."):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", refusing_import)
    # A module imported already would not import matplotlib again.
    monkeypatch.delitem(sys.modules, "rlconf.curve_figure", raising=False)


# --- the PNG and the figure ---------------------------------------------------------------


def test_writes_a_png_in_the_first_run_dir_by_default(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = write_run(tmp_path / "a", [1.0, 2.0, 3.0], evaluation_every=2)
    write_run(tmp_path / "b", [3.0, 2.0, 1.0], lr=0.01)
    code, out, err = plot([first, tmp_path / "b"], capsys)
    assert (code, err) == (0, "")
    png = first / "curves.png"
    assert out == f"wrote {png}\n"
    assert png.read_bytes().startswith(PNG_MAGIC)

    target = tmp_path / "figures" / "mine.png"
    target.parent.mkdir()
    assert plot([first, "--out", target], capsys)[:2] == (0, f"wrote {target}\n")
    assert target.read_bytes().startswith(PNG_MAGIC)


def test_the_figure_has_a_subplot_per_metric_and_a_line_per_run(tmp_path: Path) -> None:
    write_run(tmp_path / "a", [1.0, 2.0, 3.0, 4.0], evaluation_every=2)
    write_run(tmp_path / "b", [4.0, 3.0, 2.0], lr=0.01)  # another config: a line of its own
    figure = build_figure(load_panels([tmp_path / "a", tmp_path / "b"]))
    reward, evaluation = figure.axes
    assert reward.get_title() == "episode_reward_mean"
    assert evaluation.get_title() == "evaluation/episode_reward_mean"
    assert [line.get_label() for line in reward.get_lines()] == ["a", "b"]
    assert np.asarray(reward.get_lines()[0].get_xdata()).tolist() == [100, 200, 300, 400]
    # Only "a" evaluated: at iterations 2 and 4.
    (line,) = evaluation.get_lines()
    assert line.get_label() == "a"
    assert np.asarray(line.get_ydata()).tolist() == [20.0, 40.0]
    assert not [c for c in reward.collections if isinstance(c, PolyCollection)]
    assert evaluation.get_xlabel() == "env steps (timesteps_total)"


def test_runs_differing_only_in_seed_are_a_mean_with_a_min_max_band(tmp_path: Path) -> None:
    seeds = {
        1: [1.0, 5.0, 3.0, 8.0, 9.0],
        2: [2.0, 4.0, 6.0, 7.0],  # one iteration fewer: the band ends at step 400
        3: [0.0, 6.0, 2.0, 9.0, 1.0],
    }
    for seed, rewards in seeds.items():
        write_run(tmp_path / f"ppo_s{seed}", rewards, seed=seed)
    write_run(tmp_path / "other_lr", [5.0, 5.0], seed=1, lr=0.1)

    (panel,) = load_panels([tmp_path])  # the folder holding them, as a sweep's: name order
    other, band = panel.lines
    assert isinstance(band, Band) and isinstance(other, Curve)
    assert band.label == "ppo_s1 +2 (seeds 1, 2, 3)"
    assert other.label == "other_lr"
    assert band.steps == [100, 200, 300, 400]
    columns = list(zip(*(rewards[:4] for rewards in seeds.values()), strict=True))
    assert band.low == [min(c) for c in columns]
    assert band.high == [max(c) for c in columns]
    assert band.mean == pytest.approx([sum(c) / 3 for c in columns])

    figure = build_figure([panel])
    (ax,) = figure.axes
    assert [line.get_label() for line in ax.get_lines()] == ["other_lr", band.label]
    (fill,) = [c for c in ax.collections if isinstance(c, PolyCollection)]
    vertices = np.concatenate([path.vertices for path in fill.get_paths()])
    xs, ys = vertices[:, 0], vertices[:, 1]
    assert (ys.min(), ys.max()) == (min(band.low), max(band.high)) == (0.0, 9.0)
    assert (xs.min(), xs.max()) == (100, 400)


def test_seed_runs_at_different_steps_are_interpolated_over_their_common_range(
    tmp_path: Path,
) -> None:
    write_run(tmp_path / "s1", [0.0, 10.0, 20.0], seed=1)  # steps 100, 200, 300
    late = write_run(tmp_path / "s2", [], seed=2)
    rows = [{"timesteps_total": step, "episode_reward_mean": 0.0} for step in (150, 250, 350)]
    (late / "result.json").write_text("".join(json.dumps(r) + "\n" for r in rows))

    (panel,) = load_panels([tmp_path])
    (band,) = panel.lines
    assert isinstance(band, Band)
    assert band.steps == [150, 200, 250, 300]
    assert band.high == [5.0, 10.0, 15.0, 20.0]  # s1 interpolated onto s2's steps
    assert band.low == [0.0, 0.0, 0.0, 0.0]


# --- which runs, which metrics ------------------------------------------------------------


def test_a_sweep_folder_stands_for_its_trials(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sweep = tmp_path / "PPO_sweep"
    for index, lr in enumerate((0.01, 0.001)):
        write_run(sweep / f"PPO_CartPole-v1_ab12c_0000{index}_{index}_lr={lr}", [1.0, 2.0], lr=lr)
    (sweep / "experiment_state-2024.json").write_text("{}")
    (sweep / "checkpoints_elsewhere").mkdir()  # a folder that is no trial

    (panel,) = load_panels([sweep])
    assert [line.label for line in panel.lines] == [
        "PPO_CartPole-v1_ab12c_00000_0_lr=0.01",
        "PPO_CartPole-v1_ab12c_00001_1_lr=0.001",
    ]
    code, _, _ = plot([sweep], capsys)
    assert code == 0 and (sweep / "curves.png").read_bytes().startswith(PNG_MAGIC)


def test_metric_replaces_the_defaults(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = write_run(tmp_path / "a", [1.0, 2.0], evaluation_every=1, extra={"custom": {"x": 3}})
    entropy = "info/learner/default_policy/learner_stats/entropy"
    panels = load_panels([run], [entropy, "custom/x", entropy])
    assert [p.metric for p in panels] == [entropy, "custom/x"]
    out = tmp_path / "picked.png"
    assert plot([run, "--metric", "custom/x", "--out", out], capsys)[0] == 0
    assert out.read_bytes().startswith(PNG_MAGIC)

    # Without evaluation in any run, the default is the training reward alone.
    (panel,) = load_panels([write_run(tmp_path / "b", [1.0])])
    assert panel.metric == "episode_reward_mean"


# --- sparklines -----------------------------------------------------------------------------


def test_sparkline_blocks_and_resampling() -> None:
    assert sparkline([0, 1, 2, 3, 4, 5, 6, 7]) == BLOCKS
    assert sparkline([3.0, 3.0]) == "▄▄"
    assert sparkline([]) == ""
    assert resample(list(range(WIDTH * 10))) == [i * 10 + 4.5 for i in range(WIDTH)]
    assert len(sparkline([float(i % 7) for i in range(1000)])) == WIDTH
    assert describe_curve([100, 200], [1.0, 2.5]) == (
        "▁█  first 1  last 2.5  min 1  max 2.5  steps 100..200 (2 points)"
    )
    assert describe_curve([], []) == "(no values yet)"


def test_terminal_prints_a_sparkline_per_run_and_metric(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_run(tmp_path / "a", [float(i) for i in range(200)], evaluation_every=50)
    write_run(tmp_path / "b", [None, 4.0, 2.0], lr=0.01)
    code, out, err = plot([tmp_path / "a", tmp_path / "b", "--terminal"], capsys)
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        "episode_reward_mean",
        f"  a  {sparkline([float(i) for i in range(200)])}"
        "  first 0  last 199  min 0  max 199  steps 100..20000 (200 points)",
        "  b  █▁  first 4  last 2  min 2  max 4  steps 200..300 (2 points)",
        "evaluation/episode_reward_mean",
        "  a  ▁▃▆█  first 500  last 2000  min 500  max 2000  steps 5000..20000 (4 points)",
        "  b  (no values yet)",
    ]
    assert INSTALL_HINT not in out  # matplotlib is there: --terminal was a choice
    assert not (tmp_path / "a" / "curves.png").exists()


def test_without_matplotlib_sparklines_and_the_install_hint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    run = write_run(tmp_path / "a", [1.0, 2.0, 3.0])
    without_matplotlib(monkeypatch)
    code, out, err = plot([run], capsys)
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert "pip install 'rlconf[plot]' gives PNG plots" in lines[0]
    assert lines[1:] == [
        "episode_reward_mean",
        "  a  ▁▅█  first 1  last 3  min 1  max 3  steps 100..300 (3 points)",
    ]
    assert not (run / "curves.png").exists()


def test_long_run_names_get_a_line_of_their_own(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    name = "PPO_CartPole-v1_ab12c_00000_0_lr=0.01_2024-05-01_12-00-00"
    write_run(tmp_path / name, [1.0, 2.0])
    assert plot([tmp_path / name, "--terminal"], capsys)[1].splitlines()[1:] == [
        f"  {name}",
        "    ▁█  first 1  last 2  min 1  max 2  steps 100..200 (2 points)",
    ]


# --- what a run still training or a broken folder holds ----------------------------------


def test_null_values_a_partial_last_line_and_an_empty_run_are_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = write_run(tmp_path / "a", [None, 2.0, None, 4.0])
    result = run / "result.json"
    # Tune's JSON logger writes NaN as it is; a step of null is no point either; the last line
    # is cut short, as in a run still writing it.
    result.write_text(
        '{"timesteps_total": 50, "episode_reward_mean": NaN}\n'
        '{"timesteps_total": null, "episode_reward_mean": 9}\n'
        + result.read_text()
        + '{"training_iteration": 5, "timesteps_total": 500, "episode_rew'
    )
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "result.json").write_text("")

    (panel,) = load_panels([run, empty])
    (curve,) = panel.lines
    assert isinstance(curve, Curve)
    assert (curve.steps, curve.values) == ([200, 400], [2.0, 4.0])
    code, out, err = plot([run, empty], capsys)
    assert code == 0 and err == ""
    code, out, err = plot([run, empty, "--terminal"], capsys)
    assert code == 0 and "  empty  (no values yet)" in out.splitlines()


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda root: root / "missing", "missing does not exist"),
        (lambda root: root, "has no result.json, nor sub-folders holding one"),
        (
            lambda root: (root / "file.txt", (root / "file.txt").write_text("x"))[0],
            "is not a folder",
        ),
    ],
    ids=["missing", "no-results", "a-file"],
)
def test_folders_that_are_no_results_folders_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], make: Any, message: str
) -> None:
    (tmp_path / "not_a_trial").mkdir()
    code, out, err = plot([make(tmp_path)], capsys)
    assert (code, out) == (2, "")
    assert err.startswith("error: rlconf plot: ") and message in err
    assert err.count("\n") == 1  # one line, no traceback


def test_a_metric_no_run_has_is_refused_with_a_did_you_mean(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = write_run(tmp_path / "a", [1.0], evaluation_every=1)
    code, out, err = plot([run, "--metric", "evaluation/episode_reward_maen"], capsys)
    assert (code, out) == (2, "")
    assert err == (
        "error: rlconf plot: no run has the metric 'evaluation/episode_reward_maen' (did you "
        "mean 'evaluation/episode_reward_mean' or 'episode_reward_mean'?); the runs have under "
        "evaluation/: evaluation/episode_reward_mean\n"
    )
    code, _, err = plot([run, "--metric", "reward", "--terminal"], capsys)
    assert code == 2 and err.count("\n") == 1
    assert "the runs have at the top level: episode_reward_mean, evaluation/..., info/..." in err


def test_runs_without_results_yet_and_unwritable_out_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "result.json").write_text('{"training_iteration": 1, "timest')
    code, _, err = plot([empty], capsys)
    assert code == 2 and "no results yet" in err and err.count("\n") == 1

    run = write_run(tmp_path / "a", [1.0])
    code, _, err = plot([run, "--out", tmp_path / "no" / "such" / "dir.png"], capsys)
    assert code == 2 and "can't write" in err and err.count("\n") == 1
    code, _, err = plot([run, "--out", tmp_path / "curves.nope"], capsys)
    assert code == 2 and "is not supported" in err and err.count("\n") == 1


def test_plotting_imports_neither_torch_nor_ray_nor_matplotlib_up_front() -> None:
    code = (
        "import sys, rlconf.cli, rlconf.plot_command; "
        "print(sorted(m for m in ('torch', 'ray', 'matplotlib') if m in sys.modules))"
    )
    out = child_process.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"


def test_runs_of_the_same_name_are_told_apart_by_their_parent(tmp_path: Path) -> None:
    for sweep, lr in (("sweep_a", 0.1), ("sweep_b", 0.2)):
        write_run(tmp_path / sweep / "PPO_00000", [1.0], lr=lr)
    (panel,) = load_panels([tmp_path / "sweep_a", tmp_path / "sweep_b"])
    assert [line.label for line in panel.lines] == ["sweep_a/PPO_00000", "sweep_b/PPO_00000"]


def test_trials_without_a_seed_are_one_group_when_their_configs_match(tmp_path: Path) -> None:
    # Tune's num_samples without a seed: the trials differ by chance alone.
    for index in range(3):
        write_run(tmp_path / f"PPO_{index:05d}", [float(index), 1.0], seed=None)
    (panel,) = load_panels([tmp_path])
    (band,) = panel.lines
    assert isinstance(band, Band) and band.label == "PPO_00000 +2 (3 runs, seed unset)"
    assert (band.low, band.high) == ([0.0, 1.0], [2.0, 1.0])


def test_x_time_draws_over_the_runs_wall_time_into_an_svg(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for seed in (0, 1):
        write_run(tmp_path / f"seed{seed}", [float(seed), 2.0, 3.0], seed=seed)
    (band,) = load_panels([tmp_path], x="time")[0].lines
    assert isinstance(band, Band) and band.steps == [2.5, 5.0, 7.5]
    assert band.mean == [0.5, 2.0, 3.0]
    (by_steps,) = load_panels([tmp_path])[0].lines
    assert by_steps.steps == [100.0, 200.0, 300.0]

    out = tmp_path / "seeds.svg"
    code, stdout, _ = plot([tmp_path, "--x", "time", "--out", out], capsys)
    assert code == 0 and f"wrote {out}" in stdout
    svg = out.read_text()
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg
    figure = build_figure(load_panels([tmp_path], x="time"))
    assert figure.axes[-1].get_xlabel() == "wall time, s (time_total_s)"
    with pytest.raises(SystemExit):
        plot([tmp_path, "--x", "walltime"], capsys)
    assert "invalid choice: 'walltime'" in capsys.readouterr().err
