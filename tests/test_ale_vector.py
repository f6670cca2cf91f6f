"""``gym_env_vectorize_mode="vector_entry_point"``: a worker's Atari sub-envs as one ale-py
``AtariVectorEnv`` (``runtime.env.ale_vector``), and the modes it refuses, with the reason."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from rlconf import ConfigError, PPOConfig
from runtime.core.sample_batch import SampleBatch as SB
from runtime.env.ale_vector import AleSubEnv, AleVectorBatch

ATARI = "BreakoutNoFrameskip-v4"


def _config(**rollouts: Any) -> PPOConfig:
    return (
        PPOConfig()
        .environment(ATARI)
        .env_runners(num_env_runners=0, num_envs_per_env_runner=2, rollout_fragment_length=100)
        .rollouts(**rollouts)
        .training(
            train_batch_size=200,
            sgd_minibatch_size=100,
            num_sgd_iter=1,
            model={
                "conv_filters": [[8, [8, 8], 4], [8, [4, 4], 2], [8, [11, 11], 1]],
                "fcnet_hiddens": [16],
            },
        )
        .debugging(seed=0)
    )


def test_the_mode_takes_gymnasiums_names_and_members_in_any_case() -> None:
    for given in ("VECTOR_ENTRY_POINT", "vector_entry_point"):
        config = PPOConfig().env_runners(gym_env_vectorize_mode=given)
        assert config["gym_env_vectorize_mode"] == "vector_entry_point"
    member = gym.VectorizeMode.VECTOR_ENTRY_POINT
    config = PPOConfig().env_runners(gym_env_vectorize_mode=member)  # type: ignore[arg-type]
    assert config["gym_env_vectorize_mode"] == "vector_entry_point"
    assert PPOConfig()["gym_env_vectorize_mode"] == "sync"
    with pytest.raises(ConfigError, match=r"gym_env_vectorize_mode='threads'"):
        PPOConfig().rollouts(gym_env_vectorize_mode="threads")  # type: ignore[arg-type]


def test_a_worker_samples_its_atari_sub_envs_as_one_vector_env() -> None:
    config = _config(gym_env_vectorize_mode="VECTOR_ENTRY_POINT").evaluation(
        evaluation_interval=1, evaluation_duration=1, evaluation_duration_unit="episodes"
    )
    algo = config.build()
    try:
        worker = algo.workers.local_worker()
        assert [type(env) for env in worker.envs] == [AleSubEnv, AleSubEnv]
        assert worker.envs[0].vector_batch is worker.envs[1].vector_batch
        batch = worker.sample()
        # Frames stay uint8, channels last as the sync mode's wrappers give them.
        assert batch[SB.OBS].dtype == np.uint8 and batch[SB.OBS].shape == (200, 84, 84, 4)
        # Random play in Breakout loses a life within 100 steps: each lost life ends an
        # episode of its sub-env, and the next row of that sub-env starts a new one.
        ends = np.flatnonzero(batch[SB.TERMINATEDS])
        assert len(ends) >= 2
        first = int(ends[0])
        if first + 1 < len(batch) and batch[SB.ENV_ID][first + 1] == batch[SB.ENV_ID][first]:
            assert batch[SB.EPS_ID][first + 1] != batch[SB.EPS_ID][first]
        # Rewards clipped to their sign by the worker (clip_rewards), as in the sync mode.
        assert set(np.unique(batch[SB.REWARDS])) <= {0.0, 1.0}
        result = algo.train()
        assert result["episodes_this_iter"] > 0
        # Evaluation workers step their sub-envs one by one (they end exactly N episodes).
        evaluation = algo.evaluation_workers.local_worker()
        assert not any(isinstance(env, AleSubEnv) for env in evaluation.envs)
        assert result["evaluation"]["episodes_this_iter"] == 1
    finally:
        algo.stop()


def test_an_ended_episodes_final_frame_is_the_steps_and_the_next_reset_starts_the_new_one() -> None:
    batch = AleVectorBatch(ATARI, {}, 2, num_threads=1)
    try:
        first = [batch.reset_row(i, seed=i)[0] for i in range(2)]
        assert all(f.shape == (84, 84, 4) and f.dtype == np.uint8 for f in first)
        rng = np.random.default_rng(0)
        for _ in range(500):
            frames, _, terms, _, infos = batch.step(rng.integers(0, 4, 2))
            if terms.any():
                break
        (row,) = np.flatnonzero(terms)[:1]
        row = int(row)
        started, info = batch.reset_row(row, seed=None)
        # The step returned the episode's final frame; the reset the frame ale-py went on
        # from (a lost life: the game continues, one life fewer).
        assert not np.array_equal(started, frames[row])
        assert info["lives"] == infos[row]["lives"]
        # A second reset of the row is a reset of its own.
        again, _ = batch.reset_row(row, seed=None)
        assert again.shape == (84, 84, 4)
    finally:
        batch.close()
    with pytest.raises(RuntimeError, match="stepped together"):
        batch.sub_envs[0].step(0)


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (
            _config(gym_env_vectorize_mode="async"),
            r"gym_env_vectorize_mode='async'.*not available.*num_workers",
        ),
        (
            _config(gym_env_vectorize_mode="vector_entry_point").environment("CartPole-v1"),
            r"gym_env_vectorize_mode='vector_entry_point'.*Atari games.*'CartPole-v1'",
        ),
        (
            _config(gym_env_vectorize_mode="vector_entry_point", preprocessor_pref="rllib"),
            r"preprocessor_pref='rllib'.*must be 'deepmind'",
        ),
        (
            _config(gym_env_vectorize_mode="vector_entry_point").environment(
                ATARI, env_config={"render_mode": "rgb_array"}
            ),
            r"env_config=.*render_mode",
        ),
        (
            _config(gym_env_vectorize_mode="vector_entry_point").environment(record_env=True),
            r"record_env=True.*one gymnasium env",
        ),
    ],
    ids=["async", "not-atari", "not-deepmind", "env-config-key", "record-env"],
)
def test_what_the_vector_mode_cant_act_on_is_refused_at_build(
    config: PPOConfig, message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        config.build()
