"""The custom algorithm of examples/custom_algorithm.py (REINFORCE with a learned baseline)
works like a built-in, called as a user would: its typed config, ``config.build()`` and
``train()``, checkpoints, the command line with ``--import``, Tune, and learning CartPole."""

from __future__ import annotations

import importlib
import inspect
import json
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pytest
import ray
from ray import tune

import rlconf
from rlconf import ConfigError, registry, sweep
from runtime import Algorithm
from tests import child_process

if TYPE_CHECKING:
    from custom_algorithm import ReinforceConfig

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
#: As a user gives it on the command line, relative to the repository root.
EXAMPLE_FILE = "examples/custom_algorithm.py"
MODULE = "custom_algorithm"

sys.path.insert(0, str(EXAMPLES))

STATS = ("info", "learner", "default_policy", "learner_stats")


@pytest.fixture(scope="module", autouse=True)
def registered() -> Iterator[None]:
    """Import the example (which registers REINFORCE) for this module's tests only: the
    registry is put back afterwards, so that the other test modules see the built-ins alone
    (``rlconf list`` in test_cli, the walk over every algorithm in test_every_setting)."""
    imported_before = MODULE in sys.modules
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(registry, "_ENTRIES", dict(registry._ENTRIES))
        importlib.import_module(MODULE)
        yield
    if not imported_before:
        sys.modules.pop(MODULE, None)


def _stats(result: dict[str, Any]) -> dict[str, Any]:
    stats: Any = result
    for key in STATS:
        stats = stats[key]
    assert isinstance(stats, dict)
    return stats


def _small_config(*, use_critic: bool = True, baseline_loss_coeff: float = 0.5) -> ReinforceConfig:
    from custom_algorithm import ReinforceConfig

    return (
        ReinforceConfig()
        .environment("CartPole-v1")
        .rollouts(num_envs_per_worker=2, rollout_fragment_length=100)
        .training(
            train_batch_size=200,
            model={"fcnet_hiddens": [16]},
            use_critic=use_critic,
            baseline_loss_coeff=baseline_loss_coeff,
        )
        .debugging(seed=0)
    )


# ------------------------------------------------------------------ the config


def test_the_config_is_registered_typed_and_validated() -> None:
    from custom_algorithm import Reinforce, ReinforceConfig

    assert rlconf.get_config_class("REINFORCE") is ReinforceConfig
    assert registry.get_algorithm_class("REINFORCE") is Reinforce
    assert "REINFORCE" in rlconf.list_algorithms()

    config = ReinforceConfig()
    assert config.algo_name == "REINFORCE"
    assert config["use_critic"] is True and config["baseline_loss_coeff"] == 0.5
    assert config["lr"] == 0.01 and config["train_batch_size"] == 1000  # the algorithm's own
    assert config.training(baseline_loss_coeff=0.25, lr=0.001)["baseline_loss_coeff"] == 0.25

    parameters = inspect.signature(ReinforceConfig.training).parameters
    assert {"baseline_loss_coeff", "use_critic", "lr", "gamma", "model"} <= set(parameters)

    with pytest.raises(ConfigError, match="baseline_loss_coeff=-1"):
        ReinforceConfig().training(baseline_loss_coeff=-1)
    with pytest.raises(ConfigError, match="use_critic"):
        ReinforceConfig().training(use_critic="maybe")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="did you mean 'baseline_loss_coeff'"):
        ReinforceConfig().training(baseline_los_coeff=1.0)  # type: ignore[call-arg]
    with pytest.raises(ConfigError, match="baseline_loss_coef"):
        ReinforceConfig.from_dict({"baseline_loss_coef": 1.0})
    # A config of another algorithm does not take REINFORCE's fields.
    with pytest.raises(ConfigError, match="baseline_loss_coeff"):
        rlconf.PGConfig.from_dict({"baseline_loss_coeff": 1.0})


def test_the_config_round_trips_through_json() -> None:
    from custom_algorithm import ReinforceConfig

    config = ReinforceConfig().environment("CartPole-v1").training(baseline_loss_coeff=2.0)
    data = json.loads(config.to_json())
    assert data["$algorithm"] == "REINFORCE" and data["baseline_loss_coeff"] == 2.0
    again = ReinforceConfig.from_json(config.to_json())
    assert again["baseline_loss_coeff"] == 2.0 and again["env"] == "CartPole-v1"


# ------------------------------------------------------------------ build, train, checkpoints


def test_build_gives_a_reinforce_whose_train_reports_both_losses() -> None:
    from custom_algorithm import Reinforce

    algo = _small_config().build()
    try:
        assert isinstance(algo, Reinforce) and isinstance(algo, Algorithm)
        before = algo.get_weights()["default_policy"]
        results = [algo.train() for _ in range(2)]
        assert [r["training_iteration"] for r in results] == [1, 2]
        assert [r["timesteps_total"] for r in results] == [200, 400]
        stats = _stats(results[-1])
        assert np.isfinite(stats["policy_loss"])
        assert stats["baseline_loss"] > 0  # a squared error, still large after 2 updates
        after = algo.get_weights()["default_policy"]
        # The policy's layers and the baseline's (a network of its own) both learned.
        changed = {name for name in before if not np.array_equal(before[name], after[name])}
        assert any(name.startswith("model.logits") for name in changed), changed
        assert any(name.startswith("model.value_branch") for name in changed), changed
    finally:
        algo.stop()


def test_without_a_critic_there_is_no_baseline_loss() -> None:
    algo = _small_config(use_critic=False).build()
    try:
        assert algo.get_policy().has_critic is False
        stats = _stats(algo.train())
        assert np.isfinite(stats["policy_loss"])
        assert "baseline_loss" not in stats
    finally:
        algo.stop()


def test_a_checkpoint_restores_a_reinforce_with_its_weights_and_iteration() -> None:
    from custom_algorithm import Reinforce

    algo = _small_config(baseline_loss_coeff=0.25).build()
    try:
        algo.train()
        algo.train()
        path = algo.save()
        weights = algo.get_weights()["default_policy"]
    finally:
        algo.stop()
    assert Path(path).name == "checkpoint_000002"

    restored = Algorithm.from_checkpoint(path)
    try:
        assert isinstance(restored, Reinforce)
        assert restored.iteration == 2
        assert restored.config["baseline_loss_coeff"] == 0.25
        again = restored.get_weights()["default_policy"]
        assert set(again) == set(weights)
        assert all(np.array_equal(again[name], weights[name]) for name in weights)
        result = restored.train()  # and it trains on from there
        assert result["training_iteration"] == 3 and result["timesteps_total"] == 600
    finally:
        restored.stop()


# ------------------------------------------------------------------ the command line


def _rlconf(*args: str, results: Path) -> subprocess.CompletedProcess[str]:
    """``python -m rlconf.cli ARGS`` in the repository root (where the example's relative path
    holds), its results under ``results``."""
    return child_process.run(
        [sys.executable, "-m", "rlconf.cli", *args],
        cwd=ROOT,
        env={**os.environ, "RLCONF_RESULTS_DIR": str(results)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.slow
def test_cli_trains_evaluates_and_lists_the_imported_algorithm(tmp_path: Path) -> None:
    trained = _rlconf(
        "--import",
        EXAMPLE_FILE,
        "train",
        "--run",
        "REINFORCE",
        "--env",
        "CartPole-v1",
        "--stop",
        '{"training_iteration": 2}',
        "--checkpoint-at-end",
        results=tmp_path,
    )
    assert trained.returncode == 0, trained.stderr[-4000:]
    assert trained.stdout.startswith("REINFORCE: results in ")
    assert trained.stdout.count("iter ") == 2
    (run_dir,) = tmp_path.iterdir()
    assert "CartPole-v1" in run_dir.name
    assert json.loads((run_dir / "params.json").read_text())["$algorithm"] == "REINFORCE"
    results = [json.loads(line) for line in (run_dir / "result.json").read_text().splitlines()]
    assert [r["training_iteration"] for r in results] == [1, 2]
    assert {"policy_loss", "baseline_loss"} <= set(_stats(results[-1]))
    assert (run_dir / "checkpoint_000002").is_dir()

    evaluated = _rlconf(
        "--import", EXAMPLE_FILE, "evaluate", str(run_dir), "--episodes", "2", results=tmp_path
    )
    assert evaluated.returncode == 0, evaluated.stderr[-4000:]
    assert "2 episodes" in evaluated.stdout
    # Without the import the checkpoint's algorithm is unknown: a config error, no traceback.
    unknown = _rlconf("evaluate", str(run_dir), "--episodes", "1", results=tmp_path)
    assert unknown.returncode == 2
    assert "REINFORCE" in unknown.stderr and "Traceback" not in unknown.stderr

    listed = _rlconf("--import", EXAMPLE_FILE, "list", results=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert "REINFORCE\tReinforceConfig" in listed.stdout.splitlines()


@pytest.mark.slow
def test_cli_schema_and_config_of_the_imported_algorithm(tmp_path: Path) -> None:
    schema = _rlconf("--import", EXAMPLE_FILE, "schema", "REINFORCE", results=tmp_path)
    assert schema.returncode == 0, schema.stderr
    properties = json.loads(schema.stdout)["properties"]
    assert properties["baseline_loss_coeff"]["minimum"] == 0
    assert properties["baseline_loss_coeff"]["default"] == 0.5
    assert properties["use_critic"]["type"] == "boolean"
    assert "lr" in properties

    printed = _rlconf(
        "--import", EXAMPLE_FILE, "config", "REINFORCE", "--env", "CartPole-v1", results=tmp_path
    )
    assert printed.returncode == 0, printed.stderr
    config = json.loads(printed.stdout)
    assert config["$algorithm"] == "REINFORCE" and config["env"] == "CartPole-v1"
    assert config["baseline_loss_coeff"] == 0.5 and config["use_critic"] is True

    refused = _rlconf(
        "--import",
        EXAMPLE_FILE,
        "config",
        "REINFORCE",
        "--config",
        '{"baseline_loss_coeff": -1, "baseline_los": 2}',
        results=tmp_path,
    )
    assert refused.returncode == 2
    assert "baseline_loss_coeff=-1" in refused.stderr
    assert "baseline_los: unknown key" in refused.stderr


def test_cli_without_the_import_or_with_a_missing_file_exits_2(tmp_path: Path) -> None:
    train = ["train", "--run", "REINFORCE", "--env", "CartPole-v1"]
    unregistered = _rlconf(*train, results=tmp_path)
    assert unregistered.returncode == 2
    assert "'REINFORCE'" in unregistered.stderr and "is not registered" in unregistered.stderr

    missing = _rlconf("--import", "no/such/file.py", *train, results=tmp_path)
    assert missing.returncode == 2
    assert "no/such/file.py" in missing.stderr and "is not a file" in missing.stderr
    assert "Traceback" not in unregistered.stderr + missing.stderr
    assert not any(tmp_path.iterdir())  # nothing was trained


# ------------------------------------------------------------------ Tune


@pytest.fixture
def ray_with_the_examples() -> Iterator[None]:
    """A Ray session whose workers import the example by its module name as this process
    does: its folder is on their path (classes from importable modules are pickled by
    reference)."""
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join([str(ROOT), str(EXAMPLES)])}},
        logging_level=logging.ERROR,
    )
    try:
        yield
    finally:
        ray.shutdown()


@pytest.mark.slow
def test_tuner_runs_the_algorithm_by_name_over_its_own_field(
    ray_with_the_examples: None, tmp_path: Path
) -> None:
    from custom_algorithm import Reinforce, ReinforceConfig

    config = (
        ReinforceConfig()
        .environment("CartPole-v1")
        .training(train_batch_size=200, baseline_loss_coeff=sweep.grid_search([0.25, 1.0]))
    )
    tuner = tune.Tuner(
        "REINFORCE",
        param_space=config,  # type: ignore[arg-type]
        run_config=tune.RunConfig(
            storage_path=str(tmp_path),
            stop={"training_iteration": 1},
            checkpoint_config=tune.CheckpointConfig(checkpoint_at_end=True),
            verbose=0,
        ),
    )
    grid = tuner.fit()
    assert not grid.errors
    results = [grid[i] for i in range(len(grid))]
    coeffs = []
    for result in results:
        assert result.config is not None and result.metrics is not None
        coeffs.append(result.config["baseline_loss_coeff"])
        assert result.metrics["training_iteration"] == 1
        assert {"policy_loss", "baseline_loss"} <= set(_stats(result.metrics))
    assert sorted(coeffs) == [0.25, 1.0]
    # A trial's checkpoint restores outside Tune.
    checkpoint = results[0].checkpoint
    assert checkpoint is not None
    restored = Algorithm.from_checkpoint(checkpoint.path)
    try:
        assert isinstance(restored, Reinforce) and restored.iteration == 1
        assert restored.config["baseline_loss_coeff"] == coeffs[0]
    finally:
        restored.stop()


# ------------------------------------------------------------------ learning


def test_the_example_learns_cartpole(capsys: pytest.CaptureFixture[str]) -> None:
    """``main`` trains seed 0 to a mean return of 150: 36k steps under the default, avx2 and
    the machine's own kernel set, the budget nearly three times that."""
    from custom_algorithm import main

    assert main(budget=100_000) == 0, capsys.readouterr().err
    assert "reached 150.0 in" in capsys.readouterr().out
