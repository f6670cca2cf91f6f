"""IMPALA and APPO with the rest of the runtime: multi-agent policies (in the driver and on a
remote worker), evaluation workers (after the step and beside it), checkpoints (learner
weights, optimizer, learner state, queue settings) and Tune. One Ray session (2 CPUs) for the
module; tiny batches and networks: nothing here needs to learn.

The learner thread keeps updating between two ``train()`` calls while batches wait in its
queue: a test that compares weights takes its lock (``algo._learner_thread.lock``) so that
no update lands between the two reads."""

from __future__ import annotations

import copy
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from ray import tune

import runtime
import runtime.training.checkpoint_files
from rlconf import APPOConfig, IMPALAConfig, sweep
from runtime import Algorithm, WorkerSet
from runtime.algorithms.impala.impala import IMPALA
from tests.multi_agent_envs import map_by_index
from tests.ray_session import local_ray

#: The slow tier (`python -m pytest -m slow`): Ray sessions with remote actors, clusters and Tune.
pytestmark = pytest.mark.slow

MultiCartPole = runtime.make_multi_agent("CartPole-v1")
POLICIES = {"p0", "p1"}


@pytest.fixture(scope="module", autouse=True)
def ray_session() -> Iterator[None]:
    with local_ray():
        yield


def _small(config: IMPALAConfig, steps: int = 80) -> IMPALAConfig:
    """Fragments of 10 steps on 2 sub-envs, train batches of 40, an iteration of ``steps`` env
    steps (not IMPALA's 10 s)."""
    return (
        config.rollouts(num_envs_per_worker=2, rollout_fragment_length=10)
        .training(train_batch_size=40, model={"fcnet_hiddens": [16, 16]})
        .reporting(min_time_s_per_reporting=0, min_sample_timesteps_per_reporting=steps)
        .debugging(seed=0)
    )


def _cartpole(config: IMPALAConfig) -> IMPALAConfig:
    return _small(config.environment("CartPole-v1").rollouts(num_workers=0))


def _multi_agent(config: IMPALAConfig) -> IMPALAConfig:
    """2-agent CartPole, agent i acting with policy ``p<i>`` (both learn)."""
    return _small(
        config.environment(MultiCartPole, env_config={"num_agents": 2}).multi_agent(
            policies=POLICIES, policy_mapping_fn=map_by_index
        )
    )


def _learner_weights(algo: Algorithm) -> dict[str, dict[str, Any]]:
    """Every policy's learner weights, read between two updates."""
    with algo._learner_thread.lock:  # type: ignore[attr-defined]
        return algo.learner_group.get_weights(sorted(algo.workers.local_worker().policy_map))


def _changed(before: dict[str, Any], after: dict[str, Any]) -> bool:
    return any(not np.array_equal(value, after[name]) for name, value in before.items())


def _assert_same(a: Any, b: Any, where: str = "") -> None:
    """Nested dicts/lists of tensors, arrays and plain values are equal."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys(), where
        for key in a:
            _assert_same(a[key], b[key], f"{where}/{key}")
    elif isinstance(a, list | tuple):
        assert isinstance(b, list | tuple) and len(a) == len(b), where
        for index, (x, y) in enumerate(zip(a, b, strict=True)):
            _assert_same(x, y, f"{where}/{index}")
    elif isinstance(a, torch.Tensor | np.ndarray):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b), err_msg=where)
    else:
        assert a == b, where


# ------------------------------------------------------------------ multi-agent


def test_multi_agent_impala_trains_both_policies() -> None:
    algo = _multi_agent(IMPALAConfig().rollouts(num_workers=0)).build()
    try:
        initial = algo.get_weights()  # the learners start from the acting copies' weights
        results = [algo.train() for _ in range(2)]
        learned = _learner_weights(algo)
        acting = algo.get_weights()
    finally:
        algo.stop()
    learner = results[-1]["info"]["learner"]
    assert set(learner) == POLICIES
    for pid in POLICIES:
        assert {"policy_loss", "vf_loss", "entropy"} <= set(learner[pid]["learner_stats"])
        assert _changed(initial[pid], learned[pid]), pid
        assert _changed(initial[pid], acting[pid]), pid
    info = results[-1]["info"]
    # both agents act at every env step (until one's pole falls): a row each
    assert 0 < info["num_env_steps_trained"] < info["num_agent_steps_trained"]


def test_multi_agent_appo_on_a_remote_worker_gets_both_policies_weights() -> None:
    config = _multi_agent(
        APPOConfig()
        .rollouts(num_workers=1)
        .resources(num_cpus_per_worker=0.5, num_cpus_for_driver=0)
    )
    algo = config.build()
    try:
        (initial,) = algo.workers.foreach_worker(lambda w: w.get_weights(), local=False)
        result = algo.train()
        for _ in range(4):  # the learner's updates arrive asynchronously
            if result["info"]["num_weight_broadcasts"] and set(result["info"]["learner"]):
                break
            result = algo.train()
        (remote,) = algo.workers.foreach_worker(lambda w: w.get_weights(), local=False)
    finally:
        algo.stop()
    info = result["info"]
    assert result["num_healthy_workers"] == 1
    assert set(info["learner"]) == POLICIES
    for pid in POLICIES:
        assert {"kl_coeff", "mean_IS", "policy_loss"} <= set(info["learner"][pid]["learner_stats"])
        # the remote worker (the only one sampling) got both policies' learned weights
        assert _changed(initial[pid], remote[pid]), pid


# ------------------------------------------------------------------ evaluation


def test_evaluation_workers_evaluate_the_learners_weights() -> None:
    config = _cartpole(IMPALAConfig()).evaluation(
        evaluation_interval=1, evaluation_num_workers=1, evaluation_duration=2
    )
    algo = config.build()
    try:
        results = [algo.train() for _ in range(2)]
        # evaluate() between two updates: the evaluation worker gets the learner's weights,
        # not an older acting copy of the driver
        with algo._learner_thread.lock:
            algo.evaluate()
            learned = algo.learner_group.get_weights(["default_policy"])["default_policy"]
            assert algo.evaluation_workers is not None
            (evaluated,) = algo.evaluation_workers.foreach_worker(
                lambda w: w.get_weights(), local=False
            )
    finally:
        algo.stop()
    for result in results:
        evaluation = result["evaluation"]
        assert evaluation["episodes_this_iter"] == 2
        assert evaluation["episode_reward_mean"] > 0
    assert [r["evaluation"]["weights_version"] for r in results] == [1, 2]
    _assert_same(evaluated["default_policy"], learned)


def test_parallel_evaluation_runs_beside_the_asynchronous_step() -> None:
    config = _cartpole(IMPALAConfig()).evaluation(
        evaluation_interval=1,
        evaluation_num_workers=1,
        evaluation_duration=2,
        evaluation_parallel_to_training=True,
    )
    algo = config.build()
    try:
        results = [algo.train() for _ in range(2)]
    finally:
        algo.stop()
    # on the weights from before each step
    assert [r["evaluation"]["weights_version"] for r in results] == [0, 1]
    assert all(r["evaluation"]["episodes_this_iter"] == 2 for r in results)
    assert all(r["info"]["learner_weights_version"] > 0 for r in results[1:])


# ------------------------------------------------------------------ checkpoints


#: Queue settings apart from the defaults, each a place the checkpoint's config restores.
QUEUE_SETTINGS: dict[str, Any] = {
    "learner_queue_size": 3,
    "learner_queue_timeout": 30.0,
    "num_sgd_iter": 2,
    "minibatch_buffer_size": 2,
    "broadcast_interval": 2,
    "max_sample_requests_in_flight_per_worker": 1,
    "replay_proportion": 0.5,
    "replay_buffer_num_slots": 3,
}


def _queue_settings(algo: Algorithm) -> dict[str, Any]:
    thread = algo._learner_thread  # type: ignore[attr-defined]
    settings = algo.async_settings  # type: ignore[attr-defined]
    return {
        "learner_queue_size": thread.inqueue.maxsize,
        "learner_queue_timeout": thread.queue_timeout,
        "num_sgd_iter": thread.num_sgd_iter,
        "minibatch_buffer_size": len(thread._slots),
        **{
            key: getattr(settings, key)
            for key in (
                "broadcast_interval",
                "max_sample_requests_in_flight_per_worker",
                "replay_proportion",
                "replay_buffer_num_slots",
            )
        },
    }


def _learner_state(algo: Algorithm, pid: str = "default_policy") -> dict[str, Any]:
    """The learner's weights, its optimizer's and target networks' state dicts, and its JSON
    state (update counts, APPO's KL coefficient), read between two updates. Not its
    ``global_timestep``: a restore sets it to the env steps sampled, as the next step would
    (the driver's learner hears of the steps sampled only when it samples or broadcasts)."""
    with algo._learner_thread.lock:  # type: ignore[attr-defined]
        group = algo.learner_group
        state = dict(group.learner_state(pid) or {})
        del state["global_timestep"]
        return {
            "weights": group.get_weights([pid])[pid],
            # copies: an optimizer's state dict holds its live tensors
            "tensors": copy.deepcopy(group.tensor_state(pid)),
            "state": state,
        }


@pytest.mark.parametrize("config_class", [IMPALAConfig, APPOConfig])
def test_a_checkpoint_restores_the_learner_its_optimizer_and_the_queue_settings(
    tmp_path: Path, config_class: type[IMPALAConfig]
) -> None:
    config = _cartpole(config_class()).training(**QUEUE_SETTINGS)
    algo = config.build()
    try:
        assert _queue_settings(algo) == QUEUE_SETTINGS
        algo.train()
        with algo._learner_thread.lock:  # no update between the checkpoint and the copy
            path = algo.save(str(tmp_path))
            saved = _learner_state(algo)
    finally:
        algo.stop()
    assert saved["tensors"]["optimizers/default"]["state"]  # Adam's moments: it stepped
    assert saved["state"]["num_grad_updates"] > 0

    restored = Algorithm.from_checkpoint(path)  # the checkpoint's own config
    try:
        assert type(restored).__name__ == config.algo_name
        assert _queue_settings(restored) == QUEUE_SETTINGS
        _assert_same(_learner_state(restored), saved)
        assert restored.iteration == 1
        result = restored.train()  # and it goes on from there
        assert result["training_iteration"] == 2
    finally:
        restored.stop()

    fresh = config.build()  # restore() into an algorithm built anew from the config
    try:
        fresh.restore(path)
        _assert_same(_learner_state(fresh), saved)
    finally:
        fresh.stop()


def _held(lock: Any) -> bool:
    """Whether ``lock`` is held: another thread cannot take it now."""
    taken: list[bool] = []

    def probe() -> None:
        taken.append(lock.acquire(blocking=False))
        if taken[0]:
            lock.release()

    thread = threading.Thread(target=probe)
    thread.start()
    thread.join()
    return not taken[0]


def test_checkpoints_and_weight_syncs_wait_for_the_learner_between_two_updates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``save()``/``restore()`` outside Tune and the evaluation workers' sync read and write
    the learner's weights and optimizer state: each must hold the learner thread's lock (the
    learner is idle here, so the lock is held only by the code under test)."""
    algo = _cartpole(IMPALAConfig()).build()
    lock = algo._learner_thread.lock
    seen: dict[str, list[bool]] = {}

    def recording(name: str, func: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            seen.setdefault(name, []).append(_held(lock))
            return func(*args, **kwargs)

        return wrapper

    files = runtime.training.checkpoint_files
    monkeypatch.setattr(files, "write_checkpoint", recording("save", files.write_checkpoint))
    monkeypatch.setattr(files, "read_state", recording("restore", files.read_state))
    monkeypatch.setattr(WorkerSet, "sync_weights", recording("sync", WorkerSet.sync_weights))
    try:
        path = algo.save(str(tmp_path))
        algo.restore(path)
        algo.evaluate()  # a local evaluation worker, synced from the driver's
    finally:
        algo.stop()
    assert seen == {"save": [True], "restore": [True], "sync": [True, True]}


# ------------------------------------------------------------------ Tune


def test_tune_runs_a_two_trial_impala_lr_grid(tmp_path: Path) -> None:
    config = _cartpole(IMPALAConfig()).training(lr=sweep.grid_search([1e-3, 5e-4]))
    tuner = tune.Tuner(
        "IMPALA",
        param_space=config.to_dict(),
        run_config=tune.RunConfig(
            storage_path=str(tmp_path),
            stop={"training_iteration": 2},
            checkpoint_config=tune.CheckpointConfig(checkpoint_at_end=True),
            verbose=0,
        ),
    )
    grid = tuner.fit()
    assert len(grid) == 2 and grid.errors == []
    trials = [grid[index] for index in range(len(grid))]
    assert sorted((t.config or {})["lr"] for t in trials) == [5e-4, 1e-3]
    for trial in trials:
        metrics = trial.metrics or {}
        assert metrics["training_iteration"] == 2
        assert metrics["timesteps_total"] >= 160
        assert "learner_queue" in metrics["info"]
        assert trial.checkpoint is not None
    # a trial's checkpoint (Tune's save_checkpoint) restores as the algorithm it saved
    checkpoint = trials[0].checkpoint
    assert checkpoint is not None
    restored = Algorithm.from_checkpoint(checkpoint.path)
    try:
        assert isinstance(restored, IMPALA) and restored.iteration == 2
        assert restored.config["lr"] == (trials[0].config or {})["lr"]
    finally:
        restored.stop()


def test_reset_config_restarts_the_learner_thread_with_the_new_settings() -> None:
    """Tune's actor reuse (``reuse_actors``, PBT): the old learner thread stops, a new one
    runs the new config's queue settings."""
    config = _cartpole(IMPALAConfig())
    algo = config.build()
    try:
        algo.train()
        old = algo._learner_thread
        assert algo.reset_config(config.copy().training(**QUEUE_SETTINGS))
        assert not old.is_alive() and algo._learner_thread is not old
        assert _queue_settings(algo) == QUEUE_SETTINGS
        result = algo.train()
    finally:
        algo.stop()
    assert result["training_iteration"] == 1 and result["timesteps_total"] >= 80
