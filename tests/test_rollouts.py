"""RolloutWorker sampling on the embedded default: batches, episodes, bootstrapping, env
handling and callbacks."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from rlconf import PGConfig, PPOConfig
from runtime import EnvContext, RolloutWorker, SampleBatch, register_env
from runtime.algorithms.ppo import PPO
from runtime.env.env_registry import env_creator_for
from tests.envs import ConstantRewardEnv, CorridorEnv, RecordingCallbacks


def _worker(config: Any, **kwargs: Any) -> RolloutWorker:
    config = config.freeze()
    return RolloutWorker(
        env_creator=env_creator_for(config["env"]),
        config=config,
        policy_class=PPO.policy_class,
        **kwargs,
    )


def _config(env: Any = "CartPole-v1", **rollouts: Any) -> PPOConfig:
    return (
        PPOConfig()
        .environment(env)
        .rollouts(**{"num_workers": 0, "rollout_fragment_length": 10, **rollouts})
        .training(model={"fcnet_hiddens": [16]})
        .debugging(seed=3)
    )


def test_sample_has_the_reference_columns_and_one_fragment_per_sub_env() -> None:
    worker = _worker(_config(num_envs_per_worker=4))
    batch = worker.sample()
    assert len(batch) == 40
    for column in (
        "obs",
        "new_obs",
        "actions",
        "rewards",
        "terminateds",
        "truncateds",
        "infos",
        "eps_id",
        "t",
        "action_logp",
        "vf_preds",
        "advantages",
        "value_targets",
        "action_dist_inputs",
    ):
        assert column in batch, column
    assert batch["obs"].shape == (40, 4) and batch["obs"].dtype == np.float32
    # Each sub-env's rows are contiguous and in time order.
    assert np.all(np.diff(batch["env_id"]) >= 0)
    for episode in batch.split_by_episode():
        assert np.all(np.diff(episode["t"]) == 1)
    # new_obs of a row is the next row's obs inside an episode.
    same = batch["eps_id"][1:] == batch["eps_id"][:-1]
    np.testing.assert_array_equal(batch["new_obs"][:-1][same], batch["obs"][1:][same])


def test_truncation_bootstraps_and_termination_does_not() -> None:
    config = (
        PGConfig()
        .environment(ConstantRewardEnv, env_config={"max_steps": 3, "reward": 1.0})
        .rollouts(rollout_fragment_length=3)
        .training(gamma=0.5, model={"fcnet_hiddens": [4]})
    )
    from runtime.algorithms.a2c import A2C

    frozen = (
        PPOConfig()
        .environment(ConstantRewardEnv, env_config={"max_steps": 3})
        .rollouts(num_workers=0, rollout_fragment_length=3)
        .training(gamma=0.5, lambda_=1.0)
        .freeze()
    )
    worker = RolloutWorker(
        env_creator=env_creator_for(ConstantRewardEnv), config=frozen, policy_class=A2C.policy_class
    )
    batch = worker.sample()
    assert batch["truncateds"].tolist() == [False, False, True]
    policy = worker.get_policy()
    v_final = policy.compute_values(batch["new_obs"][2:3])[0]
    # Value target of the last row = r + gamma * V(final obs): bootstrapped on truncation.
    assert batch["value_targets"][2] == pytest.approx(1.0 + 0.5 * v_final, rel=1e-5)
    # PG (no critic) never bootstraps: discounted returns 1.75, 1.5, 1.
    pg = RolloutWorker(
        env_creator=env_creator_for(ConstantRewardEnv),
        config=config.freeze(),
        policy_class=__import__("runtime.algorithms.pg", fromlist=["PG"]).PG.policy_class,
    )
    np.testing.assert_allclose(pg.sample()["advantages"], [1.75, 1.5, 1.0])


def test_complete_episodes_only_returns_whole_episodes() -> None:
    worker = _worker(
        _config(CorridorEnv, batch_mode="complete_episodes", num_envs_per_worker=3).environment(
            env_config={"max_steps": 7}
        )
    )
    for _ in range(3):
        batch = worker.sample()
        assert len(batch) >= 30
        for episode in batch.split_by_episode():
            assert episode["t"][0] == 0
            assert episode["terminateds"][-1] or episode["truncateds"][-1]
            assert not episode["terminateds"][:-1].any() and not episode["truncateds"][:-1].any()


def test_dict_observations_are_one_hot_and_flattened() -> None:
    worker = _worker(_config(CorridorEnv))
    batch = worker.sample()
    assert batch["obs"].shape == (10, 1 + 6)
    # gymnasium orders Dict keys: "frac" (Box) first, then "pos" one-hot.
    np.testing.assert_array_equal(batch["obs"][:, 1:].sum(axis=1), np.ones(10))


def test_clip_rewards_and_metrics_use_raw_rewards() -> None:
    worker = _worker(
        _config(ConstantRewardEnv, rollout_fragment_length=5).environment(
            env_config={"reward": 5.0, "max_steps": 5}, clip_rewards=2.0
        )
    )
    batch = worker.sample()
    np.testing.assert_array_equal(batch["rewards"], np.full(5, 2.0, np.float32))
    [episode] = worker.get_metrics()
    assert episode.total_reward == 25.0 and episode.length == 5
    signed = _worker(
        _config(ConstantRewardEnv).environment(env_config={"reward": 5.0}, clip_rewards=True)
    )
    np.testing.assert_array_equal(signed.sample()["rewards"], np.ones(10, np.float32))


def test_normalize_and_clip_actions() -> None:
    normalized = _worker(_config(ConstantRewardEnv).environment(normalize_actions=True))
    normalized.sample()
    for env in normalized.envs:
        assert np.all(np.abs(env.last_action) <= 2.0)
    clipped = _worker(
        _config(ConstantRewardEnv).environment(normalize_actions=False, clip_actions=True)
    )
    batch = clipped.sample()
    assert batch["actions"].shape == (10, 1)
    for env in clipped.envs:
        assert np.all(np.abs(env.last_action) <= 2.0)


def test_env_creators_get_an_env_context() -> None:
    seen: list[EnvContext] = []

    def creator(ctx: EnvContext) -> Any:
        seen.append(ctx)
        return CorridorEnv(ctx)

    register_env("corridor-test", creator)
    worker = _worker(
        _config("corridor-test", num_envs_per_worker=2).environment(env_config={"length": 3}),
        worker_index=0,
        num_workers=0,
    )
    assert [c.vector_index for c in seen] == [0, 1]
    assert all(c["length"] == 3 and c.worker_index == 0 and not c.remote for c in seen)
    assert worker.foreach_env(lambda env: env.length) == [3, 3]
    # RLlib's worker.env: the first sub-env.
    assert worker.env is worker.envs[0] and worker.env.length == 3
    by_path = _worker(_config("tests.envs:CorridorEnv").environment(env_config={"length": 4}))
    assert by_path.foreach_env(lambda env: env.length) == [4]
    contexts = by_path.foreach_env_with_context(lambda env, ctx: ctx.vector_index)
    assert contexts == [0]


def test_unknown_env_is_a_config_error() -> None:
    from rlconf import ConfigError

    with pytest.raises(ConfigError, match="neither a registered name nor a gymnasium id"):
        env_creator_for("NoSuchEnv-v9")


def test_same_seed_gives_the_same_samples() -> None:
    a = _worker(_config(num_envs_per_worker=2)).sample()
    b = _worker(_config(num_envs_per_worker=2)).sample()
    np.testing.assert_array_equal(a["obs"], b["obs"])
    np.testing.assert_array_equal(a["actions"], b["actions"])


def test_mean_std_filter_normalises_observations() -> None:
    worker = _worker(
        _config(
            num_envs_per_worker=4, rollout_fragment_length=100, observation_filter="MeanStdFilter"
        )
    )
    worker.sample()
    batch = worker.sample()
    assert abs(float(batch["obs"].mean())) < 0.5
    assert worker.get_filters()["default_policy"]["stats"]["n"] > 400


def test_every_sampling_callback_runs() -> None:
    RecordingCallbacks.calls = {}
    worker = _worker(
        _config(CorridorEnv, num_envs_per_worker=2)
        .callbacks(RecordingCallbacks)
        .environment(env_config={"max_steps": 4})
    )
    batch = worker.sample()
    calls = RecordingCallbacks.calls
    assert calls["on_environment_created"] == 2
    assert calls["on_episode_step"] == 20
    assert calls["on_episode_end"] >= 4
    assert calls["on_episode_start"] == calls["on_episode_created"] == calls["on_episode_end"] + 2
    assert calls["on_postprocess_trajectory"] == len(batch.split_by_episode())
    assert calls["on_sample_end"] == 1
    metrics = worker.get_metrics()
    assert all(m.custom_metrics["double_length"] == 2 * m.length for m in metrics)


def test_sample_batch_from_worker_concatenates_and_shuffles() -> None:
    worker = _worker(_config())
    both = SampleBatch.concat_samples([worker.sample(), worker.sample()])
    assert len(both) == 20
    before = both["obs"].copy()
    both.shuffle(np.random.default_rng(0))
    assert sorted(map(tuple, before)) == sorted(map(tuple, both["obs"]))


def test_the_last_row_of_an_episode_holds_its_final_observation_not_the_reset_one() -> None:
    worker = _worker(_config(num_envs_per_worker=4, rollout_fragment_length=100))
    batch = worker.sample()
    ends = np.flatnonzero(batch["terminateds"])
    assert len(ends) > 0
    final = batch["new_obs"][ends]
    # CartPole terminates when the cart leaves [-2.4, 2.4] or the pole tips past 12 degrees.
    assert np.all((np.abs(final[:, 0]) > 2.4) | (np.abs(final[:, 2]) > 0.2094))


def test_an_observation_outside_the_space_is_refused_with_the_space() -> None:
    """compute_single_action with a flattened sample of a Dict space (the policy's space, not
    the env's) or a Box observation of the wrong size: the error names the space, not a numpy
    index."""
    import gymnasium as gym
    import pytest

    from runtime.env.preprocessors import get_preprocessor

    space = gym.spaces.Dict({"a": gym.spaces.Box(-1.0, 1.0, (3,)), "b": gym.spaces.Discrete(2)})
    pre = get_preprocessor(space, {})
    assert pre.transform(space.sample()).shape == (5,)
    with pytest.raises(ValueError, match=r"does not fit the observation space Dict"):
        pre.transform(np.zeros(5, np.float32))
    box = get_preprocessor(gym.spaces.Box(-1.0, 1.0, (4,)), {})
    with pytest.raises(ValueError, match=r"3 values where the space has 4"):
        box.transform(np.zeros(3, np.float32))
