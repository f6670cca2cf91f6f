"""``MultiAgentBatch``: wrapping, env vs agent steps, concatenation; and learning on either a
SampleBatch or a MultiAgentBatch through the rollout worker and the algorithm."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from rlconf import PGConfig
from runtime import PG, DefaultCallbacks, MultiAgentBatch, SampleBatch
from runtime.core.sample_batch import SampleBatch as SB


def _rows(start: int, count: int) -> SampleBatch:
    """``count`` rows whose ``t`` column runs from ``start``."""
    return SampleBatch(
        {
            SB.T: np.arange(start, start + count),
            SB.REWARDS: np.full(count, float(start), np.float32),
        }
    )


# ---------------------------------------------------------------------------- the batch


def test_wrap_keys_a_sample_batch_by_default_policy_and_keeps_a_multi_agent_batch() -> None:
    batch = _rows(0, 3)
    wrapped = MultiAgentBatch.wrap(batch)
    assert list(wrapped) == ["default_policy"]
    assert wrapped["default_policy"] is batch
    assert "default_policy" in wrapped and "other" not in wrapped
    assert wrapped.env_steps() == wrapped.agent_steps() == len(wrapped) == 3
    assert MultiAgentBatch.wrap(wrapped) is wrapped


def test_env_steps_and_agent_steps_are_counted_apart() -> None:
    # 5 env steps of a two-agent env: agent "a" acted in 3 of them, agent "b" in all 5.
    batch = MultiAgentBatch({"a": _rows(0, 3), "b": _rows(0, 5)}, env_steps=5)
    assert batch.env_steps() == 5
    assert len(batch) == 5
    assert batch.agent_steps() == 8
    assert dict(batch.items()) == {"a": batch["a"], "b": batch["b"]}
    assert repr(batch) == "MultiAgentBatch(5 env steps; a: 3, b: 5)"


def test_unknown_policy_id_names_the_known_ones() -> None:
    batch = MultiAgentBatch({"a": _rows(0, 1), "b": _rows(0, 1)}, env_steps=1)
    with pytest.raises(KeyError, match=r"no batch for policy 'c'; policies: a, b"):
        batch["c"]


def test_concat_samples_joins_each_policys_rows_in_order_and_sums_env_steps() -> None:
    first = MultiAgentBatch({"a": _rows(0, 2), "b": _rows(100, 3)}, env_steps=3)
    second = MultiAgentBatch({"a": _rows(2, 1)}, env_steps=1)
    single = _rows(1000, 4)  # a SampleBatch counts as the default policy's
    third = MultiAgentBatch({"b": _rows(103, 2)}, env_steps=2)

    joined = MultiAgentBatch.concat_samples([first, second, single, third])
    assert set(joined) == {"a", "b", "default_policy"}
    assert joined["a"][SB.T].tolist() == [0, 1, 2]
    assert joined["b"][SB.T].tolist() == [100, 101, 102, 103, 104]
    assert joined["default_policy"][SB.T].tolist() == [1000, 1001, 1002, 1003]
    assert joined.env_steps() == 3 + 1 + 4 + 2
    assert joined.agent_steps() == 3 + 5 + 4
    # Columns travel with their rows.
    assert joined["b"][SB.REWARDS].tolist() == [100.0] * 3 + [103.0] * 2


# ---------------------------------------------------------------------------- learning


class LearnCallbacks(DefaultCallbacks):
    """Adds to the learner info of every learn_on_batch."""

    def on_learn_on_batch(
        self, *, policy: Any, train_batch: Any, result: dict[str, Any], **kwargs: Any
    ) -> None:
        result["rows_seen"] = len(train_batch)


@pytest.fixture(scope="module")
def algo() -> Iterator[PG]:
    algorithm = (
        PGConfig()
        .environment("CartPole-v1")
        .rollouts(num_workers=0, rollout_fragment_length=50)
        .training(train_batch_size=100, model={"fcnet_hiddens": [8]})
        .callbacks(LearnCallbacks)
        .debugging(seed=0)
        .build()
    )
    assert isinstance(algorithm, PG)
    yield algorithm
    algorithm.stop()


def _weights(algo: PG) -> dict[str, Any]:
    weights: dict[str, Any] = algo.workers.local_worker().get_policy().get_weights()
    return weights


def _assert_learner_info(info: dict[str, Any], rows: int) -> None:
    assert set(info) == {"default_policy"}
    policy_info = info["default_policy"]
    assert isinstance(policy_info["learner_stats"]["policy_loss"], float)
    assert policy_info["learner_stats"]["cur_lr"] == pytest.approx(0.0004)
    assert policy_info["rows_seen"] == rows


def test_sample_train_batch_is_a_multi_agent_batch_of_the_default_policy(algo: PG) -> None:
    batch = algo.sample_train_batch()
    assert isinstance(batch, MultiAgentBatch)
    assert list(batch) == ["default_policy"]
    assert batch.env_steps() == batch.agent_steps() >= 100
    assert SB.ADVANTAGES in batch["default_policy"]


def test_rollout_worker_learns_on_a_sample_batch_and_a_multi_agent_batch(algo: PG) -> None:
    worker = algo.workers.local_worker()
    batch = algo.sample_train_batch()
    rows = batch.agent_steps()
    updates = worker.get_policy().learner.num_grad_updates

    before = _weights(algo)
    info = worker.learn_on_batch(batch)
    _assert_learner_info(info, rows)
    assert info["default_policy"]["num_grad_updates"] == updates + 1
    after = _weights(algo)
    assert any(not np.array_equal(before[k], after[k]) for k in before)

    info = worker.learn_on_batch(batch["default_policy"])  # a plain SampleBatch
    _assert_learner_info(info, rows)
    assert info["default_policy"]["num_grad_updates"] == updates + 2
    assert any(not np.array_equal(after[k], v) for k, v in _weights(algo).items())


def test_algorithm_learns_on_a_sample_batch_and_a_multi_agent_batch(algo: PG) -> None:
    batch = algo.sample_train_batch()
    rows = batch.agent_steps()

    before = _weights(algo)
    _assert_learner_info(algo.learn_on_batch(batch), rows)
    middle = _weights(algo)
    assert any(not np.array_equal(before[k], middle[k]) for k in before)
    _assert_learner_info(algo.learn_on_batch(batch["default_policy"]), rows)
    assert any(not np.array_equal(middle[k], v) for k, v in _weights(algo).items())


def test_learning_on_a_batch_of_an_unknown_policy_names_the_policies(algo: PG) -> None:
    batch = MultiAgentBatch({"nobody": algo.sample_train_batch()["default_policy"]}, 100)
    with pytest.raises(KeyError, match=r"no policy 'nobody'; policies: default_policy"):
        algo.learn_on_batch(batch)
