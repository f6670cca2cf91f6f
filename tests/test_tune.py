"""Ray Tune: Tuner(PPO, ...) and Tuner("PPO", ...), grids, stop criteria, evaluation metrics,
checkpoints through the algorithm's own format, and the trial's placement group."""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import ray
from ray import tune

from rlconf import PPOConfig
from runtime import PPO
from tests.envs import PlacementReport
from tests.ray_session import ROOT, local_ray

sys.path.insert(0, str(Path(ROOT) / "examples"))

import sweep_lr

#: The slow tier (`python -m pytest -m slow`): Ray sessions with remote actors, clusters and Tune.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module", autouse=True)
def ray_session() -> Iterator[None]:
    with local_ray():
        yield


def test_the_example_sweeps_a_three_trial_lr_grid_with_tune_and_with_a_plain_loop(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # examples/sweep_lr.py as its script runs it, on 2 iterations (tests/test_examples.py does
    # not start it again as a process).
    results, returns = sweep_lr.main(iterations=2, storage_path=str(tmp_path))
    assert not results.errors
    assert sorted(r.config["lr"] for r in results) == sorted(sweep_lr.LEARNING_RATES)
    for result in results:
        trial_files = {p.name.split(".")[0] for p in Path(result.path).iterdir()}
        assert {"params", "result", "progress", "events"} <= trial_files
        assert result.metrics["training_iteration"] == 2
        assert result.metrics["evaluation"]["episodes_this_iter"] == 5
        assert result.metrics["evaluation"]["weights_version"] == 2
        checkpoint = Path(result.checkpoint.path)
        state = json.loads((checkpoint / "algorithm_state.json").read_text())
        assert state["iteration"] == 2
        restored = PPO.from_checkpoint(checkpoint)
        try:
            assert restored.iteration == 2
            assert restored.config["lr"] == result.config["lr"]
        finally:
            restored.stop()
    # The plain loop: one validated config per learning rate, built and trained without Tune.
    assert list(returns) == sweep_lr.LEARNING_RATES
    assert all(r > 0 for r in returns.values())
    lines = capsys.readouterr().out.splitlines()
    assert sum(line.startswith("tune  lr=") for line in lines) == 3
    assert sum(line.startswith("plain lr=") for line in lines) == 3


def test_tuner_with_the_class_a_config_object_and_a_reward_stop(tmp_path: Path) -> None:
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .rollouts(num_workers=1, num_envs_per_worker=4, rollout_fragment_length=64)
        .training(lr=1e-3, train_batch_size=256, sgd_minibatch_size=128, num_sgd_iter=5)
        .resources(num_cpus_for_driver=0.5, num_cpus_per_worker=0.5)
        .callbacks(PlacementReport)
        .debugging(seed=0)
    )
    tuner = tune.Tuner(
        PPO,
        param_space=config,  # type: ignore[arg-type]
        run_config=tune.RunConfig(
            storage_path=str(tmp_path),
            stop={"episode_reward_mean": 40, "training_iteration": 40},
            verbose=0,
        ),
    )
    results = tuner.fit()
    assert len(results) == 1
    result = results[0]
    assert result.error is None
    metrics = result.metrics or {}
    assert metrics["episode_reward_mean"] >= 40
    assert metrics["training_iteration"] < 40
    # The trial's placement group (from default_resource_request) holds the worker too.
    placement = metrics["placement"]
    assert placement["driver"] != "none"
    assert placement["workers"] == [placement["driver"]]


def test_algorithm_names_are_registered_again_in_a_new_ray_session() -> None:
    from ray.tune.registry import get_trainable_cls

    ray.shutdown()  # the fixture's session; a new one takes its place (and is shut down by it)
    ray.init(
        address="local",
        num_cpus=2,
        include_dashboard=False,
        logging_level=logging.ERROR,
    )
    assert get_trainable_cls("PPO") is PPO  # type: ignore[no-untyped-call]
