"""An on-policy build whose iterations will sample more than twice ``train_batch_size``
(``rollout_fragment_length`` x ``num_envs_per_worker`` x max(1, ``num_workers``)) warns once,
with the numbers and the fix; "auto", ordinary configs, off-policy algorithms and offline input
don't."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from rlconf import A2CConfig, DQNConfig, PGConfig, PPOConfig, SACConfig
from rlconf.algorithm_config import AlgorithmConfig
from runtime.training.sample_size import oversized_sample_note


def _notes(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "times train_batch_size" in r.getMessage()]


def _build_and_train(config: AlgorithmConfig, caplog: pytest.LogCaptureFixture) -> Any:
    with caplog.at_level(logging.WARNING, logger="runtime"):
        algo = config.build()
    try:
        return algo.train()
    finally:
        algo.stop()


def test_the_pendulum_file_habit_warns_once_at_build_with_the_numbers_and_the_fix(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # pendulum-ppo.yaml's sizes with the default fragment of 200, on CartPole to be quick.
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .rollouts(num_workers=0, num_envs_per_worker=20)
        .training(train_batch_size=512, sgd_minibatch_size=512, num_sgd_iter=1)
    )
    result = _build_and_train(config, caplog)
    assert result["num_env_steps_trained"] == 4000  # one iteration: what the note says
    (note,) = _notes(caplog)
    assert note.startswith("PPO: each training iteration samples and trains on at least 4000 ")
    assert "rollout_fragment_length=200 x num_envs_per_worker=20 on the local worker" in note
    assert "7.8 times train_batch_size=512" in note
    assert "rollout_fragment_length='auto' (26 here: 520 env steps per iteration)" in note
    assert "or a smaller fragment" in note

    caplog.clear()
    fixed = config.copy().rollouts(rollout_fragment_length="auto")
    assert _build_and_train(fixed, caplog)["num_env_steps_trained"] == 520
    assert _notes(caplog) == []


@pytest.mark.parametrize(
    "config",
    [
        PPOConfig(),  # 200 x 1 x 2 workers = 400 of 4000
        PGConfig(),
        A2CConfig(),
        PPOConfig().rollouts(num_envs_per_worker=20, rollout_fragment_length="auto"),
        PPOConfig().training(train_batch_size=200).rollouts(num_workers=2),  # exactly 2x
        # Off-policy: minibatches of train_batch_size are replayed, whatever is sampled.
        DQNConfig().rollouts(rollout_fragment_length=1000, num_envs_per_worker=8),
        SACConfig().rollouts(rollout_fragment_length=500, num_envs_per_worker=4),
        # Offline input: the iteration reads the input's batches.
        PGConfig().offline_data(input_="/tmp/nothing").rollouts(num_envs_per_worker=50),
    ],
    ids=["ppo", "pg", "a2c", "auto", "exactly-2x", "dqn", "sac", "offline"],
)
def test_no_note_for_ordinary_auto_off_policy_and_offline_configs(config: Any) -> None:
    assert oversized_sample_note(config, "X") is None


def test_the_note_counts_remote_workers_and_agent_steps() -> None:
    config = (
        PPOConfig().rollouts(num_workers=3, num_envs_per_worker=4).training(train_batch_size=1000)
    )
    note = oversized_sample_note(config, "PPO")
    assert note is not None
    assert "at least 2400 env steps" in note
    assert "num_envs_per_worker=4 x num_workers=3" in note
    assert "'auto' (84 here: 1008 env steps per iteration)" in note
    by_agents = config.copy().multi_agent(count_steps_by="agent_steps")
    assert "at least 2400 agent steps" in str(oversized_sample_note(by_agents, "PPO"))


def test_when_even_a_fragment_of_one_is_too_much_the_note_says_what_else_to_change() -> None:
    config = PPOConfig().rollouts(num_workers=0, num_envs_per_worker=64, rollout_fragment_length=2)
    note = oversized_sample_note(config.training(train_batch_size=20, sgd_minibatch_size=20), "PPO")
    assert note is not None
    assert "at least 128 env steps" in note
    assert "lower num_envs_per_worker or num_workers, or raise train_batch_size" in note
    assert "even a fragment of 1 samples 64 env steps per round" in note
    assert "'auto'" not in note
