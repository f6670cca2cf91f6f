"""RLlib's new API stack result layout beside the 2.x keys: ``env_runners/...``,
``learners/<module id>/...``, ``evaluation/env_runners/...`` and the ``*_lifetime`` counters in
the results of every algorithm family (on-policy single- and multi-agent, off-policy, async,
offline), and ``rlconf.metrics`` naming them. Stop criteria and the other readers of result
keys: ``tests/test_new_stack_result_keys.py``."""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

import pytest

import rlconf.metrics as m
from rlconf import BCConfig, DQNConfig, IMPALAConfig, PPOConfig
from rlconf.result_keys import describe
from runtime import make_multi_agent
from runtime.env.episode import EpisodeMetrics
from runtime.results.new_stack_layout import episode_results, module_stats
from runtime.results.result_logger import flatten
from tests import child_process
from tests.test_marwil import write_expert_episodes

TINY_PPO: dict[str, Any] = {
    "num_workers": 0,
    "rollout_fragment_length": 64,
    "train_batch_size": 64,
    "sgd_minibatch_size": 32,
    "num_sgd_iter": 1,
    "model": {"fcnet_hiddens": [8]},
    "seed": 0,
}


def _ppo(logdir: Path) -> PPOConfig:
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .update_from_dict(TINY_PPO)
        .debugging(logger_config={"logdir": str(logdir)})
    )


def _train(config: Any, iterations: int) -> list[dict[str, Any]]:
    algo = config.build()
    try:
        return [algo.train() for _ in range(iterations)]
    finally:
        algo.stop()


@pytest.fixture(scope="module")
def ppo_results(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    config = _ppo(tmp_path_factory.mktemp("ppo")).evaluation(
        evaluation_interval=1, evaluation_duration=2
    )
    return _train(config, 2)


def test_a_result_has_the_new_stack_layout_beside_the_2x_keys(
    ppo_results: list[dict[str, Any]],
) -> None:
    first, second = ppo_results
    runners = second[m.ENV_RUNNER_RESULTS]
    lengths = second["hist_stats"]["episode_lengths"]
    assert runners[m.EPISODE_RETURN_MEAN] == second["episode_reward_mean"]
    assert runners[m.EPISODE_RETURN_MIN] == second["episode_reward_min"]
    assert runners[m.EPISODE_RETURN_MAX] == second["episode_reward_max"]
    assert runners[m.EPISODE_LEN_MEAN] == second["episode_len_mean"]
    assert (runners[m.EPISODE_LEN_MIN], runners[m.EPISODE_LEN_MAX]) == (min(lengths), max(lengths))
    assert runners[m.EPISODE_AGENT_RETURN_MEAN] == {"default_agent": second["episode_reward_mean"]}
    assert runners[m.EPISODE_MODULE_RETURN_MEAN] == {
        "default_policy": second["episode_reward_mean"]
    }
    assert runners[m.NUM_EPISODES] == second["episodes_this_iter"]
    assert (
        runners[m.NUM_EPISODES_LIFETIME]
        == second["episodes_total"]
        == second[m.NUM_EPISODES_LIFETIME]
        == first["episodes_this_iter"] + second["episodes_this_iter"]
    )
    # this iteration's counts, and the lifetime ones
    assert runners[m.NUM_ENV_STEPS_SAMPLED] == runners[m.NUM_AGENT_STEPS_SAMPLED] == 64
    assert runners[m.NUM_ENV_STEPS_SAMPLED_LIFETIME] == second[m.NUM_ENV_STEPS_SAMPLED_LIFETIME]
    assert second[m.NUM_ENV_STEPS_SAMPLED_LIFETIME] == second["num_env_steps_sampled"] == 128
    assert runners[m.NUM_AGENT_STEPS_SAMPLED_LIFETIME] == 128
    assert second[m.NUM_AGENT_STEPS_SAMPLED_LIFETIME] == 128
    assert runners[m.NUM_MODULE_STEPS_SAMPLED] == {"default_policy": 64}
    assert runners[m.NUM_MODULE_STEPS_SAMPLED_LIFETIME] == {"default_policy": 128}

    info = second["info"]["learner"]["default_policy"]
    stats = info["learner_stats"]
    block = second[m.LEARNER_RESULTS]["default_policy"]
    for name in ("total_loss", "policy_loss", "vf_loss", "entropy", "vf_explained_var"):
        assert block[name] == stats[name]
    assert block["mean_kl_loss"] == stats["kl"]
    assert block["curr_kl_coeff"] == stats["kl_coeff"]
    assert block["curr_entropy_coeff"] == stats["entropy_coeff"]
    assert block["default_optimizer_learning_rate"] == stats["cur_lr"]
    assert block[m.NUM_GRAD_UPDATES_LIFETIME] == info["num_grad_updates"]
    assert (block[m.NUM_MODULE_STEPS_TRAINED], block[m.NUM_MODULE_STEPS_TRAINED_LIFETIME]) == (
        64,
        128,
    )
    assert second[m.LEARNER_RESULTS][m.ALL_MODULES] == {
        m.NUM_ENV_STEPS_TRAINED: 64,
        m.NUM_ENV_STEPS_TRAINED_LIFETIME: 128,
        m.NUM_MODULE_STEPS_TRAINED: 64,
        m.NUM_MODULE_STEPS_TRAINED_LIFETIME: 128,
    }
    assert second[m.NUM_ENV_STEPS_TRAINED_LIFETIME] == second["num_env_steps_trained"] == 128
    assert 0 < second[m.TIMERS][m.TRAINING_ITERATION_TIMER] <= second["time_this_iter_s"]

    evaluation = second[m.EVALUATION_RESULTS]
    eval_runners = evaluation[m.ENV_RUNNER_RESULTS]
    assert eval_runners[m.EPISODE_RETURN_MEAN] == evaluation["episode_reward_mean"]
    assert eval_runners[m.NUM_EPISODES] == evaluation["episodes_this_iter"] == 2
    assert eval_runners[m.NUM_ENV_STEPS_SAMPLED] == evaluation["timesteps_this_iter"]
    assert set(eval_runners[m.EPISODE_MODULE_RETURN_MEAN]) == {"default_policy"}
    # the 2.x layout is as it was
    assert second["sampler_results"]["episode_reward_mean"] == second["episode_reward_mean"]
    assert m.ENV_RUNNER_RESULTS not in second["sampler_results"]


def test_every_metric_constant_has_rllibs_value_and_is_a_key_of_a_real_result(
    ppo_results: list[dict[str, Any]],
) -> None:
    rllib = {
        "ENV_RUNNER_RESULTS": "env_runners",
        "EVALUATION_RESULTS": "evaluation",
        "LEARNER_RESULTS": "learners",
        "ALL_MODULES": "__all_modules__",
        "TIMERS": "timers",
        "EPISODE_RETURN_MEAN": "episode_return_mean",
        "EPISODE_LEN_MEAN": "episode_len_mean",
        "EPISODE_AGENT_RETURN_MEAN": "agent_episode_returns_mean",
        "EPISODE_MODULE_RETURN_MEAN": "module_episode_returns_mean",
        "NUM_ENV_STEPS_SAMPLED_LIFETIME": "num_env_steps_sampled_lifetime",
        "NUM_ENV_STEPS_TRAINED_LIFETIME": "num_env_steps_trained_lifetime",
        "NUM_EPISODES_LIFETIME": "num_episodes_lifetime",
        "NUM_MODULE_STEPS_TRAINED": "num_module_steps_trained",
    }
    assert {name: getattr(m, name) for name in rllib} == rllib
    parts = {part for key, _ in flatten(ppo_results[-1]) for part in key.split("/")}
    missing = [name for name in m.__all__ if getattr(m, name) not in parts]
    assert missing == []
    for key, _ in flatten(ppo_results[-1]):
        if key.split("/")[0] in (m.ENV_RUNNER_RESULTS, m.LEARNER_RESULTS, m.EVALUATION_RESULTS):
            assert describe(key) is not None, key
    imported = child_process.run(
        [
            sys.executable,
            "-c",
            "import sys, rlconf.metrics; print('torch' in sys.modules, 'ray' in sys.modules)",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert imported.stdout.split() == ["False", "False"]


def test_the_counts_of_an_iteration_start_again_after_a_restore(tmp_path: Path) -> None:
    algo = _ppo(tmp_path / "first").build()
    try:
        algo.train()
        checkpoint = algo.save(str(tmp_path / "checkpoints"))
    finally:
        algo.stop()
    restored = _ppo(tmp_path / "second").build()
    try:
        restored.restore(checkpoint)
        result = restored.train()
    finally:
        restored.stop()
    runners = result[m.ENV_RUNNER_RESULTS]
    assert (runners[m.NUM_ENV_STEPS_SAMPLED], runners[m.NUM_ENV_STEPS_SAMPLED_LIFETIME]) == (
        64,
        128,
    )
    assert runners[m.NUM_MODULE_STEPS_SAMPLED_LIFETIME] == {"default_policy": 128}
    assert result[m.LEARNER_RESULTS][m.ALL_MODULES][m.NUM_MODULE_STEPS_TRAINED] == 64


def _map_by_index(agent_id: Any, *args: Any, **kwargs: Any) -> str:
    return f"p{agent_id}"


def test_multi_agent_results_key_returns_and_counts_by_agent_and_module(tmp_path: Path) -> None:
    config = (
        _ppo(tmp_path)
        .environment(make_multi_agent("CartPole-v1"), env_config={"num_agents": 2})
        .multi_agent(policies={"p0", "p1"}, policy_mapping_fn=_map_by_index)
    )
    (result,) = _train(config, 1)
    runners = result[m.ENV_RUNNER_RESULTS]
    assert set(runners[m.EPISODE_AGENT_RETURN_MEAN]) == {"0", "1"}
    # one agent per module: the module's return is its agent's
    assert runners[m.EPISODE_MODULE_RETURN_MEAN] == pytest.approx(result["policy_reward_mean"])
    sampled = runners[m.NUM_MODULE_STEPS_SAMPLED]
    assert set(sampled) == {"p0", "p1"}
    assert sum(sampled.values()) == runners[m.NUM_AGENT_STEPS_SAMPLED]
    assert runners[m.NUM_AGENT_STEPS_SAMPLED] == result["num_agent_steps_sampled"]
    learners = result[m.LEARNER_RESULTS]
    assert set(learners) == {"p0", "p1", m.ALL_MODULES}
    assert (
        learners["p0"]["total_loss"]
        == result["info"]["learner"]["p0"]["learner_stats"]["total_loss"]
    )
    assert learners[m.ALL_MODULES][m.NUM_MODULE_STEPS_TRAINED] == sum(
        learners[p][m.NUM_MODULE_STEPS_TRAINED] for p in ("p0", "p1")
    )


def test_a_modules_return_sums_the_agents_it_acted_for_in_an_episode() -> None:
    episodes = [
        EpisodeMetrics(5, 3.0, agent_rewards={("a", "shared"): 1.0, ("b", "shared"): 2.0}),
        EpisodeMetrics(5, 5.0, agent_rewards={("a", "shared"): 3.0, ("c", "solo"): 2.0}),
    ]
    results = episode_results(episodes)
    assert results[m.EPISODE_MODULE_RETURN_MEAN] == {"shared": 3.0, "solo": 2.0}
    assert results[m.EPISODE_AGENT_RETURN_MEAN] == {"a": 2.0, "b": 2.0, "c": 2.0}
    assert results[m.EPISODE_RETURN_MEAN] == 4.0
    empty = episode_results([])
    assert math.isnan(empty[m.EPISODE_RETURN_MEAN]) and math.isnan(empty[m.EPISODE_LEN_MAX])
    assert empty[m.EPISODE_AGENT_RETURN_MEAN] == {} == empty[m.EPISODE_MODULE_RETURN_MEAN]


def test_learner_statistics_take_the_new_stack_names_where_rllib_has_them() -> None:
    sac = module_stats(
        {"learner_stats": {"actor_loss": 1.0, "critic_loss": 2.0, "cur_lr": 0.1, "mean_q": 3.0}}
    )
    # several optimizers: cur_lr is the actor's, no default optimizer's
    assert sac == {"policy_loss": 1.0, "qf_loss": 2.0, "cur_lr": 0.1, "qf_mean": 3.0}
    both = module_stats({"learner_stats": {"kl": 1.0, "mean_kl_loss": 2.0}, "num_grad_updates": 4})
    assert both == {"kl": 1.0, "mean_kl_loss": 2.0, m.NUM_GRAD_UPDATES_LIFETIME: 4}


def test_off_policy_async_and_offline_results_have_the_layout(tmp_path: Path) -> None:
    dqn = (
        DQNConfig()
        .environment("CartPole-v1")
        .rollouts(num_workers=0)
        .training(train_batch_size=32, num_steps_sampled_before_learning_starts=0)
        .reporting(min_sample_timesteps_per_iteration=100)
        .debugging(seed=0, logger_config={"logdir": str(tmp_path / "dqn")})
    )
    (result,) = _train(dqn, 1)
    block = result[m.LEARNER_RESULTS]["default_policy"]
    stats = result["info"]["learner"]["default_policy"]["learner_stats"]
    assert (block["qf_mean"], block["td_error_mean"]) == (stats["mean_q"], stats["mean_td_error"])
    assert block["default_optimizer_learning_rate"] == stats["cur_lr"]
    runners = result[m.ENV_RUNNER_RESULTS]
    assert runners[m.NUM_ENV_STEPS_SAMPLED] == result["timesteps_this_iter"] >= 100
    trained = result[m.LEARNER_RESULTS][m.ALL_MODULES][m.NUM_ENV_STEPS_TRAINED_LIFETIME]
    assert trained == result["num_env_steps_trained"] > 0

    impala = (
        IMPALAConfig()
        .environment("CartPole-v1")
        .rollouts(num_workers=0, rollout_fragment_length=20)
        .training(train_batch_size=40)
        .reporting(min_time_s_per_iteration=0, min_sample_timesteps_per_iteration=80)
        .debugging(seed=0, logger_config={"logdir": str(tmp_path / "impala")})
    )
    first, second = _train(impala, 2)
    assert second[m.ENV_RUNNER_RESULTS][m.NUM_ENV_STEPS_SAMPLED] == second["timesteps_this_iter"]
    assert second[m.NUM_ENV_STEPS_SAMPLED_LIFETIME] == second["num_env_steps_sampled"]
    all_modules = second[m.LEARNER_RESULTS][m.ALL_MODULES]
    assert all_modules[m.NUM_ENV_STEPS_TRAINED_LIFETIME] == second["num_env_steps_trained"]
    assert all_modules[m.NUM_ENV_STEPS_TRAINED] == (
        second["num_env_steps_trained"] - first["num_env_steps_trained"]
    )

    write_expert_episodes(tmp_path / "expert", 2)
    bc = (
        BCConfig()
        .environment("CartPole-v1")
        .rollouts(rollout_fragment_length=32)
        .offline_data(input_=str(tmp_path / "expert"))
        .training(train_batch_size=32)
        .debugging(seed=0, logger_config={"logdir": str(tmp_path / "bc")})
    )
    (offline,) = _train(bc, 1)
    runners = offline[m.ENV_RUNNER_RESULTS]
    # nothing sampled from an env: no episodes, as the 2.x keys say
    assert math.isnan(runners[m.EPISODE_RETURN_MEAN]) and runners[m.NUM_EPISODES] == 0
    assert runners[m.EPISODE_AGENT_RETURN_MEAN] == {}
    assert runners[m.NUM_ENV_STEPS_SAMPLED] == offline["timesteps_this_iter"] > 0
    assert "total_loss" in offline[m.LEARNER_RESULTS]["default_policy"]
