"""A mixed input (``input={"path/to/files": 0.4, "sampler": 0.6}``, the reference's example)
trains whatever columns each source's rows carry: every batch of a policy holds the columns
all sources give it (``runtime.offline.mixed_columns``), so DQN stores PG's files beside its own
samples and PG concatenates ``SampleBatchBuilder`` rows with its sampled fragments."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from rlconf import DQNConfig, PGConfig
from runtime import JsonWriter, SampleBatchBuilder
from runtime.core.multi_agent_batch import MultiAgentBatch
from runtime.core.sample_batch import SampleBatch
from runtime.offline.input_reader import InputReader
from runtime.offline.mixed_columns import common_columns, dropped_columns, keep_columns
from runtime.offline.mixed_input import MixedInput


def _rows(n: int, *columns: str, start: int = 0) -> SampleBatch:
    return SampleBatch({c: np.arange(start, start + n, dtype=np.float32) for c in columns})


class _Reader(InputReader):
    """Batches of ``columns``, numbered by ``obs``; counts how many it handed out."""

    def __init__(self, size: int, *columns: str) -> None:
        self.size = size
        self.columns = columns
        self.calls = 0

    def next(self) -> SampleBatch:
        self.calls += 1
        return _rows(self.size, *self.columns, start=1000 * self.calls)


# ---------------------------------------------------------------------- the reconciliation


def test_each_policy_keeps_the_columns_every_source_gives_it() -> None:
    sampled = MultiAgentBatch(
        {"a": _rows(2, "obs", "actions", "env_id"), "b": _rows(2, "obs", "rewards")}, 2
    )
    read = MultiAgentBatch({"a": _rows(3, "obs", "actions", "advantages")}, 3)
    common = common_columns([sampled, read])
    assert common == {"a": {"obs", "actions"}, "b": {"obs", "rewards"}}
    assert dropped_columns({"sampler": sampled, "files": read}, common) == {
        "sampler": ["a: env_id"],
        "files": ["a: advantages"],
    }
    kept = keep_columns(read, common, "files")
    assert isinstance(kept, MultiAgentBatch) and kept.env_steps() == 3
    assert set(kept["a"].columns) == {"obs", "actions"}
    assert np.array_equal(kept["a"]["obs"], read["a"]["obs"])
    # a SampleBatch is the default policy's rows; a policy common does not name stays as it is
    single = _rows(2, "obs", "extra")
    cut = keep_columns(single, {"default_policy": frozenset({"obs"})}, "x")
    assert isinstance(cut, SampleBatch) and cut.columns == ["obs"]
    assert keep_columns(single, {}, "x") is single
    with pytest.raises(ValueError, match=r"source 'files' gave rows of policy 'a' without the "):
        keep_columns(MultiAgentBatch({"a": _rows(1, "obs")}, 1), common, "files")


def test_mixed_input_hands_out_every_batch_with_the_common_columns() -> None:
    sampler = _Reader(4, "obs", "actions", "rewards", "env_id", "action_dist_inputs")
    files = _Reader(10, "obs", "actions", "rewards", "advantages", "agent_index")
    mixed = MixedInput({"sampler": sampler, "files": files}, {"sampler": 0.6, "files": 0.4}, 3)
    batches = [MultiAgentBatch.wrap(mixed.next())["default_policy"] for _ in range(30)]
    assert mixed.columns == {"default_policy": frozenset({"obs", "actions", "rewards"})}
    assert all(set(b.columns) == {"obs", "actions", "rewards"} for b in batches)
    sizes = [len(b) for b in batches]
    # the batch each source gave before the first draw is handed out, not lost or repeated
    assert sizes.count(4) == sampler.calls and sizes.count(10) == files.calls
    assert 0 < sizes.count(10) < 30
    firsts = [float(b["obs"][0]) for b in batches]
    assert firsts.count(1000.0) == 2  # the first batch of each source, once each
    concatenated = MultiAgentBatch.concat_samples(batches)  # what the on-policy step does
    assert len(concatenated["default_policy"]) == sum(sizes)


def test_a_source_whose_later_batches_lack_a_kept_column_is_named() -> None:
    class Changing(_Reader):
        def next(self) -> SampleBatch:
            self.calls += 1
            return _rows(2, "obs", "actions") if self.calls == 1 else _rows(2, "obs")

    mixed = MixedInput({"f": Changing(2), "g": _Reader(2, "obs", "actions")}, {"f": 1, "g": 0})
    mixed.next()  # f's first batch
    with pytest.raises(ValueError, match=r"source 'f' .* without the columns \['actions'\]"):
        mixed.next()


# ---------------------------------------------------------------------- the reported cases


def _pg_files(folder: Path) -> Path:
    """PG's own output: rows with PG's postprocessing (``advantages``, ``value_targets``)."""
    algo = (
        PGConfig()
        .environment("CartPole-v1")
        .rollouts(num_workers=0, num_envs_per_worker=2, rollout_fragment_length=50)
        .training(train_batch_size=100)
        .offline_data(output=str(folder))
        .debugging(seed=0, log_sys_usage=False)
        .build()
    )
    try:
        algo.train()
    finally:
        algo.stop()
    return folder


def _builder_files(folder: Path) -> Path:
    """The reference's recipe: rows added with ``SampleBatchBuilder`` (``agent_index``,
    ``prev_actions``, ``action_prob``; no ``env_id`` or ``action_dist_inputs``)."""
    builder = SampleBatchBuilder()
    writer = JsonWriter(folder)
    env = gym.make("CartPole-v1")
    rng = np.random.default_rng(0)
    for eps_id in range(4):
        obs, _ = env.reset(seed=eps_id)
        t, done, prev_action = 0, False, 0
        while not done:
            action = int(rng.integers(2))
            new_obs, reward, terminated, truncated, info = env.step(action)
            builder.add_values(
                t=t,
                eps_id=eps_id,
                agent_index=0,
                obs=obs,
                actions=action,
                action_prob=0.5,
                prev_actions=prev_action,
                rewards=reward,
                terminateds=terminated,
                truncateds=truncated,
                infos=info,
                new_obs=new_obs,
            )
            obs, t, done, prev_action = new_obs, t + 1, terminated or truncated, action
        writer.write(builder.build_and_reset())
    return folder


def _train(config: Any, iterations: int) -> tuple[list[dict[str, Any]], Any]:
    algo = config.build()
    try:
        results = [algo.train() for _ in range(iterations)]
        reader = algo.workers.local_worker().input_reader
        buffers = getattr(algo, "replay_buffers", {})
        stored = {pid: sorted(b._columns) for pid, b in buffers.items()}
    finally:
        algo.stop()
    return results, (reader, stored)


def test_dqn_trains_on_pg_files_mixed_with_the_sampler(tmp_path: Path) -> None:
    files = _pg_files(tmp_path / "pg")
    config = (
        DQNConfig()
        .environment("CartPole-v1")
        .rollouts(num_workers=0)
        .offline_data(input_={str(files): 0.4, "sampler": 0.6})
        .training(num_steps_sampled_before_learning_starts=0, train_batch_size=16)
        .reporting(min_sample_timesteps_per_reporting=100)
        .debugging(seed=0, log_sys_usage=False)
    )
    results, (reader, stored) = _train(config, 2)
    assert isinstance(reader, MixedInput)
    assert not reader._first  # both sources' batches reached the buffer
    assert results[-1]["info"]["num_env_steps_trained"] > 0
    # PG's postprocessing columns are dropped; DQN's own (n-step) are kept
    assert "advantages" not in stored["default_policy"]
    assert "value_targets" not in stored["default_policy"]
    assert {"obs", "actions", "rewards", "new_obs", "n_step_gamma"} <= set(stored["default_policy"])


def test_pg_trains_on_sample_batch_builder_files_mixed_with_the_sampler(tmp_path: Path) -> None:
    files = _builder_files(tmp_path / "built")
    config = (
        PGConfig()
        .environment("CartPole-v1")
        .rollouts(num_workers=0, rollout_fragment_length=50)
        .training(train_batch_size=200)
        .offline_data(input_={str(files): 0.4, "sampler": 0.6})
        .debugging(seed=0, log_sys_usage=False)
    )
    results, (reader, _) = _train(config, 2)
    assert isinstance(reader, MixedInput)
    assert not reader._first
    assert reader.columns is not None
    kept = reader.columns["default_policy"]
    assert {"obs", "actions", "advantages"} <= kept  # PG's advantages computed for the files
    assert not {"agent_index", "prev_actions", "action_prob", "env_id"} & kept
    assert all(r["info"]["num_env_steps_trained"] > 0 for r in results)
    learner = results[-1]["info"]["learner"]["default_policy"]["learner_stats"]
    assert np.isfinite(learner["policy_loss"])
