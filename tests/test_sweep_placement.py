"""Sweeps whose trials can't be placed fail before Tune starts, naming what a trial needs, what
the cluster has and the settings to lower, instead of staying PENDING forever; trials that fit
still run. One Ray of 2 logical CPUs for the module (started here, so to the sweeps it is a
cluster they connect to, without an autoscaler)."""

from __future__ import annotations

import os
import signal
import textwrap
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType

import pytest
from ray import tune

from rlconf import PPOConfig, sweep
from rlconf.cli import main
from rlconf.errors import ConfigError
from runtime.cluster.ray_session import AUTOSCALING_ENV
from runtime.sweeps.trial_resources import (
    config_trial_plans,
    local_sweep_cpus,
    refuse_unplaceable_trials,
    sweep_trial_plans,
)
from tests.ray_session import local_ray

#: The slow tier (`python -m pytest -m slow`): Ray sessions with remote actors, clusters and Tune.
pytestmark = pytest.mark.slow

#: Far below "forever", above what refusing takes on a busy machine.
REFUSED_WITHIN_S = 60


@pytest.fixture(scope="module", autouse=True)
def ray_session() -> Iterator[None]:
    with local_ray():
        yield


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Fail a sweep that hangs instead of waiting for it: SIGALRM raises in the main thread,
    where Tune's loop runs."""

    def expire(signum: int, frame: FrameType | None) -> None:
        raise TimeoutError(f"still running after {seconds:g} s: the sweep waits for its trials")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _small() -> PPOConfig:
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .rollouts(num_workers=0, num_envs_per_worker=1, rollout_fragment_length=32)
        .training(train_batch_size=64, sgd_minibatch_size=32, num_sgd_iter=1)
        .training(model={"fcnet_hiddens": [8]})
        .debugging(seed=0)
    )


def test_a_grid_whose_trials_need_more_cpus_than_the_cluster_fails_before_tune_starts(
    tmp_path: Path,
) -> None:
    # driver 1 CPU + 3 workers x 1 CPU = 4 CPUs per trial; the cluster has 2
    config = _small().rollouts(num_workers=3).training(lr=sweep.grid_search([1e-3, 1e-4]))
    started = time.monotonic()
    with deadline(REFUSED_WITHIN_S), pytest.raises(ConfigError) as caught:
        sweep.run(config, stop={"training_iteration": 1}, local_dir=tmp_path, progress=False)
    assert time.monotonic() - started < REFUSED_WITHIN_S
    (issue,) = caught.value.issues
    assert issue.field == "resources"
    message = str(caught.value)
    assert "CPU 4 (cluster total 2)" in message
    assert "3 rollout worker(s) x {CPU: 1}" in message
    assert "num_workers, num_cpus_per_worker" in message  # the settings to lower
    assert "PENDING forever" in message and f"{AUTOSCALING_ENV}=1" in message
    assert not any(tmp_path.iterdir())  # no trial started


def test_only_the_searched_resource_values_that_do_not_fit_are_named(tmp_path: Path) -> None:
    config = _small().rollouts(num_workers=sweep.grid_search([0, 1, 3]))
    with deadline(REFUSED_WITHIN_S), pytest.raises(ConfigError) as caught:
        sweep.run(config, stop={"training_iteration": 1}, local_dir=tmp_path, progress=False)
    (issue,) = caught.value.issues
    assert issue.field == "num_workers=3" and "CPU 4 (cluster total 2)" in issue.problem


def test_in_a_list_of_configs_the_one_that_does_not_fit_is_named(tmp_path: Path) -> None:
    configs = sweep.grid(_small(), num_cpus_per_worker=[1, 2], num_workers=[1])
    with deadline(REFUSED_WITHIN_S), pytest.raises(ConfigError) as caught:
        sweep.run(configs, stop={"training_iteration": 1}, local_dir=tmp_path, progress=False)
    (issue,) = caught.value.issues
    assert issue.field == "configs[1]" and "CPU 3 (cluster total 2)" in issue.problem


def test_the_cli_exits_2_naming_the_cpus_needed_and_available(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    experiment = tmp_path / "too-big.yaml"
    experiment.write_text(
        textwrap.dedent(
            """\
            too-big:
                run: PPO
                env: CartPole-v1
                stop:
                    training_iteration: 1
                config:
                    num_workers: 3
                    rollout_fragment_length: 32
                    train_batch_size: 96
                    sgd_minibatch_size: 32
                    lr:
                        grid_search: [0.001, 0.0001]
            """
        )
    )
    started = time.monotonic()
    with deadline(REFUSED_WITHIN_S):
        code = main(["train", "-f", str(experiment), "--local-dir", str(tmp_path / "out")])
    assert time.monotonic() - started < REFUSED_WITHIN_S
    assert code == 2
    err = capsys.readouterr().err
    assert "CPU 4 (cluster total 2)" in err and "num_workers" in err
    assert not (tmp_path / "out" / "too-big").exists()


def test_a_grid_over_num_workers_that_fits_runs_every_trial(tmp_path: Path) -> None:
    # The larger trial takes both CPUs (driver + 1 worker); the trials run one after the other.
    config = _small().rollouts(num_workers=sweep.grid_search([0, 1]))
    with deadline(300):
        summary = sweep.run(
            config,
            stop={"training_iteration": 1},
            metric="timesteps_total",
            local_dir=tmp_path,
            progress=False,
        )
    assert sorted(t.config.num_workers for t in summary.trials) == [0, 1]
    assert all(t.status == "TERMINATED" and t.iterations == 1 for t in summary.trials)


def test_an_autoscaling_cluster_is_left_to_place_the_trials(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    trials = sweep_trial_plans([_small().rollouts(num_workers=3)])
    monkeypatch.setenv(AUTOSCALING_ENV, "1")
    refuse_unplaceable_trials(trials, "PPO", "w", own_ray=False)
    with pytest.raises(ConfigError, match=r"the Ray this sweep started has fixed resources"):
        # A Ray the sweep started has no autoscaler, whatever the variable says.
        refuse_unplaceable_trials(trials, "PPO", "w", own_ray=True)
    monkeypatch.setenv(AUTOSCALING_ENV, "0")
    with pytest.raises(ConfigError, match="CPU 4"):
        refuse_unplaceable_trials(trials, "PPO", "w", own_ray=False)
    monkeypatch.setenv(AUTOSCALING_ENV, "maybe")
    with pytest.raises(ConfigError, match=rf"(?s){AUTOSCALING_ENV}='maybe'.*allowed: 1"):
        refuse_unplaceable_trials(trials, "PPO", "w", own_ray=False)


def test_a_gpu_no_node_has_is_refused_on_a_ray_the_sweep_would_size_for_cpus() -> None:
    trials = sweep_trial_plans([_small().resources(num_gpus=1)])
    with pytest.raises(ConfigError, match=r"GPU 1 \(cluster total 0\)"):
        refuse_unplaceable_trials(trials, "PPO", "w", own_ray=True)


# ------------------------------------------------------------------ without Ray


def test_each_searched_resource_value_makes_a_plan_and_other_keys_none() -> None:
    config = (
        _small()
        .rollouts(num_workers=sweep.grid_search([0, 3, 0]))
        .training(lr=sweep.grid_search([1e-3, 1e-4]), gamma=tune.sample_from(lambda _: 0.9))
    )
    plans = config_trial_plans(config)
    assert plans is not None
    assert [p.label for p in plans] == ["num_workers=0", "num_workers=3"]
    assert [len(p.plan.rollout) for p in plans] == [0, 3]
    ranges = _small().rollouts(num_workers=sweep.randint(1, 5))  # type: ignore[arg-type]
    ranges.resources(num_cpus_per_worker=tune.choice([0.5, 1.0]))
    plans = config_trial_plans(ranges)
    assert plans is not None
    assert [p.plan.totals(driver=True)["CPU"] for p in plans] == [1.5, 2.0, 3.0, 5.0]
    assert plans[-1].label == "num_workers=4, num_cpus_per_worker=1.0"
    unknowable = _small().rollouts(num_workers=tune.sample_from(lambda _: 2))
    assert config_trial_plans(unknowable) is None


def test_evaluation_overrides_searched_in_evaluation_config_make_plans() -> None:
    config = _small().evaluation(
        evaluation_interval=1,
        evaluation_num_workers=1,
        evaluation_config=PPOConfig.overrides(num_cpus_per_worker=tune.grid_search([1, 2])),
    )
    plans = config_trial_plans(config)
    assert plans is not None
    assert [p.plan.evaluation for p in plans] == [({"CPU": 1.0},), ({"CPU": 2.0},)]
    assert plans[1].label == "evaluation_config.num_cpus_per_worker=2"


def test_a_ray_the_sweep_starts_is_sized_to_its_largest_searched_trial() -> None:
    config = _small().rollouts(num_workers=sweep.grid_search([0, 7]))
    assert local_sweep_cpus(sweep_trial_plans([config])) == max(os.cpu_count() or 1, 8)
