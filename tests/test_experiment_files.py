"""``rlconf train -f``: YAML experiment files in the reference's tuned-example format."""

from __future__ import annotations

import itertools
from pathlib import Path

import jsonschema
import pytest
import yaml

from rlconf import ConfigError
from rlconf.cli import main
from rlconf.experiment import load_experiments
from rlconf.registry import get_config_class
from rlconf.search_space import is_grid_search

TUNED = sorted((Path(__file__).resolve().parents[1] / "examples" / "tuned").glob("*.yaml"))


def test_there_are_tuned_examples() -> None:
    assert {p.name for p in TUNED} >= {"cartpole-ppo.yaml", "pendulum-ppo.yaml"}


@pytest.mark.parametrize("path", TUNED, ids=[p.name for p in TUNED])
def test_tuned_examples_match_the_json_schema_and_load(path: Path) -> None:
    for name, spec in yaml.safe_load(path.read_text()).items():
        instance = {**spec.get("config", {}), "env": spec["env"]}
        # The schema describes one run; a sweep's grid must hold values it allows.
        grids = {k: v["grid_search"] for k, v in instance.items() if is_grid_search(v)}
        for values in itertools.product(*grids.values()):
            point = {**instance, **dict(zip(grids, values, strict=True))}
            jsonschema.validate(point, get_config_class(spec["run"]).json_schema())
        (experiment,) = [e for e in load_experiments(path) if e.name == name]
        assert experiment.config["env"] == spec["env"]
        assert experiment.stop == spec["stop"]


def test_every_mistake_in_a_file_is_reported_before_anything_runs(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(
        "first:\n"
        "  run: PPO\n"
        "  env: CartPole-v1\n"
        "  stop: {episode_reward_mean: high}\n"
        "  config: {lr: -1}\n"
        "second:\n"
        "  run: PPO\n"
        "  chekpoint_freq: 2\n"
    )
    with pytest.raises(ConfigError) as error:
        load_experiments(path)
    message = str(error.value)
    assert "first.lr=-1" in message
    assert "first.stop.episode_reward_mean='high'" in message
    assert "second.chekpoint_freq" in message and "checkpoint_freq" in message


def test_cli_exits_2_for_a_bad_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("just text")
    assert main(["train", "-f", str(path)]) == 2
    assert "must map experiment names to experiments" in capsys.readouterr().err
    assert main(["train", "-f", str(tmp_path / "missing.yaml")]) == 2
    assert main(["train", "-f", str(path), "--run", "PPO"]) == 2
    assert main(["train"]) == 2


def test_train_runs_each_experiment_of_a_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    small = "{num_workers: 0, train_batch_size: 100, rollout_fragment_length: 100}"
    path = tmp_path / "two.yaml"
    path.write_text(
        f"pg-run:\n  run: PG\n  env: CartPole-v1\n  stop: {{training_iteration: 2}}\n"
        f"  config: {small}\n  local_dir: {tmp_path / 'results'}\n"
        f"a2c-run:\n  run: A2C\n  env: CartPole-v1\n  stop: {{timesteps_total: 100}}\n"
        f"  config: {small}\n  local_dir: {tmp_path / 'results'}\n  checkpoint_at_end: true\n"
    )
    assert main(["train", "-f", str(path), "-v"]) == 0
    out = capsys.readouterr().out
    assert "pg-run: results in" in out and "a2c-run: results in" in out
    runs = sorted(p.name.split("_")[0] for p in (tmp_path / "results").iterdir())
    assert runs == ["A2C", "PG"]
    (a2c,) = (tmp_path / "results").glob("A2C_*")
    assert (a2c / "checkpoint_000001").is_dir()
