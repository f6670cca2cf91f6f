"""Experiment trackers beside the results folder: ``debugging(logger_config={"type": "wandb" |
"mlflow", ...})`` (W&B offline, MLflow on a local SQLite store), every ``progress.csv`` column
logged under its own name for every iteration, and the keys that would do nothing refused
where they are set."""

from __future__ import annotations

import csv
import sys
from pathlib import Path
from typing import Any

import pytest

from rlconf import PPOConfig
from rlconf.errors import ConfigError
from tests.wandb_records import history, offline_runs


def _small() -> PPOConfig:
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .rollouts(num_workers=0, num_envs_per_worker=2, rollout_fragment_length=50)
        .training(train_batch_size=100, sgd_minibatch_size=50, num_sgd_iter=1)
        .debugging(seed=0)
    )


def _train(config: PPOConfig, iterations: int = 2) -> None:
    algo = config.build()
    try:
        for _ in range(iterations):
            algo.train()
    finally:
        algo.stop()


def _progress(logdir: Path) -> list[dict[str, str]]:
    with open(logdir / "progress.csv", newline="", encoding="utf-8") as rows:
        return list(csv.DictReader(rows))


def _numeric(row: dict[str, str]) -> dict[str, float]:
    out = {}
    for key, cell in row.items():
        try:
            out[key] = float(cell)
        except ValueError:
            continue
    return out


@pytest.mark.parametrize(
    ("logger_config", "message"),
    [
        ({"type": "comet"}, r"type 'comet' is not a logger rlconf has; known types: 'wandb'"),
        ({"type": "wandb", "projekt": "p"}, r"unknown key\(s\) 'projekt' with type 'wandb'"),
        ({"project": "p"}, r"unknown key\(s\) 'project' without a tracker type"),
        ({"type": "wandb", "mode": "shared"}, r"mode 'shared' is not a W&B mode"),
        ({"type": "mlflow", "tags": ["a"]}, r"tags must be a dict .* for MLflow"),
        ({"type": "mlflow", "tracking_url": "x"}, r"'tracking_url' with type 'mlflow'"),
    ],
)
def test_a_logger_config_key_that_would_do_nothing_is_refused_where_it_is_set(
    logger_config: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        PPOConfig().debugging(logger_config=logger_config)
    with pytest.raises(ConfigError, match=message):
        PPOConfig.from_dict({"logger_config": logger_config})


def test_rllibs_default_logger_is_the_results_folder_itself(tmp_path: Path) -> None:
    for kind in ("UnifiedLogger", "ray.tune.logger.UnifiedLogger"):
        config = _small().debugging(logger_config={"type": kind, "logdir": str(tmp_path)})
    _train(config, iterations=1)
    assert len(_progress(tmp_path)) == 1


def test_wandb_offline_gets_every_progress_column_of_every_iteration(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("wandb")
    monkeypatch.setenv("WANDB_SILENT", "true")
    logdir = tmp_path / "run"
    config = _small().debugging(
        logger_config={
            "type": "wandb",
            "project": "rlconf-tests",
            "mode": "offline",
            "logdir": str(logdir),
        }
    )
    _train(config)
    (run_file,) = offline_runs(logdir / "wandb")
    rows = history(run_file)
    progress = _progress(logdir)
    assert len(rows) == len(progress) == 2
    for logged, row in zip(rows, progress, strict=True):
        expected = _numeric(row)
        assert logged["_step"] == int(expected["training_iteration"])
        missing = sorted(set(expected) - set(logged))
        assert not missing, missing
        for key, value in expected.items():
            assert logged[key] == pytest.approx(value), key


def test_mlflow_gets_the_params_and_every_metric_readable_back_through_its_client(
    tmp_path: Path,
) -> None:
    pytest.importorskip("mlflow")
    from mlflow.tracking import MlflowClient

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    logdir = tmp_path / "run"
    config = _small().debugging(
        logger_config={
            "type": "mlflow",
            "tracking_uri": uri,
            "experiment_name": "rlconf-tests",
            "run_name": "ppo-small",
            "tags": {"suite": "trackers"},
            "logdir": str(logdir),
        }
    )
    _train(config)
    client = MlflowClient(uri)
    experiment = client.get_experiment_by_name("rlconf-tests")
    assert experiment is not None
    (run,) = client.search_runs([experiment.experiment_id])
    assert run.info.status == "FINISHED" and run.info.run_name == "ppo-small"
    assert run.data.tags["suite"] == "trackers"
    assert float(run.data.params["lr"]) == config.lr
    assert run.data.params["env"] == "CartPole-v1"
    progress = _progress(logdir)
    last = _numeric(progress[-1])
    assert set(last) <= set(run.data.metrics)
    for key, value in last.items():
        assert run.data.metrics[key] == pytest.approx(value), key
    steps = client.get_metric_history(run.info.run_id, "episode_reward_mean")
    assert [m.step for m in steps] == [1, 2]


def test_a_tracker_that_is_not_installed_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "wandb", None)
    config = _small().debugging(logger_config={"type": "wandb", "logdir": str(tmp_path)})
    with pytest.raises(ImportError, match=r'pip install "rlconf\[wandb\]"'):
        config.build()
