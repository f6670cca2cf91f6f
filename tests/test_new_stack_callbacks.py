"""Callbacks of RLlib's new API stack beside the 2.x ones: hooks get the new keywords
(``env_runner``, ``metrics_logger``, ``env``, ``rl_module``, ...), the episode answers the new
episode API, ``metrics_logger.log_value`` lands in the results (``env_runners/``, the top level,
``evaluation/env_runners/``), and ``config.callbacks()`` takes functions per hook.

Local workers for the hooks and episodes; the results with the embedded default and one remote
worker, in one Ray session for the module (slow tier)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest

from rlconf import ConfigError, PolicySpec, PPOConfig
from runtime import DefaultCallbacks, Episode, MetricsLogger, RLlibCallback, RolloutWorker
from runtime.callbacks_setup import make_callbacks
from runtime.hook_calls import call_hook
from tests.envs import ConstantRewardEnv, CorridorEnv
from tests.multi_agent_envs import SCRIPT, SCRIPT_LENGTH, ScriptedEnv, map_scripted, obs_of
from tests.multi_agent_envs import scripted_reward as reward_of
from tests.ray_session import local_ray

#: What ``ConstantRewardEnv`` gives with these settings: episodes of 10 steps of reward 2.
ENV_CONFIG = {"reward": 2.0, "max_steps": 10}
EPISODE_RETURN = 20.0
WORKER_HOOKS = (
    "on_environment_created",
    "on_episode_created",
    "on_episode_start",
    "on_episode_step",
    "on_episode_end",
    "on_sample_end",
)


def _check_worker_keywords(hook: str, kwargs: dict[str, Any]) -> None:
    """The keywords of a rollout worker's hook, both dialects, and what they are."""
    runner = kwargs["env_runner"]
    assert isinstance(runner, RolloutWorker)
    assert kwargs["worker"] is runner
    assert kwargs["metrics_logger"] is runner.metrics
    assert isinstance(kwargs["metrics_logger"], MetricsLogger)
    if hook == "on_environment_created":
        assert kwargs["env"] is kwargs["sub_environment"]
        assert isinstance(kwargs["env"], ConstantRewardEnv)
        return
    if hook == "on_sample_end":
        assert len(kwargs["samples"]) > 0
        return
    assert isinstance(kwargs["episode"], Episode)
    assert kwargs["env"].envs[kwargs["env_index"]] is runner.envs[kwargs["env_index"]]
    assert kwargs["base_env"] is kwargs["env"]
    assert kwargs["policies"] is runner.policy_map
    assert kwargs["rl_module"] is runner.policy_map["default_policy"].module


class LoggingCallbacks(RLlibCallback):
    """Checks every hook's keywords and logs into the results (``ConstantRewardEnv``)."""

    def _worker_hook(self, hook: str, kwargs: dict[str, Any]) -> MetricsLogger:
        _check_worker_keywords(hook, kwargs)
        logger: MetricsLogger = kwargs["metrics_logger"]
        logger.log_value(("hooks", hook), 1, reduce="sum")
        return logger

    def on_environment_created(self, **kwargs: Any) -> None:
        self._worker_hook("on_environment_created", kwargs)

    def on_episode_created(self, **kwargs: Any) -> None:
        self._worker_hook("on_episode_created", kwargs)

    def on_episode_start(self, **kwargs: Any) -> None:
        self._worker_hook("on_episode_start", kwargs)

    def on_episode_step(self, **kwargs: Any) -> None:
        logger = self._worker_hook("on_episode_step", kwargs)
        logger.log_value("steps", 1, reduce="sum")
        logger.log_value("steps_this_iteration", 1, reduce="sum", clear_on_reduce=True)

    def on_episode_end(self, **kwargs: Any) -> None:
        logger = self._worker_hook("on_episode_end", kwargs)
        episode = kwargs["episode"]
        logger.log_value("return_max", episode.get_return(), reduce="max")
        logger.log_value("return_min", episode.get_return(), reduce="min")
        logger.log_value(("length", "mean"), len(episode), window=100)
        logger.log_value("lengths", len(episode), reduce=None, clear_on_reduce=True)
        assert logger.peek("steps") >= len(episode)

    def on_sample_end(self, **kwargs: Any) -> None:
        self._worker_hook("on_sample_end", kwargs)

    def on_algorithm_init(self, *, algorithm: Any, **kwargs: Any) -> None:
        assert kwargs["metrics_logger"] is algorithm.metrics
        algorithm.metrics.log_value("inits", 1, reduce="sum")

    def on_train_result(self, *, algorithm: Any, result: dict[str, Any], **kwargs: Any) -> None:
        kwargs["metrics_logger"].log_value("my_counter", 1, reduce="sum")

    def on_evaluate_end(self, *, evaluation_metrics: dict[str, Any], **kwargs: Any) -> None:
        kwargs["metrics_logger"].log_value(("evaluations", "count"), 1, reduce="sum")

    def on_checkpoint_loaded(self, **kwargs: Any) -> None:
        kwargs["metrics_logger"].log_value("restores", 1, reduce="sum")


def _constant_reward(workers: int) -> PPOConfig:
    # 4 episodes of 10 steps an iteration, on the driver (0 workers) or on one remote worker
    return (
        PPOConfig()
        .environment(ConstantRewardEnv, env_config=ENV_CONFIG)
        .rollouts(num_workers=workers, rollout_fragment_length=40)
        .resources(num_cpus_per_worker=0.5, num_cpus_for_driver=0)
        .training(train_batch_size=40, sgd_minibatch_size=40, num_sgd_iter=1)
        .training(model={"fcnet_hiddens": [8]})
        .evaluation(evaluation_interval=1, evaluation_duration=2, evaluation_num_workers=workers)
        .debugging(seed=0)
    )


@pytest.fixture(scope="module")
def ray_session() -> Iterator[None]:
    with local_ray():
        yield


@pytest.mark.slow
@pytest.mark.parametrize("workers", [0, 1], ids=["embedded", "remote_worker"])
def test_logged_values_land_in_the_results_with_each_reduce(
    workers: int, ray_session: None, tmp_path: Path
) -> None:
    algo = _constant_reward(workers).callbacks(LoggingCallbacks).build()
    try:
        results = [algo.train() for _ in range(2)]
        checkpoint = algo.save(str(tmp_path))
        algo.restore(checkpoint)
        results.append(algo.train())
    finally:
        algo.stop()
    for iteration, result in enumerate(results, start=1):
        runners = result["env_runners"]
        assert runners["episode_return_mean"] == EPISODE_RETURN  # the layout's own keys stay
        assert runners["steps"] == result["num_env_steps_sampled_lifetime"] == 40 * iteration
        assert runners["steps_this_iteration"] == runners["num_env_steps_sampled"] == 40
        assert runners["return_max"] == runners["return_min"] == EPISODE_RETURN
        assert runners["length"] == {"mean": 10.0}
        assert runners["lengths"] == [10] * runners["num_episodes"] == [10] * 4
        assert set(runners["hooks"]) == set(WORKER_HOOKS)
        assert runners["hooks"]["on_episode_step"] == 40 * iteration
        # the algorithm's hooks: at the top level, on_train_result's in its own result
        assert (result["inits"], result["my_counter"]) == (1, iteration)
        assert result["evaluations"] == {"count": iteration}
        # the evaluation workers' values, under evaluation/env_runners
        evaluated = result["evaluation"]["env_runners"]
        assert evaluated["lengths"] == [10, 10]
        assert evaluated["return_max"] == EPISODE_RETURN
        assert evaluated["hooks"]["on_episode_end"] == 2 * iteration
    assert "restores" not in results[1]
    assert results[2]["restores"] == 1


def _log_return(episode: Any, metrics_logger: MetricsLogger) -> None:
    """A hook function without ``**kwargs``: it gets the keywords it names."""
    metrics_logger.log_value("fn_return", episode.get_return(), reduce="max")


@pytest.mark.slow
def test_functions_per_hook_run_after_the_class_hook_on_a_remote_worker(
    ray_session: None,
) -> None:
    config = (
        _constant_reward(1)
        .evaluation(evaluation_interval=None)
        .callbacks(
            LoggingCallbacks,
            on_episode_end=[
                _log_return,
                lambda episode, metrics_logger, **kw: metrics_logger.log_value(
                    "fn_lengths", len(episode), reduce=None, clear_on_reduce=True
                ),
            ],
            on_train_result=lambda metrics_logger, result: metrics_logger.log_value(
                "fn_counter", 1, reduce="sum"
            ),
        )
    )
    algo = config.build()
    try:
        result = algo.train()
    finally:
        algo.stop()
    runners = result["env_runners"]
    assert runners["fn_return"] == runners["return_max"] == EPISODE_RETURN
    assert runners["fn_lengths"] == runners["lengths"] == [10] * 4
    assert result["my_counter"] == result["fn_counter"] == 1


# ------------------------------------------------------------------ config


def test_callbacks_takes_functions_per_hook_and_lists_of_classes() -> None:
    class A(DefaultCallbacks):
        pass

    def hook(**kwargs: Any) -> None:
        pass

    config = PPOConfig().callbacks(callbacks_class=[A, A], on_episode_end=hook)
    assert config["callbacks"] == [A, A]
    assert config["on_episode_end"] is hook
    # RLlib's config names them callbacks_<hook>
    assert config["callbacks_on_episode_end"] is hook
    from_dict = PPOConfig.from_dict({"callbacks_on_sample_end": [hook, hook]})
    assert from_dict["on_sample_end"] == [hook, hook]
    unknown = r"on_episode_ends: unknown key \(did you mean 'on_episode_end'"
    with pytest.raises(ConfigError, match=unknown):
        PPOConfig().callbacks(on_episode_ends=hook)  # type: ignore[call-arg]
    with pytest.raises(ConfigError, match=r"on_train_result=3 .*allowed: import path"):
        PPOConfig().callbacks(on_train_result=3)  # type: ignore[arg-type]


def test_hooks_get_the_keywords_they_name_and_lists_of_classes_run_in_order() -> None:
    order: list[str] = []

    class Old(DefaultCallbacks):
        # 2.x's keywords, no **kwargs
        def on_train_result(self, *, algorithm: Any, result: dict[str, Any]) -> None:  # type: ignore[override]
            order.append(f"old:{sorted(result)}")

    class New(RLlibCallback):
        def on_train_result(self, *, metrics_logger: Any, **kwargs: Any) -> None:
            order.append(f"new:{type(metrics_logger).__name__}:{sorted(kwargs)}")

    config = PPOConfig().callbacks(
        [Old, New], on_train_result=lambda result, **kw: order.append("function")
    )
    callbacks = make_callbacks(config, "test")
    call_hook(
        callbacks, "on_train_result", algorithm=None, metrics_logger=MetricsLogger(), result={}
    )
    assert order == ["old:[]", "new:MetricsLogger:['algorithm', 'result']", "function"]


# ------------------------------------------------------------------ episodes


class EpisodeRecorder(RLlibCallback):
    """Keeps each ended episode's new-stack view (local workers)."""

    seen: ClassVar[list[dict[str, Any]]] = []

    def on_episode_end(self, *, episode: Any, **kwargs: Any) -> None:
        extra = episode.get_extra_model_outputs()
        EpisodeRecorder.seen.append(
            {
                "len": len(episode),
                "return": episode.get_return(),
                "obs": episode.get_observations(),
                "infos": episode.get_infos(),
                "actions": episode.get_actions(),
                "rewards": episode.get_rewards(),
                "extra": extra,
                "logp": episode.get_extra_model_outputs("action_logp", -1),
                "last_two_actions": episode.get_actions(slice(-2, None)),
                "first_and_last_obs": episode.get_observations([0, -1]),
                "flags": (episode.is_terminated, episode.is_truncated, episode.is_done),
                "steps": (episode.env_steps(), episode.agent_steps(), episode.length),
                "id": (episode.id_, episode.episode_id),
                "custom_data": episode.custom_data is episode.user_data,
                "agents": {a: e.get_observations() for a, e in episode.agent_episodes.items()},
                "modules": {a: episode.module_for(a) for a in episode.agent_ids},
                "at_last_step": episode.get_observations(-1) if episode.is_multi_agent else None,
                "acting_first": episode.get_actions(0) if episode.is_multi_agent else None,
                "own_rewards": episode.get_rewards(agent_ids="d", env_steps=False)
                if episode.is_multi_agent
                else None,
            }
        )


def _ended_episodes(config: PPOConfig, fragments: int) -> list[dict[str, Any]]:
    EpisodeRecorder.seen = []
    algo = config.callbacks(EpisodeRecorder).debugging(seed=0).build()
    try:
        for _ in range(fragments):
            algo.workers.local_worker().sample()
    finally:
        algo.stop()
    assert EpisodeRecorder.seen
    return EpisodeRecorder.seen


def test_a_single_agent_episode_answers_the_new_episode_api() -> None:
    config = (
        PPOConfig()
        .environment(CorridorEnv, env_config={"length": 3, "max_steps": 8})
        .rollouts(num_workers=0, num_envs_per_worker=2, rollout_fragment_length=20)
        .training(train_batch_size=40, sgd_minibatch_size=40, model={"fcnet_hiddens": [8]})
    )
    for seen in _ended_episodes(config, fragments=1):
        n = seen["len"]
        positions = [int(o["pos"]) for o in seen["obs"]]
        assert len(positions) == len(seen["infos"]) == n + 1 and positions[0] == 0
        assert len(seen["actions"]) == len(seen["rewards"]) == n
        for t, action in enumerate(seen["actions"]):
            assert positions[t + 1] == max(0, positions[t] + (1 if int(action) == 1 else -1))
            assert seen["infos"][t + 1] == {"pos": positions[t + 1]}
        terminated = positions[-1] == 3
        assert seen["rewards"] == [-0.01] * (n - 1) + [1.0 if terminated else -0.01]
        assert seen["return"] == pytest.approx(sum(seen["rewards"]))
        assert seen["flags"] == (terminated, not terminated, True)
        assert seen["steps"] == (n, n, n)
        assert int(seen["id"][0]) == seen["id"][1] and seen["custom_data"]
        assert len(seen["extra"]["action_logp"]) == n
        assert seen["logp"] == seen["extra"]["action_logp"][-1]
        assert seen["last_two_actions"] == seen["actions"][-2:]
        assert [int(o["pos"]) for o in seen["first_and_last_obs"]] == [0, positions[-1]]
        assert seen["agents"] == {"agent0": seen["obs"]}


def test_a_multi_agent_episode_answers_the_new_episode_api() -> None:
    config = (
        PPOConfig()
        .environment(ScriptedEnv, env_config={})
        .rollouts(num_workers=0, rollout_fragment_length=SCRIPT_LENGTH)
        .training(train_batch_size=12, sgd_minibatch_size=12, model={"fcnet_hiddens": [8]})
        .multi_agent(
            policies={"p0": PolicySpec(), "p1": PolicySpec()}, policy_mapping_fn=map_scripted
        )
    )
    for seen in _ended_episodes(config, fragments=2):
        assert seen["len"] == SCRIPT_LENGTH
        expected_return = 0.0
        for agent, (join, leave) in SCRIPT.items():
            acts = range(join, min(leave, SCRIPT_LENGTH))
            expected = [obs_of(agent, t).tolist() for t in range(join, acts[-1] + 2)]
            assert np.asarray(seen["obs"][agent]).tolist() == expected
            assert seen["rewards"][agent] == pytest.approx([reward_of(agent, t) for t in acts])
            assert len(seen["actions"][agent]) == len(acts)
            assert np.asarray(seen["agents"][agent]).tolist() == expected
            assert seen["modules"][agent] == map_scripted(agent)
            expected_return += sum(reward_of(agent, t) for t in acts)
        assert seen["return"] == pytest.approx(expected_return)
        # on the env's timeline: the agents with an observation at its last step, and those
        # that acted at its first
        assert {a: o.tolist() for a, o in seen["at_last_step"].items()} == {
            "a": obs_of("a", 6).tolist(),
            "b": obs_of("b", 6).tolist(),
        }
        assert set(seen["acting_first"]) == {"a", "c"}
        assert seen["own_rewards"] == {"d": pytest.approx([reward_of("d", t) for t in (1, 2, 3)])}
        assert seen["flags"] == (True, False, True)
        assert seen["steps"][0] == SCRIPT_LENGTH
        assert seen["steps"][1] == sum(len(a) for a in seen["actions"].values())
