"""Tune's trial schedulers on rlconf algorithms: ``reset_config`` (a trial actor reused for a new
config, as ``reuse_actors=True`` does), PBT's exploits (another trial's checkpoint restored
into an actor whose config has a perturbed lr) and ASHA's early stopping. One Ray session
(2 CPUs) for the module.

The schedulers rank trials by ``learner_lr``, the learning rate the learner reports for each
iteration (``tests.scheduler_helpers``): its ranking is known from the configs, so every
decision the schedulers make is known in advance, while the value still comes from the
algorithm's results (a learner left on another lr would rank differently)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import ray
from ray import tune
from ray.tune.schedulers import ASHAScheduler, PopulationBasedTraining

import runtime  # noqa: F401  (the algorithms become Tune trainables)
from rlconf import PPOConfig
from rlconf.errors import ConfigError
from runtime import PPO
from runtime.core.learner import DEFAULT_OPTIMIZER
from tests.envs import PlacementReport
from tests.ray_session import local_ray
from tests.scheduler_helpers import LEARNER_LR, PROBE, ProbedPPO, ResultLog, weights_digest

#: The slow tier (`python -m pytest -m slow`): Ray sessions with remote actors, clusters and Tune.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module", autouse=True)
def ray_session() -> Iterator[None]:
    with local_ray():
        yield


def _config(lr: float = 1e-3, num_workers: int = 0) -> PPOConfig:
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .rollouts(num_workers=num_workers, num_envs_per_worker=4, rollout_fragment_length=64)
        .training(
            lr=lr,
            train_batch_size=256,
            sgd_minibatch_size=128,
            num_sgd_iter=2,
            model={"fcnet_hiddens": [16]},
        )
        .debugging(seed=0)
    )


def _learner_lr(result: dict[str, Any]) -> float:
    return float(result["info"]["learner"]["default_policy"]["learner_stats"]["cur_lr"])


def _optimizer_lr(algo: PPO) -> float:
    return float(algo.get_policy().learner.optimizers[DEFAULT_OPTIMIZER].param_groups[0]["lr"])


def _is_dead(actor: Any) -> bool:
    try:
        ray.get(actor.get_perf_stats.remote(), timeout=30)
    except ray.exceptions.RayActorError:
        return True
    return False


def _training_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("rlconf-train")]


# ---------------------------------------------------------------------- reset_config, no Tune


def test_reset_config_builds_afresh_and_releases_the_old_actors_and_placement_group() -> None:
    # Rollout and evaluation actors of 1 CPU each fill the 2-CPU cluster: the rebuilt ones can
    # only be placed once the old placement group is gone.
    config = (
        _config(lr=1e-3, num_workers=1)
        .evaluation(
            evaluation_interval=1,
            evaluation_num_workers=1,
            evaluation_duration=2,
            evaluation_parallel_to_training=True,
        )
        .resources(placement_timeout_s=20)
    )
    algo = config.build()
    try:
        first = algo.train()
        assert algo.placement is not None and algo.evaluation_workers is not None
        old_actors = algo.workers.remote_workers() + algo.evaluation_workers.remote_workers()
        old_group = algo.placement.group
        old_logdir = algo.logdir

        assert algo.reset_config(config.copy().training(lr=5e-4).to_dict()) is True

        assert all(_is_dead(actor) for actor in old_actors)
        assert ray.util.placement_group_table(old_group)["state"] == "REMOVED"
        assert not _training_threads()
        assert algo.config["lr"] == 5e-4
        # A fresh algorithm's results folder, with the new config's params.json.
        assert algo.logdir != old_logdir
        assert '"lr": 0.0005' in (Path(algo.logdir) / "params.json").read_text()

        result = algo.train()
        assert result["training_iteration"] == 1
        assert result["num_env_steps_sampled"] == first["num_env_steps_sampled"]
        assert result["episodes_total"] == result["episodes_this_iter"]
        assert _learner_lr(result) == 5e-4
        assert result["evaluation"]["episodes_this_iter"] == 2
        assert result["num_healthy_workers"] == 1
        assert not _training_threads()

        # Without evaluation in the new config, its workers are gone and none are made again.
        eval_actors = algo.evaluation_workers.remote_workers()
        algo.reset_config(_config(lr=5e-4, num_workers=1).to_dict())
        assert all(_is_dead(actor) for actor in eval_actors)
        assert algo.evaluation_workers is None
        assert "evaluation" not in algo.train()
    finally:
        algo.stop()


def test_a_refused_config_raises_and_leaves_the_algorithm_as_it_was() -> None:
    config = _config(lr=1e-3, num_workers=1).resources(num_cpus_per_worker=0.5)
    algo = config.build()
    try:
        algo.train()
        actors = algo.workers.remote_workers()
        logdir = algo.logdir
        with pytest.raises(ConfigError, match="lr"):
            algo.reset_config({**config.to_dict(), "lr": -1.0})
        with pytest.raises(ConfigError, match="sample_async"):
            algo.reset_config({**config.to_dict(), "lr": 5e-4, "sample_async": True})
        # reset() is Tune's hook on a trial actor; outside a trial it is refused.
        with pytest.raises(RuntimeError, match="Tune"):
            algo.reset(config.copy().training(lr=5e-4).to_dict())

        result = algo.train()
        assert result["training_iteration"] == 2
        assert _learner_lr(result) == 1e-3
        assert algo.workers.remote_workers() == actors
        assert not _is_dead(actors[0])
        assert algo.logdir == logdir
    finally:
        algo.stop()


def test_a_checkpoint_restored_after_a_reset_trains_with_the_new_lr(tmp_path: Path) -> None:
    """PBT's exploit without Tune: the clone's checkpoint holds lr 1e-3 (and an Adam state made
    with it); the reset actor's config says 3e-4, and 3e-4 is what it trains with."""
    source = _config(lr=1e-3).build()
    try:
        source.train()
        checkpoint = source.save(str(tmp_path))
        source_digest = weights_digest(source)
    finally:
        source.stop()
    algo = _config(lr=1e-5).debugging(seed=1).build()
    try:
        algo.train()
        algo.reset_config(_config(lr=3e-4).debugging(seed=1))
        algo.restore(checkpoint)
        assert weights_digest(algo) == source_digest
        assert _optimizer_lr(algo) == 3e-4
        result = algo.train()
        assert result["training_iteration"] == 2
        assert _learner_lr(result) == 3e-4
        assert _optimizer_lr(algo) == 3e-4
    finally:
        algo.stop()


# ---------------------------------------------------------------------- Tune's schedulers


def test_pbt_exploit_restores_the_other_trials_weights_into_a_reused_actor(
    tmp_path: Path,
) -> None:
    """Two trials, lr 1e-3 and 1e-5, perturbed in lockstep (synch) after iteration 1: the 1e-5
    trial is certainly the lower half and clones the other one.

    Each trial takes both CPUs, so the trials take turns on the cluster (time-multiplexed PBT,
    what ``reuse_actors`` is for): an actor left by one trial is reset for the next. Taking
    turns also keeps the upper trial's checkpoint safe: when both run at once, synchronous PBT
    can ask the upper trial for a second save while its pause save is still in flight; Tune
    (2.60) then counts one of the two, and the trial's next save overwrites the checkpoint the
    exploit restores."""
    space = _config().resources(num_cpus_for_driver=2).to_dict()
    space["lr"] = tune.grid_search([1e-3, 1e-5])
    pbt = PopulationBasedTraining(
        time_attr="training_iteration",
        perturbation_interval=1,
        hyperparam_mutations={"lr": tune.loguniform(1e-5, 1e-2)},
        quantile_fraction=0.5,
        # Always the multiplicative perturbation (never a resample), so the new lr is known.
        resample_probability=0.0,
        perturbation_factors=(1.2, 0.8),
        synch=True,
    )
    log = ResultLog()
    results = tune.Tuner(
        ProbedPPO,
        param_space=space,
        tune_config=tune.TuneConfig(
            scheduler=pbt, metric=LEARNER_LR, mode="max", reuse_actors=True
        ),
        run_config=tune.RunConfig(
            storage_path=str(tmp_path),
            # Iteration 2 ends the trials before a second perturbation.
            stop={"training_iteration": 2},
            callbacks=[log],
            verbose=0,
        ),
    ).fit()
    assert not results.errors

    first_results = {r[PROBE]["config_lr"]: r for r in log.results if r["training_iteration"] == 1}
    strong, weak = first_results[1e-3]["trial_id"], first_results[1e-5]["trial_id"]
    strong_digest = first_results[1e-3][PROBE]["weights_digest"]
    weak_first, weak_second = log.of_trial(weak)
    assert weak_first[PROBE]["weights_digest"] != strong_digest

    # The exploit: the weak trial went on from the strong trial's weights of iteration 1 ...
    assert weak_second["training_iteration"] == 2
    assert weak_second[PROBE]["loaded_digest"] == strong_digest
    assert strong in weak_second[PROBE]["loaded_from"]
    # ... with the strong trial's lr perturbed, which its learner and optimizer then used.
    new_lr = weak_second[PROBE]["config_lr"]
    assert new_lr in (pytest.approx(1e-3 * 1.2), pytest.approx(1e-3 * 0.8))
    assert weak_second[LEARNER_LR] == new_lr
    assert weak_second[PROBE]["optimizer_lr"] == new_lr
    assert weak_second["config"]["lr"] == new_lr

    # The exploit ran in a reused actor (reset_config, not a new actor, took the new config),
    # and fewer actors ran than trials (re)started (where iterations_since_restore is 1).
    assert weak_second[PROBE]["resets"] >= 1
    starts = [r for r in log.results if r["iterations_since_restore"] == 1]
    assert len({r["pid"] for r in log.results}) < len(starts)


def test_asha_stops_the_trials_below_the_rung_cutoff(tmp_path: Path) -> None:
    """Four trials, one at a time in grid order, rungs at iterations 1 and 2, max_t 4. ASHA
    stops a trial at a rung when its metric is below the median of those recorded there before:
    lr 3e-4 is first everywhere (kept); 1e-4 < 3e-4 (stopped at 1); 4e-4 is above the medians
    of (3e-4, 1e-4) and (3e-4) (kept); 2e-4 < median(3e-4, 1e-4, 4e-4) = 3e-4 (stopped at 1).
    A trial stopped later than its first rung, or a weak one kept, fails the test.

    One actor serves all four trials (reuse_actors), each with a remote rollout worker in the
    trial's placement group: every reset must free the bundle the last worker held."""
    lrs = [3e-4, 1e-4, 4e-4, 2e-4]
    space = (
        _config(num_workers=1)
        .resources(num_cpus_for_driver=0.5, num_cpus_per_worker=0.5)
        .callbacks(PlacementReport)
        .to_dict()
    )
    space["lr"] = tune.grid_search(lrs)
    log = ResultLog()
    results = tune.Tuner(
        ProbedPPO,
        param_space=space,
        tune_config=tune.TuneConfig(
            scheduler=ASHAScheduler(
                time_attr="training_iteration", max_t=4, grace_period=1, reduction_factor=2
            ),
            metric=LEARNER_LR,
            mode="max",
            max_concurrent_trials=1,
            reuse_actors=True,
        ),
        run_config=tune.RunConfig(storage_path=str(tmp_path), callbacks=[log], verbose=0),
    ).fit()
    assert not results.errors

    trials = [results[i] for i in range(len(results))]
    final = {(r.config or {})["lr"]: (r.metrics or {}).get("training_iteration") for r in trials}
    assert final == {3e-4: 4, 1e-4: 1, 4e-4: 4, 2e-4: 1}

    assert [r[PROBE]["config_lr"] for r in log.results if r["training_iteration"] == 1] == lrs
    assert len({r["pid"] for r in log.results}) == 1
    for result in log.results:
        assert result[LEARNER_LR] == result[PROBE]["optimizer_lr"] == result["config"]["lr"]
        # The worker sits in the trial's placement group, as the driver does.
        assert result["placement"]["workers"] == [result["placement"]["driver"]] != ["none"]
    # Each trial started as a fresh algorithm would: same seed, same initial weights, counters
    # from zero.
    firsts = [r for r in log.results if r["training_iteration"] == 1]
    assert len({r[PROBE]["built_digest"] for r in firsts}) == 1
    assert {r["num_env_steps_sampled"] for r in firsts} == {firsts[0]["timesteps_this_iter"]}
