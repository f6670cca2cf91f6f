"""Evaluation in the driver (evaluation_num_workers=0): durations, the evaluation config,
results, custom evaluation functions, callbacks. No Ray is started here."""

from __future__ import annotations

import math
from concurrent.futures import Future
from typing import Any, ClassVar

import numpy as np
import pytest

from rlconf import PPOConfig
from runtime import DefaultCallbacks, WorkerSet
from runtime.algorithm import Algorithm
from tests.envs import ConstantRewardEnv


def _config() -> PPOConfig:
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .rollouts(num_workers=0, num_envs_per_worker=2, rollout_fragment_length=50)
        .training(train_batch_size=100, sgd_minibatch_size=50, num_sgd_iter=1)
        .debugging(seed=1)
    )


def _train(config: PPOConfig, iterations: int) -> tuple[Algorithm, list[dict[str, Any]]]:
    algo = config.build()
    return algo, [algo.train() for _ in range(iterations)]


def test_no_evaluation_workers_unless_evaluation_is_configured() -> None:
    algo = _config().build()
    try:
        assert algo.evaluation_workers is None
        assert "evaluation" not in algo.train()
    finally:
        algo.stop()


@pytest.mark.parametrize("num_envs", [1, 3])
def test_n_episodes_are_exactly_n_episodes(num_envs: int) -> None:
    config = _config().evaluation(
        evaluation_interval=1,
        evaluation_duration=5,
        evaluation_config=PPOConfig.overrides(num_envs_per_worker=num_envs),
    )
    algo, results = _train(config, 2)
    try:
        for result in results:
            evaluation = result["evaluation"]
            assert evaluation["episodes_this_iter"] == 5
            assert len(evaluation["hist_stats"]["episode_reward"]) == 5
            assert evaluation["timesteps_this_iter"] == sum(
                evaluation["hist_stats"]["episode_lengths"]
            )
    finally:
        algo.stop()


def test_timesteps_duration_runs_exactly_that_many_steps() -> None:
    config = _config().evaluation(
        evaluation_interval=1,
        evaluation_duration=333,
        evaluation_duration_unit="timesteps",
        evaluation_config=PPOConfig.overrides(num_envs_per_worker=4),
    )
    algo, results = _train(config, 2)
    try:
        assert [r["evaluation"]["timesteps_this_iter"] for r in results] == [333, 333]
    finally:
        algo.stop()


def test_evaluation_config_overrides_reach_the_evaluation_envs_and_policy() -> None:
    config = (
        PPOConfig()
        .environment(ConstantRewardEnv, env_config={"reward": 1.0, "max_steps": 4})
        .rollouts(num_workers=0, rollout_fragment_length=20)
        .training(train_batch_size=20, sgd_minibatch_size=10, num_sgd_iter=1)
        .evaluation(
            evaluation_interval=1,
            evaluation_duration=3,
            evaluation_config=PPOConfig.overrides(
                env_config={"reward": 5.0, "max_steps": 4}, explore=False
            ),
        )
    )
    algo, (result,) = _train(config, 1)
    try:
        assert result["episode_reward_mean"] == pytest.approx(4.0)
        assert result["evaluation"]["episode_reward_mean"] == pytest.approx(20.0)
        eval_config = algo.evaluation_workers.local_worker().config  # type: ignore[union-attr]
        assert eval_config["in_evaluation"] is True
        assert eval_config["explore"] is False
        assert algo.config["in_evaluation"] is False
        # explore=False: the same observation gives the same action every time
        worker = algo.evaluation_workers.local_worker()  # type: ignore[union-attr]
        obs = np.zeros((3, 2), np.float32)
        actions = worker.get_policy().compute_actions(obs)[0]
        assert np.allclose(actions, actions[0])
    finally:
        algo.stop()


def test_evaluation_runs_every_interval_and_says_which_weights_it_used() -> None:
    config = _config().evaluation(evaluation_interval=2, evaluation_duration=2)
    algo, results = _train(config, 4)
    try:
        assert ["evaluation" in r for r in results] == [False, True, False, True]
        # sequential: evaluation runs after the training step, on its new weights
        assert results[1]["evaluation"]["weights_version"] == 2
        assert results[3]["evaluation"]["weights_version"] == 4
    finally:
        algo.stop()


def test_always_attach_gives_nan_placeholders_then_the_latest_results() -> None:
    config = _config().evaluation(
        evaluation_interval=2, evaluation_duration=2, always_attach_evaluation_results=True
    )
    algo, results = _train(config, 3)
    try:
        assert math.isnan(results[0]["evaluation"]["episode_reward_mean"])
        assert results[1]["evaluation"]["episodes_this_iter"] == 2
        assert results[2]["evaluation"] == results[1]["evaluation"]
    finally:
        algo.stop()


def test_evaluation_workers_get_the_trained_weights_and_filters() -> None:
    config = (
        _config()
        .rollouts(observation_filter="MeanStdFilter")
        .evaluation(evaluation_interval=1, evaluation_duration=1)
    )
    algo, _ = _train(config, 1)
    try:
        evaluation = algo.evaluation_workers.local_worker()  # type: ignore[union-attr]
        trained = algo.workers.local_worker()
        for name, value in trained.get_weights()["default_policy"].items():
            assert np.array_equal(evaluation.get_weights()["default_policy"][name], value)
        mean = trained.get_filter_states()["default_policy"]
        assert evaluation.get_filter_states()["default_policy"] == mean
    finally:
        algo.stop()


def test_evaluate_by_hand_without_evaluation_configured() -> None:
    algo = _config().evaluation(evaluation_duration=3).build()
    try:
        assert algo.evaluate()["evaluation"]["episodes_this_iter"] == 3
        assert isinstance(algo.evaluation_workers, WorkerSet)
        result = algo.evaluate(duration_fn=lambda done: 4 - done)
        assert result["evaluation"]["episodes_this_iter"] == 4
        assert result["evaluation"]["weights_version"] == 0
    finally:
        algo.stop()


class EvaluationCallbacks(DefaultCallbacks):
    calls: ClassVar[list[str]] = []

    def on_evaluate_start(self, *, algorithm: Any, **kwargs: Any) -> None:
        EvaluationCallbacks.calls.append("start")

    def on_evaluate_end(
        self, *, algorithm: Any, evaluation_metrics: dict[str, Any], **kwargs: Any
    ) -> None:
        episodes = evaluation_metrics["evaluation"]["episodes_this_iter"]
        EvaluationCallbacks.calls.append(f"end:{episodes}")


def test_evaluate_callbacks_surround_each_evaluation() -> None:
    EvaluationCallbacks.calls = []
    config = (
        _config()
        .callbacks(EvaluationCallbacks)
        .evaluation(evaluation_interval=1, evaluation_duration=2)
    )
    algo, _ = _train(config, 2)
    algo.stop()
    assert EvaluationCallbacks.calls == ["start", "end:2", "start", "end:2"]


def two_argument_eval(algorithm: Any, eval_workers: WorkerSet) -> dict[str, Any]:
    episodes, _ = eval_workers.local_worker().evaluate(episodes=2)
    return {"my_metric": len(episodes), "num_workers": eval_workers.num_workers}


seen_futures: list[Future[Any]] = []


def three_argument_eval(
    algorithm: Any, eval_workers: WorkerSet, train_future: Future[Any]
) -> dict[str, Any]:
    seen_futures.append(train_future)
    return {"training_done": train_future.done()}


def not_a_dict(algorithm: Any, eval_workers: WorkerSet) -> Any:
    return [1, 2]


def test_custom_eval_function_returns_the_metrics() -> None:
    config = _config().evaluation(evaluation_interval=1, custom_eval_function=two_argument_eval)
    algo, (result,) = _train(config, 1)
    algo.stop()
    assert result["evaluation"]["my_metric"] == 2
    assert result["evaluation"]["num_workers"] == 0
    assert result["evaluation"]["weights_version"] == 1


def test_custom_eval_function_with_three_arguments_gets_the_training_future() -> None:
    seen_futures.clear()
    config = _config().evaluation(evaluation_interval=1, custom_eval_function=three_argument_eval)
    algo, (result,) = _train(config, 1)
    algo.stop()
    # sequential evaluation: the training step is already done when evaluation starts
    assert result["evaluation"]["training_done"] is True
    assert len(seen_futures) == 1 and seen_futures[0].done()


def test_custom_eval_function_must_return_a_dict() -> None:
    config = _config().evaluation(evaluation_interval=1, custom_eval_function=not_a_dict)
    algo = config.build()
    try:
        with pytest.raises(TypeError, match=r"not_a_dict.*returned list.*dict of metrics"):
            algo.train()
    finally:
        algo.stop()
