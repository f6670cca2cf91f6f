"""Algorithm on the embedded default: building, results, acting, checkpoints, callbacks,
curriculum. Ray is never started here."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from rlconf import ConfigError, PGConfig, PPOConfig
from runtime import PG, PPO, Algorithm
from runtime.training.checkpoint_files import CheckpointError
from runtime.training.checkpoint_manifest import write_manifest
from tests.envs import CurriculumEnv, RecordingCallbacks, next_level
from tests.user_objects import mapping


def _ppo_config() -> PPOConfig:
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .rollouts(num_workers=0, num_envs_per_worker=2, rollout_fragment_length=50)
        .training(
            train_batch_size=200,
            sgd_minibatch_size=50,
            num_sgd_iter=2,
            model={"fcnet_hiddens": [16]},
        )
        .debugging(seed=1)
    )


@pytest.fixture(scope="module")
def trained() -> Any:
    algo = _ppo_config().build()
    results = [algo.train() for _ in range(2)]
    yield algo, results
    algo.stop()


def test_build_returns_the_algorithm_and_leaves_the_config_editable() -> None:
    config = _ppo_config()
    algo = config.build()
    try:
        assert isinstance(algo, PPO)
        assert algo.config.is_frozen and not config.is_frozen
        config.training(lr=0.1)  # still editable
        assert algo.config["lr"] != 0.1
    finally:
        algo.stop()


def test_algorithm_from_a_dict_and_an_env_name() -> None:
    algo = PPO(
        config={
            "num_workers": 0,
            "lr": 1e-3,
            "train_batch_size": 64,
            "sgd_minibatch_size": 32,
            "num_sgd_iter": 1,
            "rollout_fragment_length": 32,
        },
        env="CartPole-v1",
    )
    try:
        assert algo.config["lr"] == 1e-3 and algo.config["env"] == "CartPole-v1"
        assert algo.train()["timesteps_total"] >= 64
    finally:
        algo.stop()


def test_bad_dicts_and_wrong_config_classes_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="num_wokers"):
        PPO(config={"num_wokers": 0}, env="CartPole-v1")
    with pytest.raises(ConfigError, match="needs a PPOConfig"):
        PPO(config=PGConfig())
    from rlconf import AlgorithmConfig

    with pytest.raises(ConfigError, match="no algorithm to build"):
        AlgorithmConfig().build()


def test_embedded_default_never_starts_ray(trained: Any) -> None:
    import ray

    assert not ray.is_initialized()


def test_result_has_the_reference_keys(trained: Any) -> None:
    _, results = trained
    result = results[-1]
    for key in (
        "episode_reward_mean",
        "episode_reward_min",
        "episode_reward_max",
        "episode_len_mean",
        "episodes_this_iter",
        "episodes_total",
        "timesteps_total",
        "training_iteration",
        "time_this_iter_s",
        "custom_metrics",
        "num_healthy_workers",
        "sampler_perf",
        "info",
    ):
        assert key in result, key
    assert result["training_iteration"] == 2
    assert result["timesteps_total"] == 400
    assert result["num_healthy_workers"] == 0
    stats = result["info"]["learner"]["default_policy"]["learner_stats"]
    for key in ("policy_loss", "vf_loss", "entropy", "kl", "cur_lr", "total_loss"):
        assert np.isfinite(stats[key]), key
    assert "mean_env_wait_ms" in result["sampler_perf"]
    assert result["episodes_total"] == sum(r["episodes_this_iter"] for r in results)


def test_smoothing_window_and_min_sample_timesteps() -> None:
    config = _ppo_config().reporting(
        metrics_num_episodes_for_smoothing=3, min_sample_timesteps_per_reporting=500
    )
    algo = config.build()
    try:
        result = algo.train()
        assert result["timesteps_this_iter"] >= 500
        assert len(result["hist_stats"]["episode_reward"]) == max(3, result["episodes_this_iter"])
    finally:
        algo.stop()


def test_compute_actions_apply_the_preprocessor(trained: Any) -> None:
    algo, _ = trained
    obs = np.array([0.01, 0.0, 0.02, 0.0], np.float32)
    action = algo.compute_single_action(obs, explore=False)
    assert action in (0, 1)
    assert algo.compute_single_action(obs, explore=False) == action
    action2, _, extra = algo.compute_single_action(obs, explore=False, full_fetch=True)
    assert action2 == action and "vf_preds" in extra
    actions = algo.compute_actions({"a": obs, "b": obs}, explore=False)
    assert actions == {"a": action, "b": action}


def test_weights_round_trip_through_the_algorithm(trained: Any) -> None:
    algo, _ = trained
    weights = algo.get_weights()
    assert set(weights) == {"default_policy"}
    algo.set_weights(weights)
    policy = algo.get_policy()
    for name, value in policy.get_weights().items():
        np.testing.assert_array_equal(value, weights["default_policy"][name])


def test_checkpoint_restores_weights_optimizer_counters_and_config(
    trained: Any, tmp_path: Path
) -> None:
    algo, _ = trained
    path = algo.save(str(tmp_path))
    assert Path(path).name == "checkpoint_000002"
    files = sorted(str(p.relative_to(path)) for p in Path(path).rglob("*") if p.is_file())
    assert files == [
        "algorithm_state.json",
        "manifest.json",
        "policies/default_policy/learner/optimizers/default.pt",
        "policies/default_policy/module.pt",
    ]
    state = json.loads((Path(path) / "algorithm_state.json").read_text())
    assert state["iteration"] == 2
    restored = Algorithm.from_checkpoint(path)
    try:
        assert isinstance(restored, PPO)
        assert restored.config == algo.config
        assert restored.iteration == 2
        for name, value in restored.get_policy().get_weights().items():
            np.testing.assert_array_equal(value, algo.get_policy().get_weights()[name])
        opt_a = algo.get_policy().optimizer.state_dict()["state"]
        opt_b = restored.get_policy().optimizer.state_dict()["state"]
        assert torch.equal(opt_a[0]["exp_avg"], opt_b[0]["exp_avg"])
        kl = [vars(a.get_policy().learner)["kl_coeff"] for a in (restored, algo)]
        assert kl[0] == kl[1]
        result = restored.train()
        assert result["training_iteration"] == 3
        assert result["timesteps_total"] == 600
    finally:
        restored.stop()


def test_a_crash_while_saving_keeps_the_earlier_checkpoint(
    trained: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    algo, _ = trained
    first = algo.save(str(tmp_path))
    before = {p: p.read_bytes() for p in Path(first).rglob("*") if p.is_file()}

    def broken_save(*args: Any, **kwargs: Any) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(torch, "save", broken_save)
    with pytest.raises(CheckpointError, match="disk full"):
        algo.save(str(tmp_path))  # same iteration: would replace the first one
    after = {p: p.read_bytes() for p in Path(first).rglob("*") if p.is_file()}
    assert after == before
    assert sorted(os.listdir(tmp_path)) == ["checkpoint_000002"]  # no half-written folder


def test_loading_refuses_pickled_objects(trained: Any, tmp_path: Path) -> None:
    algo, _ = trained
    path = Path(algo.save(str(tmp_path)))

    class Evil:
        def __reduce__(self) -> Any:
            return (os.system, ("echo pwned",))

    import pickle

    (path / "policies/default_policy/module.pt").write_bytes(pickle.dumps({"x": Evil()}))
    with pytest.raises(CheckpointError, match=r"module\.pt has"):
        Algorithm.from_checkpoint(path)  # the manifest tells the file changed
    write_manifest(path)  # one that also rewrites the manifest meets torch's weights_only
    with pytest.raises(Exception, match=r"(?i)weights_only|unpickl|Unsupported"):
        Algorithm.from_checkpoint(path)


def test_every_algorithm_callback_runs_and_custom_metrics_are_aggregated(tmp_path: Path) -> None:
    RecordingCallbacks.calls = {}
    algo = _ppo_config().callbacks(RecordingCallbacks).build()
    try:
        result = algo.train()
        assert result["callback_ok"] is True
        learner = result["info"]["learner"]["default_policy"]
        assert learner["seen_by_callback"] == 1.0
        metrics = result["custom_metrics"]
        assert metrics["double_length_mean"] == pytest.approx(2 * result["episode_len_mean"])
        assert {"double_length_min", "double_length_max"} <= set(metrics)
        path = algo.save(str(tmp_path))
        algo.restore(path)
        for hook in (
            "on_algorithm_init",
            "on_environment_created",
            "on_episode_created",
            "on_episode_start",
            "on_episode_step",
            "on_episode_end",
            "on_postprocess_trajectory",
            "on_sample_end",
            "on_learn_on_batch",
            "on_train_result",
            "on_checkpoint_loaded",
        ):
            assert RecordingCallbacks.calls.get(hook, 0) > 0, hook
    finally:
        algo.stop()


def test_make_multi_callbacks_runs_each_in_order() -> None:
    from runtime import DefaultCallbacks, MetricsLogger, make_multi_callbacks

    order: list[str] = []

    class A(DefaultCallbacks):
        def on_train_result(self, *, result: dict[str, Any], **kwargs: Any) -> None:
            order.append("A")

    class B(DefaultCallbacks):
        def on_train_result(self, *, result: dict[str, Any], **kwargs: Any) -> None:
            order.append("B")

    both = make_multi_callbacks([A, B])()
    both.on_train_result(algorithm=None, result={}, metrics_logger=MetricsLogger())
    assert order == ["A", "B"]
    with pytest.raises(ValueError, match="not a subclass of DefaultCallbacks"):
        make_multi_callbacks([dict])  # type: ignore[list-item]


def test_env_task_fn_moves_the_curriculum() -> None:
    algo = (
        PGConfig()
        .environment(CurriculumEnv, env_config={"max_steps": 5}, env_task_fn=next_level)
        .rollouts(num_workers=0, rollout_fragment_length=10)
        .training(train_batch_size=10, model={"fcnet_hiddens": [4]})
        .build()
    )
    try:
        levels = []
        for _ in range(4):
            result = algo.train()
            levels.append(algo.workers.local_worker().foreach_env(lambda e: e.get_task())[0])
        assert levels == [2, 3, 3, 3]
        assert result["episode_reward_max"] == 15.0  # 5 steps at level 3
    finally:
        algo.stop()


def test_same_seed_same_run_bit_for_bit() -> None:
    def run() -> dict[str, Any]:
        algo = _ppo_config().build()
        try:
            algo.train()
            algo.train()
            weights: dict[str, Any] = algo.get_policy().get_weights()
            return weights
        finally:
            algo.stop()

    first, second = run(), run()
    for name in first:
        np.testing.assert_array_equal(first[name], second[name])


def test_pg_trains_on_the_embedded_default() -> None:
    algo = PG(
        config=PGConfig()
        .environment("CartPole-v1")
        .rollouts(rollout_fragment_length=50)
        .training(train_batch_size=100)
    )
    try:
        result = algo.train()
        assert result["timesteps_total"] >= 100
        assert "policy_loss" in result["info"]["learner"]["default_policy"]["learner_stats"]
    finally:
        algo.stop()


def test_settings_the_runtime_cannot_carry_out_are_refused_at_build() -> None:
    config = (
        _ppo_config()
        .rollouts(sample_async=True)
        .multi_agent(policies={"p0", "p1"}, policy_mapping_fn=mapping, replay_mode="lockstep")
    )
    with pytest.raises(ConfigError) as caught:
        config.build()
    # one error naming every refused setting; policies and their mapping are carried out
    assert {issue.field for issue in caught.value.issues} == {
        "sample_async",
        "multiagent.replay_mode",
    }
    message = str(caught.value)
    assert "sample_async=True" in message and "replay_mode='lockstep'" in message


def test_a_checkpoint_of_the_earlier_format_is_refused_with_the_reason(tmp_path: Path) -> None:
    from runtime.training.checkpoint_files import CheckpointError

    old = tmp_path / "checkpoint_000001"
    old.mkdir()
    state = {"format": "rlconf-checkpoint/1", "config": PPOConfig().to_json()}
    (old / "algorithm_state.json").write_text(json.dumps(state))
    with pytest.raises(CheckpointError, match=r"older rlconf.*cannot restore it"):
        Algorithm.from_checkpoint(old)
