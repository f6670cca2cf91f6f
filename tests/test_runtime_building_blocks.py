"""SampleBatch, EnvContext and env creation: the runtime's first building blocks."""

from __future__ import annotations

import pickle
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from rlconf import ConfigError
from runtime import EnvContext, SampleBatch, TaskSettableEnv, register_env
from runtime.env.env_registry import env_creator_for


def _batch() -> SampleBatch:
    return SampleBatch(
        {
            "obs": np.arange(10, dtype=np.float32).reshape(5, 2),
            "rewards": [1.0, 2.0, 3.0, 4.0, 5.0],
            "eps_id": [7, 7, 8, 8, 8],
            "infos": [{"i": i} for i in range(5)],
        }
    )


def test_sample_batch_columns_slicing_and_concat() -> None:
    batch = _batch()
    assert len(batch) == 5 and batch.columns == ["obs", "rewards", "eps_id", "infos"]
    assert batch["infos"].dtype == object and batch["infos"][2] == {"i": 2}
    head = batch[:2]
    assert len(head) == 2 and head["rewards"].tolist() == [1.0, 2.0]
    both = SampleBatch.concat_samples([head, batch[2:]])
    assert both["rewards"].tolist() == batch["rewards"].tolist()
    assert len(batch.concat(batch)) == 10
    with pytest.raises(ValueError, match="rows"):
        SampleBatch({"a": [1, 2], "b": [1]})
    with pytest.raises(KeyError, match="columns: obs"):
        _ = batch["actions"]


def test_sample_batch_shuffle_keeps_rows_together() -> None:
    batch = _batch().shuffle(np.random.default_rng(0))
    for obs, reward in zip(batch["obs"], batch["rewards"], strict=True):
        assert obs[0] == (reward - 1) * 2


def test_split_by_episode_and_timeslices() -> None:
    parts = _batch().split_by_episode()
    assert [len(p) for p in parts] == [2, 3]
    assert {int(p["eps_id"][0]) for p in parts} == {7, 8}
    assert [len(p) for p in _batch().timeslices(2)] == [2, 2, 1]


def test_env_context_carries_worker_information_and_pickles() -> None:
    ctx = EnvContext({"size": 3}, worker_index=2, vector_index=1, remote=False, num_workers=4)
    assert ctx["size"] == 3 and (ctx.worker_index, ctx.vector_index, ctx.num_workers) == (2, 1, 4)
    again = pickle.loads(pickle.dumps(ctx))
    assert again == ctx and again.worker_index == 2 and again.num_workers == 4


class CorridorEnv(TaskSettableEnv):
    def __init__(self, config: dict[str, Any]) -> None:
        self.length = config.get("length", 5)
        self.observation_space = gym.spaces.Discrete(100)
        self.action_space = gym.spaces.Discrete(2)

    def get_task(self) -> int:
        return int(self.length)

    def set_task(self, task: Any) -> None:
        self.length = task


def test_env_creators_for_every_kind_of_env_spec() -> None:
    ctx = EnvContext({"length": 9}, worker_index=0)
    assert env_creator_for("CartPole-v1")(EnvContext({}, 0)).spec.id == "CartPole-v1"
    assert env_creator_for(CorridorEnv)(ctx).get_task() == 9
    path = f"{__name__}:CorridorEnv"
    assert env_creator_for(path)(ctx).get_task() == 9
    register_env("corridor", lambda c: CorridorEnv(c))
    assert env_creator_for("corridor")(ctx).get_task() == 9
    with pytest.raises(ConfigError, match="neither a registered name nor a gymnasium id"):
        env_creator_for("NoSuchEnv-v9")
    with pytest.raises(ConfigError, match="not set"):
        env_creator_for(None)
