"""The static description of a training result (rlconf.result_keys) matches what a real
iteration returns, and stop criteria are checked against it and against the results."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from rlconf import ConfigError, PPOConfig
from rlconf.result_keys import describe, known_names
from rlconf.stop_criteria import StopCriteria, stop_issues
from runtime import DefaultCallbacks
from runtime.results.result_logger import flatten

COMMON_KEYS = [
    "episode_reward_mean",
    "episode_reward_min",
    "episode_reward_max",
    "episode_len_mean",
    "episodes_this_iter",
    "episodes_total",
    "timesteps_total",
    "timesteps_this_iter",
    "training_iteration",
    "time_this_iter_s",
    "time_total_s",
    "evaluation/episode_reward_mean",
    "evaluation/episodes_this_iter",
    "info/learner/default_policy/learner_stats/total_loss",
    "info/learner/default_policy/learner_stats/policy_loss",
    "info/learner/default_policy/learner_stats/vf_loss",
    "info/num_env_steps_sampled",
    "sampler_perf/mean_env_wait_ms",
]


class MetricCallbacks(DefaultCallbacks):
    def on_episode_end(self, *, episode: Any, **kwargs: Any) -> None:
        episode.custom_metrics["pole_steps"] = float(episode.length)
        episode.hist_data["pole_steps"] = [float(episode.length)]


def _matches_kind(kind: str, value: Any) -> bool:
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if kind == "list":
        return isinstance(value, list)
    if kind == "text":
        return isinstance(value, str)
    if kind == "flag":
        return isinstance(value, bool)
    return kind == "config"


def _config() -> PPOConfig:
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .rollouts(num_workers=0, rollout_fragment_length=100)
        .training(
            train_batch_size=200,
            sgd_minibatch_size=100,
            num_sgd_iter=1,
            model={"fcnet_hiddens": [8]},
        )
        .evaluation(evaluation_interval=1, evaluation_duration=2)
        .callbacks(MetricCallbacks)
    )


@pytest.fixture(scope="module")
def real_result(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    logdir = str(tmp_path_factory.mktemp("result_keys"))
    algo = _config().debugging(logger_config={"logdir": logdir}).build()
    try:
        yield algo.train()
    finally:
        algo.stop()


def test_every_key_of_a_real_result_is_described(real_result: dict[str, Any]) -> None:
    flat = dict(flatten(real_result))
    undescribed = [key for key in flat if describe(key) is None]
    assert undescribed == []
    wrong_kind = {}
    for key, value in flat.items():
        entry = describe(key)
        assert entry is not None
        if not _matches_kind(entry.kind, value):
            wrong_kind[key] = (entry.kind, type(value).__name__)
    assert wrong_kind == {}
    # the run's own names landed where the patterns say
    assert {"custom_metrics/pole_steps_mean", "evaluation/custom_metrics/pole_steps_max"} <= set(
        flat
    )
    assert "hist_stats/pole_steps" in flat


def test_common_keys_are_in_the_description_and_in_a_real_result(
    real_result: dict[str, Any],
) -> None:
    flat = dict(flatten(real_result))
    names = set(known_names())
    for key in COMMON_KEYS:
        assert key in names, key
        assert key in flat, key


def test_unknown_and_unusable_stop_keys_are_refused_at_start() -> None:
    config = _config().validate()
    stop = {
        "episode_reward_mea": 1,
        "evaluation/episode_reward_mea": 1,
        "hist_stats/episode_reward": 1,
        "done": 1,
        "episode_reward_mean": 1,
        "custom_metrics/anything_mean": 1,
        "info/learner/default_policy/learner_stats/total_loss": 1,
    }
    rendered = [i.render() for i in stop_issues(stop, "stop.", config)]
    assert len(rendered) == 4, rendered
    assert (
        "stop.episode_reward_mea: is not a result key (did you mean 'episode_reward_mean'"
        in (rendered[0])
    )
    assert "did you mean 'evaluation/episode_reward_mean'" in rendered[1]
    assert (
        "stop.hist_stats/episode_reward: is a list of per-episode values, not a number"
        in (rendered[2])
    )
    assert "stop.done: is a true/false flag, not a number" in rendered[3]


def test_evaluation_stop_keys_need_evaluation() -> None:
    config = PPOConfig().environment("CartPole-v1").validate()
    (issue,) = stop_issues({"evaluation/episode_reward_mean": 100}, "--stop.", config)
    assert issue.field == "--stop.evaluation/episode_reward_mean"
    assert "no evaluation runs (evaluation_interval=None)" in issue.problem


class ResultKeyCallbacks(DefaultCallbacks):
    def on_train_result(self, *, result: dict[str, Any], **kwargs: Any) -> None:
        result["my_score"] = 1.0


def _custom_eval(algorithm: Any, eval_workers: Any) -> dict[str, float]:
    return {"score": 1.0}


def test_keys_added_by_callbacks_or_a_custom_evaluation_are_accepted_at_start() -> None:
    stop = {"my_score": 1, "evaluation/score": 1}
    plain = _config().validate()
    assert [i.field for i in stop_issues(stop, "stop.", plain)] == [
        "stop.my_score",
        "stop.evaluation/score",
    ]
    # on_train_result may add any key, nested ones too
    config = _config().callbacks(ResultKeyCallbacks).validate()
    assert stop_issues(stop, "stop.", config) == []
    config = _config().evaluation(custom_eval_function=_custom_eval).validate()
    assert [i.field for i in stop_issues(stop, "stop.", config)] == ["stop.my_score"]


def test_run_dependent_stop_keys_are_confirmed_by_the_first_result_that_can_hold_them(
    real_result: dict[str, Any],
) -> None:
    config = _config().validate()
    present = StopCriteria(
        {
            "custom_metrics/pole_steps_mean": 10_000,
            "evaluation/custom_metrics/pole_steps_mean": 10_000,
            "info/learner/default_policy/learner_stats/total_loss": 10_000,
        },
        config,
        where="rlconf train",
    )
    assert not present.reached(real_result)
    assert StopCriteria({"custom_metrics/pole_steps_min": 1}, config, "x").reached(real_result)

    misspelt = StopCriteria(
        {"custom_metrics/pole_step_mean": 1, "info/learner/default_polcy/learner_stats/kl": 1},
        config,
        where="rlconf train",
    )
    with pytest.raises(ConfigError) as error:
        misspelt.reached(real_result)
    message = str(error.value)
    assert "stop.custom_metrics/pole_step_mean: is not in the result of iteration 1" in message
    assert "did you mean 'custom_metrics/pole_steps_mean'" in message
    assert "stop.info/learner/default_polcy/learner_stats/kl" in message

    # no episode finished yet, no evaluation yet: nothing to decide on
    early = {**real_result, "hist_stats": {"episode_reward": []}}
    del early["evaluation"]
    waiting = StopCriteria(
        {"custom_metrics/other_mean": 1, "evaluation/custom_metrics/other_mean": 1}, config, "x"
    )
    assert not waiting.reached(early)
    with pytest.raises(ConfigError, match="evaluation/custom_metrics/other_mean"):
        waiting.reached(real_result)


def test_stop_keys_added_by_callbacks_are_looked_for_in_the_first_result(
    real_result: dict[str, Any],
) -> None:
    config = _config().callbacks(ResultKeyCallbacks).validate()
    with pytest.raises(ConfigError, match=r"stop\.my_scor: is not in the result"):
        StopCriteria({"my_scor": 1}, config, "x").reached(real_result)
    assert StopCriteria({"my_score": 1}, config, "x").reached({**real_result, "my_score": 2.0})
