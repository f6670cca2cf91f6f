"""``rlconf.sweep.run`` and ``rlconf train -f`` with search spaces: Tune experiments with a trial
table, the usual results folder per trial, the best trial, failed trials, and stop keys that
no result has. One Ray session for the module (the sweeps run in it and leave it running)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from ray import tune

from rlconf import PPOConfig, sweep
from rlconf.cli import main
from rlconf.errors import ConfigError
from rlconf.sweep import SweepError, SweepSummary
from tests.ray_session import ROOT, local_ray
from tests.sweep_helpers import FAILING_LR, FailAtSecondIteration, ReportsLr

#: The slow tier (`python -m pytest -m slow`): Ray sessions with remote actors, clusters and Tune.
pytestmark = pytest.mark.slow

GRID_FILE = Path(ROOT) / "examples" / "tuned" / "cartpole-ppo-grid.yaml"
TRIAL_FILES = {"params.json", "result.json", "progress.csv"}


@pytest.fixture(scope="module", autouse=True)
def ray_session() -> Iterator[None]:
    with local_ray():
        yield


def _small() -> PPOConfig:
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .rollouts(num_workers=0, num_envs_per_worker=4, rollout_fragment_length=32)
        .training(train_batch_size=128, sgd_minibatch_size=64, num_sgd_iter=1)
        .training(model={"fcnet_hiddens": [16]})
        .debugging(seed=0)
    )


def _trial_files(path: str) -> set[str]:
    return {p.name for p in Path(path).iterdir()}


def test_a_grid_runs_as_trials_with_results_folders_and_a_best_trial(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Each trial also logs an MLflow run (Tune's MLflowLoggerCallback), on a local SQLite store.
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    config = (
        _small()
        .training(lr=sweep.grid_search([1e-3, 1e-4]))
        .callbacks(ReportsLr)
        .debugging(logger_config={"type": "mlflow", "tracking_uri": uri})
    )
    summary = sweep.run(
        config,
        stop={"training_iteration": 2},
        metric="lr_reported",
        mode="min",
        local_dir=tmp_path,
        name="lr-grid",
        checkpoint_at_end=True,
    )
    assert isinstance(summary, SweepSummary)
    assert sorted(t.config.lr for t in summary.trials) == [1e-4, 1e-3]
    assert all(type(t.config) is PPOConfig for t in summary.trials)
    assert all(t.status == "TERMINATED" and t.iterations == 2 for t in summary.trials)
    assert summary.best_config.lr == 1e-4 and summary.best_metric == 1e-4
    assert summary.best_result["lr_reported"] == 1e-4
    assert summary.path == str(tmp_path / "lr-grid")
    for trial in summary.trials:
        assert Path(trial.path).parent == tmp_path / "lr-grid"
        files = _trial_files(trial.path)
        assert files >= TRIAL_FILES and any(f.startswith("events.out.tfevents") for f in files)
        assert json.loads((Path(trial.path) / "params.json").read_text())["lr"] == trial.config.lr
        assert trial.checkpoint is not None
        assert (Path(trial.checkpoint) / "algorithm_state.json").exists()
    table = capsys.readouterr().out
    assert "lr-grid: 2 trials" in table and "TERMINATED" in table
    assert table.splitlines()[-3].split()[:3] == ["trial", "status", "lr"]
    _assert_each_trial_logged_to_mlflow(uri, "lr-grid", [1e-4, 1e-3])


def _assert_each_trial_logged_to_mlflow(uri: str, experiment: str, lrs: list[float]) -> None:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(uri)
    found = client.get_experiment_by_name(experiment)  # the sweep's name by default
    assert found is not None
    runs = client.search_runs([found.experiment_id])
    assert sorted(float(r.data.params["lr"]) for r in runs) == lrs
    for run in runs:
        assert len(client.get_metric_history(run.info.run_id, "episode_reward_mean")) == 2
        assert "info/learner/default_policy/learner_stats/total_loss" in run.data.metrics


def test_configs_from_grid_and_random_run_one_trial_each(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.wandb_records import history, offline_runs

    # One of each kind (sweep.grid's and sweep.random's expansions are the fast tier's); each
    # trial logs its own offline W&B run too.
    monkeypatch.setenv("WANDB_SILENT", "true")
    tracked = _small().debugging(logger_config={"type": "wandb", "mode": "offline"})
    configs = sweep.grid(tracked, lr=[1e-3]) + sweep.random(
        tracked, 1, seed=0, lr=sweep.loguniform(1e-5, 1e-4)
    )
    summary = sweep.run(
        configs,
        stop={"training_iteration": 1},
        local_dir=tmp_path,
        name="two",
        progress=False,
        max_concurrent=1,
    )
    assert sorted(t.config.lr for t in summary.trials) == sorted(c.lr for c in configs)
    assert all(t.metrics["training_iteration"] == 1 for t in summary.trials)
    runs = offline_runs(tmp_path / "two")
    assert len(runs) == 2  # one per trial, in the trial's folder
    for run_file in runs:
        (row,) = history(run_file)
        assert row["training_iteration"] == 1 and "episode_reward_mean" in row
    # A run name would give every trial's run the same one.
    named = tracked.debugging(logger_config={"type": "wandb", "name": "same", "mode": "offline"})
    with pytest.raises(ConfigError, match=r"logger_config\.name.*every trial's run"):
        sweep.run([named], stop={"training_iteration": 1}, local_dir=tmp_path, progress=False)


def test_num_samples_draws_each_domain_again_per_trial(tmp_path: Path) -> None:
    config = _small().training(lr=sweep.uniform(1e-4, 1e-3))  # type: ignore[arg-type]
    summary = sweep.run(
        config, num_samples=2, stop={"training_iteration": 1}, local_dir=tmp_path, progress=False
    )
    lrs = [t.config.lr for t in summary.trials]
    assert len(set(lrs)) == 2 and all(1e-4 <= lr <= 1e-3 for lr in lrs)


def test_a_failed_trial_is_reported_and_the_others_still_give_the_best(tmp_path: Path) -> None:
    lrs = tune.grid_search([FAILING_LR, 1e-3])
    config = _small().training(lr=lrs).callbacks(FailAtSecondIteration)  # type: ignore[arg-type]
    summary = sweep.run(config, stop={"training_iteration": 3}, local_dir=tmp_path, progress=False)
    (failed,) = summary.errors
    assert failed.config.lr == FAILING_LR and "fails on purpose" in (failed.error or "")
    assert summary.best_config.lr == 1e-3 and summary.best_trial.iterations == 3
    only_failing = config.copy().training(lr=FAILING_LR)
    with pytest.raises(SweepError, match="fails on purpose"):
        sweep.run(
            [only_failing], stop={"training_iteration": 3}, local_dir=tmp_path, progress=False
        )


def test_a_stop_key_that_no_result_has_stops_the_sweep_with_the_error(tmp_path: Path) -> None:
    config = _small().training(lr=sweep.grid_search([1e-3])).callbacks(ReportsLr)
    with pytest.raises(ConfigError, match=r"stop\.lr_reportd.*not in the result"):
        sweep.run(config, stop={"lr_reportd": 1.0}, local_dir=tmp_path, progress=False)


def test_the_cli_runs_the_grid_file_as_a_sweep_and_prints_the_best_trial(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        [
            "train",
            "-f",
            str(GRID_FILE),
            "--local-dir",
            str(tmp_path),
            "--stop",
            '{"training_iteration": 2}',
            "--metric",
            "timesteps_total",
            "--mode",
            "min",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    folder = tmp_path / "cartpole-ppo-grid"
    trials = [p for p in folder.iterdir() if p.is_dir() and p.name.startswith("PPO_")]
    assert len(trials) == 4
    for trial in trials:
        files = _trial_files(str(trial))
        assert files >= TRIAL_FILES and any(f.startswith("checkpoint_") for f in files)
    assert "cartpole-ppo-grid: 4 trials (4 TERMINATED)" in out
    header = next(line for line in out.splitlines() if line.startswith("trial "))
    # The searched keys in the config's order, then the progress columns: the stop criteria
    # of the file and the flag (the step and iteration budgets are in iter and steps).
    assert header.split() == [
        *("trial", "status", "gamma", "lr", "iter", "steps", "steps/s"),
        *("episode_reward_mean>=150", "ETA"),
    ]
    assert "best trial: PPO_CartPole-v1_" in out and "timesteps_total=512 (min over 4" in out
    assert "  lr = " in out and "  gamma = " in out


def test_the_cli_refuses_sweep_flags_for_a_single_run(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["train", "--run", "PPO", "--env", "CartPole-v1", "--metric", "episode_len_mean"])
    assert code == 2
    assert "--metric" in capsys.readouterr().err
