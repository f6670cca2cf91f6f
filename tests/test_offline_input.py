"""Training on recorded experience: any algorithm's files train any algorithm that learns
off-policy from them (the columns it needs are computed as they are read), with the
reference's input settings (mixed sources, ``postprocess_inputs``, ``shuffle_buffer_size``,
a callable ``input``, ``input_evaluation``), and the readers and writers exported for users."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from rlconf import DQNConfig, PGConfig, PPOConfig
from runtime import IOContext, JsonReader, JsonWriter, SampleBatchBuilder
from runtime.core.multi_agent_batch import MultiAgentBatch
from runtime.core.postprocessing import N_STEP_GAMMA
from runtime.core.sample_batch import SampleBatch
from runtime.offline.episode_columns import episode_columns, postprocess_rows, segment_ends
from runtime.offline.input_reader import InputReader


def _write_pg(folder: Path, iterations: int = 2, **offline: Any) -> None:
    """PG on CartPole writing 100-row batches (2 sub-envs x 50 steps) into ``folder``."""
    algo = (
        PGConfig()
        .environment("CartPole-v1")
        .rollouts(num_workers=0, num_envs_per_worker=2, rollout_fragment_length=50)
        .training(train_batch_size=100)
        .offline_data(output=str(folder), **offline)
        .debugging(seed=0)
        .build()
    )
    try:
        for _ in range(iterations):
            algo.train()
    finally:
        algo.stop()


@pytest.fixture(scope="module")
def pg_files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("pg-out")
    _write_pg(folder)
    return folder


def _read_one(config: Any) -> tuple[SampleBatch, dict[str, Any]]:
    """One training iteration of ``config`` and the first batch its worker reads."""
    algo = config.build()
    try:
        batch = algo.workers.local_worker().sample()
        result = algo.train()
    finally:
        algo.stop()
    return MultiAgentBatch.wrap(batch)["default_policy"], result


def test_dqn_trains_on_the_files_pg_wrote_with_n_step_columns_computed(pg_files: Path) -> None:
    config = (
        DQNConfig()
        .environment("CartPole-v1")
        .offline_data(input_=str(pg_files))
        .training(n_step=3, num_steps_sampled_before_learning_starts=0, train_batch_size=32)
        .debugging(seed=0)
    )
    batch, result = _read_one(config)
    assert N_STEP_GAMMA in batch  # PG's files have none: computed as read
    gammas = batch[N_STEP_GAMMA]
    assert np.isclose(np.median(gammas), 0.99**3)  # three steps summed inside an episode
    assert np.isclose(gammas[-1], 0.99)  # one step before the cut at the batch end
    assert np.isfinite(result["info"]["learner"]["default_policy"]["learner_stats"]["mean_q"])
    assert result["info"]["num_env_steps_trained"] > 0


def test_uncompressed_columns_keep_their_dtypes_and_train(tmp_path: Path) -> None:
    _write_pg(tmp_path, iterations=1, output_compress_columns=[])
    line = next(iter(sorted(tmp_path.glob("*.json")))).read_text().splitlines()[0]
    assert isinstance(json.loads(line)["obs"], list)
    batch = next(JsonReader(str(tmp_path)).read_all_files())
    assert isinstance(batch, SampleBatch)
    assert batch["obs"].dtype == np.float32 and batch["rewards"].dtype == np.float32
    assert batch["actions"].dtype == np.int64 and batch["terminateds"].dtype == bool
    config = (
        DQNConfig()
        .environment("CartPole-v1")
        .offline_data(input_=str(tmp_path))
        .training(num_steps_sampled_before_learning_starts=0, train_batch_size=32)
    )
    _, result = _read_one(config)
    assert result["info"]["num_env_steps_trained"] > 0


def test_the_references_own_files_are_read(tmp_path: Path) -> None:
    """Its columns: ``dones`` for both ends, ``action_prob``, plain lists without dtypes."""
    rows = 6
    line = {
        "type": "SampleBatch",
        "obs": np.zeros((rows, 4)).tolist(),
        "new_obs": np.ones((rows, 4)).tolist(),
        "actions": [0, 1, 0, 1, 0, 1],
        "rewards": [1.0] * rows,
        "dones": [False, False, True, False, False, False],
        "eps_id": [7, 7, 7, 8, 8, 8],
        "action_prob": [0.5] * rows,
        "infos": [{}] * rows,
    }
    (tmp_path / "rllib.json").write_text(json.dumps(line) + "\n")
    config = (
        PGConfig()
        .environment("CartPole-v1")
        .rollouts(num_workers=0, rollout_fragment_length=6)
        .training(train_batch_size=6, gamma=0.5)
        .offline_data(input_=str(tmp_path), input_evaluation=["is"])
    )
    batch, result = _read_one(config)
    assert batch["rewards"].dtype == np.float32
    assert batch["terminateds"].tolist() == line["dones"]
    assert np.allclose(batch["action_logp"], np.log(0.5))
    # returns of the terminated episode, and of the cut one bootstrapped from V (PG: none)
    assert np.allclose(batch["value_targets"][:3], [1.75, 1.5, 1.0])
    assert np.allclose(batch["value_targets"][3:], [1.75, 1.5, 1.0])
    assert "is" in result["off_policy_estimation"]


def test_rows_are_cut_where_an_episode_ends_or_is_interrupted() -> None:
    batch = SampleBatch(
        {
            "eps_id": [1, 1, 1, 2, 2, 3],
            "t": [0, 1, 3, 0, 1, 0],
            "terminateds": [False, False, False, True, False, False],
        }
    )
    ends = segment_ends(episode_columns(batch))
    # t jumps 1 -> 3 (rows missing): a cut; eps 2 terminates at its first row
    assert ends.tolist() == [False, True, True, True, True, True]


def test_postprocess_inputs_recomputes_what_the_files_hold(pg_files: Path) -> None:
    def config(postprocess: bool) -> PGConfig:
        return (
            PGConfig()
            .environment("CartPole-v1")
            .rollouts(num_workers=0, rollout_fragment_length=100)
            .training(train_batch_size=100, gamma=0.5)
            .offline_data(input_=str(pg_files), postprocess_inputs=postprocess)
        )

    as_written, _ = _read_one(config(False))
    recomputed, _ = _read_one(config(True))
    assert np.array_equal(as_written["obs"], recomputed["obs"])
    # PG wrote returns with gamma 0.99; with postprocess_inputs they are this config's (0.5)
    assert as_written["value_targets"].max() > 2.0
    assert recomputed["value_targets"].max() <= 2.0


def test_mixed_input_draws_each_batch_from_a_source(pg_files: Path) -> None:
    algo = (
        PGConfig()
        .environment("CartPole-v1")
        .rollouts(num_workers=0, rollout_fragment_length=30)
        .training(train_batch_size=30)
        .offline_data(input_={"sampler": 0.5, str(pg_files): 0.5})
        .debugging(seed=1)
        .build()
    )
    try:
        sizes = [len(MultiAgentBatch.wrap(algo.workers.local_worker().sample())) for _ in range(40)]
        result = algo.train()
    finally:
        algo.stop()
    # the sampler gives 30-row fragments (1 sub-env), the files 100-row batches
    assert set(sizes) == {30, 100}
    assert 8 <= sizes.count(30) <= 32
    assert result["episodes_total"] > 0  # the sampled part reports its episodes


def test_shuffle_buffer_size_reorders_the_batches_read(pg_files: Path) -> None:
    def first_obs(shuffle: int) -> list[float]:
        algo = (
            PGConfig()
            .environment("CartPole-v1")
            .rollouts(num_workers=0)
            .offline_data(input_=str(pg_files), shuffle_buffer_size=shuffle)
            .debugging(seed=3)
            .build()
        )
        try:
            worker = algo.workers.local_worker()
            batches = [MultiAgentBatch.wrap(worker.sample())["default_policy"] for _ in range(4)]
        finally:
            algo.stop()
        return [float(b["obs"][0, 0]) for b in batches]

    in_order = first_obs(0)
    shuffled = first_obs(4)
    assert in_order != shuffled
    assert set(shuffled) <= set(in_order + first_obs(0))  # the same batches, reordered


class _CountingReader(InputReader):
    def __init__(self, ioctx: IOContext) -> None:
        self.ioctx = ioctx
        self.calls = 0

    def next(self) -> SampleBatch:
        self.calls += 1
        rows = int(self.ioctx.input_config["rows"])
        return SampleBatch(
            {
                "obs": np.zeros((rows, 4), np.float32),
                "new_obs": np.zeros((rows, 4), np.float32),
                "actions": np.zeros(rows, np.int64),
                "rewards": np.ones(rows, np.float32),
                "terminateds": np.arange(rows) == rows - 1,
                "eps_id": np.full(rows, self.calls),
            }
        )


def test_a_callable_input_makes_the_reader_from_the_io_context() -> None:
    made: list[_CountingReader] = []

    def make(ioctx: IOContext) -> _CountingReader:
        made.append(_CountingReader(ioctx))
        return made[-1]

    algo = (
        PGConfig()
        .environment("CartPole-v1")
        .rollouts(num_workers=0, rollout_fragment_length=10)
        .training(train_batch_size=20)
        .offline_data(input_=make, input_config={"rows": 10})
        .build()
    )
    try:
        result = algo.train()
    finally:
        algo.stop()
    assert len(made) == 1 and made[0].ioctx.worker_index == 0
    assert made[0].ioctx.worker is not None
    assert made[0].calls == 2 and result["timesteps_total"] == 20


def test_a_callable_output_gets_every_batch() -> None:
    written: list[Any] = []

    class Collect:
        def write(self, batch: Any) -> None:
            written.append(batch)

    algo = (
        PGConfig()
        .environment("CartPole-v1")
        .rollouts(num_workers=0, rollout_fragment_length=20)
        .training(train_batch_size=40)
        .offline_data(output=lambda ioctx: Collect())
        .build()
    )
    try:
        algo.train()
    finally:
        algo.stop()
    assert sum(len(b) for b in written) == 40


def test_input_evaluation_simulation_reports_the_envs_episodes(pg_files: Path) -> None:
    config = (
        PGConfig()
        .environment("CartPole-v1")
        .rollouts(num_workers=0, rollout_fragment_length=100)
        .training(train_batch_size=400)
        .offline_data(input_=str(pg_files), input_evaluation=["simulation"])
    )
    _, result = _read_one(config)
    assert result["episodes_this_iter"] > 0 and np.isfinite(result["episode_reward_mean"])
    assert result["timesteps_total"] == 400  # only the input counts as trained on


def test_estimators_need_the_behaviour_policys_logp(tmp_path: Path) -> None:
    batch = SampleBatch(
        {
            "obs": np.zeros((3, 4), np.float32),
            "actions": np.zeros(3, np.int64),
            "rewards": np.ones(3, np.float32),
            "terminateds": np.array([False, False, True]),
            "eps_id": np.zeros(3, np.int64),
        }
    )
    JsonWriter(tmp_path).write(batch)
    algo = (
        PGConfig()
        .environment("CartPole-v1")
        .rollouts(num_workers=0, rollout_fragment_length=3)
        .training(train_batch_size=3)
        .offline_data(input_=str(tmp_path), input_evaluation=["wis"])
        .build()
    )
    try:
        with pytest.raises(ValueError, match="'wis' needs the behaviour policy's 'action_logp'"):
            algo.train()
    finally:
        algo.stop()


def test_experience_built_row_by_row_trains_dqn(tmp_path: Path) -> None:
    """The reference's recipe for a system rlconf can't step: rows added with
    ``SampleBatchBuilder``, written with ``JsonWriter``."""
    builder = SampleBatchBuilder()
    writer = JsonWriter(tmp_path)
    env = gym.make("CartPole-v1")
    rng = np.random.default_rng(0)
    for eps_id in range(5):
        obs, _ = env.reset(seed=eps_id)
        t, done = 0, False
        while not done:
            action = int(rng.integers(2))
            new_obs, reward, terminated, truncated, info = env.step(action)
            builder.add_values(
                t=t,
                eps_id=eps_id,
                obs=obs,
                actions=action,
                action_prob=0.5,
                rewards=reward,
                terminateds=terminated,
                truncateds=truncated,
                infos=info,
                new_obs=new_obs,
            )
            obs, t, done = new_obs, t + 1, terminated or truncated
        writer.write(builder.build_and_reset())
    with pytest.raises(ValueError, match="gives columns"):
        builder.add_values(obs=obs)
        builder.add_values(obs=obs, actions=0)
    config = (
        DQNConfig()
        .environment("CartPole-v1")
        .offline_data(input_=str(tmp_path))
        .training(num_steps_sampled_before_learning_starts=0, train_batch_size=16)
    )
    _, result = _read_one(config)
    assert result["info"]["num_env_steps_trained"] > 0


def test_postprocess_rows_bootstraps_cut_episodes_with_the_current_critic() -> None:
    algo = PPOConfig().environment("CartPole-v1").rollouts(num_workers=0).build()
    try:
        policy = algo.get_policy()
        obs = np.random.default_rng(0).normal(size=(4, 4)).astype(np.float32)
        rows = SampleBatch(
            {
                "obs": obs,
                "new_obs": np.roll(obs, -1, axis=0),
                "actions": np.zeros(4, np.int64),
                "rewards": np.ones(4, np.float32),
                "terminateds": np.array([False, True, False, False]),
                "eps_id": np.array([0, 0, 1, 1]),
                "action_logp": np.zeros(4, np.float32),
            }
        )
        out = postprocess_rows(policy, rows)
        values = policy.compute_values(obs)
        last = policy.compute_values(rows["new_obs"][3:])[0]
    finally:
        algo.stop()
    assert np.allclose(out["vf_preds"], values, atol=1e-6)
    gamma, lam = 0.99, 1.0  # PPO's defaults
    # episode 0 terminates: the last target is its reward; episode 1 is cut: V(new_obs)
    assert np.isclose(out["value_targets"][1], 1.0, atol=1e-5)
    assert np.isclose(out["value_targets"][3], 1.0 + gamma * last, atol=1e-5)
    assert lam == 1.0


def test_multi_agent_batches_are_written_and_trained_on(tmp_path: Path) -> None:
    from rlconf.policy_spec import PolicySpec
    from runtime import make_multi_agent
    from tests.multi_agent_envs import map_by_index

    def config(**offline: Any) -> PPOConfig:
        return (
            PPOConfig()
            .environment(make_multi_agent("CartPole-v1"), env_config={"num_agents": 2})
            .rollouts(num_workers=0, rollout_fragment_length=25)
            .training(train_batch_size=50, sgd_minibatch_size=25, num_sgd_iter=1)
            .multi_agent(
                policies={"p0": PolicySpec(), "p1": PolicySpec()}, policy_mapping_fn=map_by_index
            )
            .offline_data(**offline)
            .debugging(seed=0)
        )

    writer = config(output=str(tmp_path)).build()
    try:
        writer.train()
    finally:
        writer.stop()
    first = next(JsonReader(str(tmp_path)).read_all_files())
    assert isinstance(first, MultiAgentBatch) and set(first.policy_batches) == {"p0", "p1"}
    reader = config(input_=str(tmp_path), postprocess_inputs=True).build()
    try:
        result = reader.train()
    finally:
        reader.stop()
    assert set(result["info"]["learner"]) == {"p0", "p1"}
    assert result["timesteps_total"] >= 50


def test_a_minari_dataset_written_by_output_trains_dqn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    minari = pytest.importorskip("minari")
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path))
    writer = (
        PGConfig()
        .environment("CartPole-v1")
        .rollouts(num_workers=0, rollout_fragment_length=200)
        .offline_data(output="minari://cartpole/pg-v0")
        .debugging(seed=0)
        .build()
    )
    try:
        writer.train()
    finally:
        writer.stop()  # the dataset is complete once the worker stops
    dataset = minari.load_dataset("cartpole/pg-v0")
    assert dataset.total_episodes > 0
    config = (
        DQNConfig()
        .environment("CartPole-v1")
        .offline_data(input_="minari://cartpole/pg-v0")
        .training(num_steps_sampled_before_learning_starts=0, train_batch_size=32)
    )
    batch, result = _read_one(config)
    assert N_STEP_GAMMA in batch and result["info"]["num_env_steps_trained"] > 0
