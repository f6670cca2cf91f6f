"""The results directory of a run started from Python (``algo.logdir``)."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest

from rlconf import ConfigError, PPOConfig
from runtime import Algorithm
from runtime.results.result_logger import flatten
from runtime.results.result_logger import scalars as scalars_of


def _config(tmp_path: Path) -> PPOConfig:
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .rollouts(num_workers=0, rollout_fragment_length=100)
        .training(train_batch_size=100, sgd_minibatch_size=100, num_sgd_iter=1)
        .evaluation(
            evaluation_interval=2, evaluation_duration=1, always_attach_evaluation_results=True
        )
        .debugging(logger_config={"local_dir": str(tmp_path)})
    )


def test_python_runs_write_the_same_results_directory(tmp_path: Path) -> None:
    algo = _config(tmp_path).build()
    try:
        results = [algo.train() for _ in range(2)]
        checkpoint = algo.save()
    finally:
        algo.stop()
    logdir = Path(algo.logdir)
    assert logdir.parent == tmp_path and logdir.name.startswith("PPO_CartPole-v1_")
    assert Path(checkpoint).parent == logdir
    assert json.loads((logdir / "params.json").read_text())["train_batch_size"] == 100
    lines = (logdir / "result.json").read_text().splitlines()
    first = json.loads(lines[0])
    # nan (no evaluation yet) is written as null, so every line is strict JSON
    assert math.isnan(results[0]["evaluation"]["episode_reward_mean"])
    assert first["evaluation"]["episode_reward_mean"] is None
    with open(logdir / "progress.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 2 and rows[1]["evaluation/episodes_this_iter"] == "1"
    assert "config" not in first  # the config is in params.json


def test_params_json_is_valid_even_with_a_lambda_in_the_config(tmp_path: Path) -> None:
    config = _config(tmp_path).evaluation(custom_eval_function=lambda algorithm, workers: {})
    algo = config.build()
    algo.stop()
    params = json.loads((Path(algo.logdir) / "params.json").read_text())
    assert "lambda" in params["custom_eval_function"]


def test_flatten_joins_nested_keys_with_slashes() -> None:
    assert dict(flatten({"a": {"b": 1, "c": {"d": 2}}, "e": 3})) == {"a/b": 1, "a/c/d": 2, "e": 3}


def test_a_run_that_fails_to_build_leaves_no_results_folder(tmp_path: Path) -> None:
    config = _config(tmp_path).resources(num_gpus=1)  # no CUDA here: a ConfigError in setup
    with pytest.raises(ConfigError, match="num_gpus"):
        config.build()
    assert list(tmp_path.iterdir()) == []


def test_a_restored_algorithm_makes_its_results_folder_only_when_it_logs(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    algo = _config(runs).build()
    checkpoint = algo.save(str(tmp_path / "saved"))
    algo.stop()
    assert [p.name for p in runs.iterdir()] == [Path(algo.logdir).name]

    restored = Algorithm.from_checkpoint(checkpoint)
    restored.compute_single_action([0.0, 0.0, 0.0, 0.0], explore=False)
    assert len(list(runs.iterdir())) == 1  # acting writes nothing
    restored.train()
    restored.stop()
    assert len(list(runs.iterdir())) == 2
    assert (Path(restored.logdir) / "result.json").read_text().count("\n") == 1
    assert (Path(restored.logdir) / "params.json").exists()


def test_tensorboard_reads_every_result_key_stepped_by_timesteps(tmp_path: Path) -> None:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    algo = _config(tmp_path).build()
    try:
        results = [algo.train() for _ in range(2)]
    finally:
        algo.stop()
    events = EventAccumulator(algo.logdir)
    events.Reload()
    scalars = events.Scalars("episode_reward_mean")
    assert [s.step for s in scalars] == [r["timesteps_total"] for r in results]
    assert "evaluation/episode_reward_mean" in events.Tags()["scalars"]
    # Every numeric leaf of the results, by its flattened key, and nothing else.
    assert set(events.Tags()["scalars"]) == set().union(*(scalars_of(r) for r in results))


@pytest.mark.parametrize("log_sys_usage", [True, False])
def test_log_sys_usage_adds_cpu_and_memory_use_to_results(
    tmp_path: Path, log_sys_usage: bool
) -> None:
    algo = _config(tmp_path).debugging(log_sys_usage=log_sys_usage).build()
    try:
        result = algo.train()
    finally:
        algo.stop()
    if not log_sys_usage:
        assert "perf" not in result
        return
    perf = result["perf"]
    assert 0 <= perf["cpu_util_percent"] <= 100.0 + 1e-6
    assert perf["process_rss_mb"] > 50  # torch alone is larger than that
    assert 0 < perf["ram_util_percent"] < 100
