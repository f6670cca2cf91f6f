"""Minari datasets as offline input (``MinariReader``) and output (``MinariWriter``): datasets
made with Minari's own API in a temporary root are read as our samplers' rows, and batches
written come back from ``minari.load_dataset`` and from the reader as they went in."""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

minari = pytest.importorskip("minari")
# Datasets made here have no env (Minari warns about it).
pytestmark = pytest.mark.filterwarnings("ignore:env_spec is None:UserWarning")

from runtime.core.multi_agent_batch import MultiAgentBatch  # noqa: E402
from runtime.core.sample_batch import SampleBatch as SB  # noqa: E402
from runtime.env.filters import MeanStdFilter  # noqa: E402
from runtime.offline.io_context import IOContext  # noqa: E402
from runtime.offline.minari_input import (  # noqa: E402
    MinariReader,
    observation_rows,
    row_observation_space,
)
from runtime.offline.minari_output import MinariWriter, worker_dataset_id  # noqa: E402

OBS_SPACE = gym.spaces.Box(-1000.0, 1000.0, (2,), np.float32)
ACTION_SPACE = gym.spaces.Discrete(3)
LENGTHS = [3, 5, 2, 4]


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "minari"
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(path))
    return path


def _episode_buffer(index: int, steps: int, infos: bool = True) -> Any:
    """Episode ``index``: observation t is [100 * index + t, -t], action t % 3, reward index +
    t / 10; odd episodes are truncated, even ones terminate. ``infos``: the step count (not in
    arrow datasets: Minari 0.5.4 writes 1-D info arrays there that it can't read back)."""
    observations = np.array([[100.0 * index + t, -t] for t in range(steps + 1)], np.float32)
    ends = np.zeros(steps, dtype=bool)
    ends[-1] = True
    return minari.data_collector.EpisodeBuffer(
        observations=observations,
        actions=np.arange(steps, dtype=np.int64) % 3,
        rewards=(index + np.arange(steps) / 10.0).astype(np.float64),
        terminations=ends if index % 2 == 0 else np.zeros(steps, dtype=bool),
        truncations=ends if index % 2 == 1 else np.zeros(steps, dtype=bool),
        infos={"step": np.arange(steps + 1)} if infos else None,
    )


def _create(
    dataset_id: str, buffers: list[Any], obs_space: Any, action_space: Any, **kw: Any
) -> Any:
    return minari.create_dataset_from_buffers(
        dataset_id,
        buffers,
        observation_space=obs_space,
        action_space=action_space,
        algorithm_name="test",
        author="rlconf tests",
        author_email="tests@example.invalid",
        code_permalink="https://example.invalid",
        description="a test dataset",
        eval_env="CartPole-v1",
        **kw,
    )


def _make_dataset(dataset_id: str = "tests/small-v0", data_format: str = "hdf5") -> Any:
    infos = data_format == "hdf5"
    buffers = [_episode_buffer(i, n, infos) for i, n in enumerate(LENGTHS)]
    return _create(dataset_id, buffers, OBS_SPACE, ACTION_SPACE, data_format=data_format)


def _ioctx(worker_index: int, num_workers: int, **worker: Any) -> IOContext:
    fake = SimpleNamespace(num_workers=num_workers, settings=SimpleNamespace(seed=3), **worker)
    return IOContext(worker_index=worker_index, worker=fake)


def _episodes(batch: SB) -> list[SB]:
    return batch.split_by_episode()


# ----------------------------------------------------------------------------- reading


@pytest.mark.parametrize("data_format", ["hdf5", "arrow"])
def test_reader_rows_are_the_samplers_columns(root: Path, data_format: str) -> None:
    _make_dataset(data_format=data_format)
    infos = data_format == "hdf5"
    reader = MinariReader("minari://tests/small-v0", batch_size=6, include_infos=infos)
    batch = reader.next()
    assert isinstance(batch, SB)
    # Whole episodes until at least 6 rows: 3 + 5.
    assert len(batch) == 8
    assert batch[SB.OBS].dtype == np.float32 and batch[SB.OBS].shape == (8, 2)
    assert batch[SB.NEXT_OBS].dtype == np.float32
    assert batch[SB.REWARDS].dtype == np.float32
    assert batch[SB.TERMINATEDS].dtype == bool and batch[SB.TRUNCATEDS].dtype == bool
    assert batch[SB.ACTIONS].dtype == np.int64
    assert batch[SB.EPS_ID].tolist() == [0] * 3 + [1] * 5
    assert batch[SB.T].tolist() == [0, 1, 2, 0, 1, 2, 3, 4]
    first, second = _episodes(batch)
    np.testing.assert_array_equal(first[SB.OBS][:, 0], [0, 1, 2])
    np.testing.assert_array_equal(first[SB.NEXT_OBS][:, 0], [1, 2, 3])
    np.testing.assert_array_equal(second[SB.OBS][:, 0], [100, 101, 102, 103, 104])
    np.testing.assert_allclose(second[SB.REWARDS], 1 + np.arange(5) / 10.0, rtol=1e-6)
    assert first[SB.TERMINATEDS].tolist() == [False, False, True]
    assert not first[SB.TRUNCATEDS].any()
    assert second[SB.TRUNCATEDS].tolist() == [False] * 4 + [True]
    assert not second[SB.TERMINATEDS].any()
    np.testing.assert_array_equal(first[SB.ACTIONS], [0, 1, 2])
    # The info of each row's step (Minari keeps the reset's first).
    if infos:
        assert [info["step"] for info in first[SB.INFOS]] == [1, 2, 3]
    else:
        assert SB.INFOS not in batch
    assert reader.observation_space == gym.spaces.Box(-np.inf, np.inf, (2,), np.float32)
    assert reader.action_space == ACTION_SPACE


def test_reader_cycles_with_new_episode_ids(root: Path) -> None:
    _make_dataset()
    reader = MinariReader("tests/small-v0", batch_size=1)
    ids = [int(reader.next()[SB.EPS_ID][0]) for _ in range(3 * len(LENGTHS))]
    # First pass in the dataset's order, with its episode ids.
    assert ids[:4] == [0, 1, 2, 3]
    # Later passes: every episode once, in some order, under ids of their own.
    assert sorted(ids[4:8]) == [4, 5, 6, 7]
    assert sorted(ids[8:]) == [8, 9, 10, 11]
    assert len(set(ids)) == len(ids)
    # A batch larger than the dataset holds the episodes more than once, each its own.
    big = MinariReader("tests/small-v0", batch_size=20).next()
    assert len(big) >= 20
    assert len(_episodes(big)) == len(set(big[SB.EPS_ID].tolist()))


def test_reader_splits_episodes_between_remote_workers(root: Path) -> None:
    _make_dataset()

    def first_pass(worker_index: int, num_workers: int) -> list[int]:
        reader = MinariReader("tests/small-v0", _ioctx(worker_index, num_workers), batch_size=1)
        return [int(reader.next()[SB.EPS_ID][0]) for _ in range(len(reader.episodes))]

    assert first_pass(1, 2) == [0, 2]
    assert first_pass(2, 2) == [1, 3]
    # The local worker, and a remote one without a share of its own, read everything.
    assert first_pass(0, 2) == [0, 1, 2, 3]
    assert first_pass(5, 5) == [0, 1, 2, 3]


def test_reader_flattens_dict_and_tuple_observations(root: Path) -> None:
    space = gym.spaces.Dict(
        {
            "pos": gym.spaces.Box(-5.0, 5.0, (2,), np.float32),
            "mode": gym.spaces.Discrete(3, start=1),
            "parts": gym.spaces.Tuple(
                (gym.spaces.MultiDiscrete([2, 3]), gym.spaces.MultiBinary(2))
            ),
        }
    )
    space.seed(0)
    steps = 4
    samples = [space.sample() for _ in range(steps + 1)]
    observations = {
        "pos": np.stack([s["pos"] for s in samples]),
        "mode": np.array([s["mode"] for s in samples]),
        "parts": (
            np.stack([s["parts"][0] for s in samples]),
            np.stack([s["parts"][1] for s in samples]),
        ),
    }
    buffer = minari.data_collector.EpisodeBuffer(
        observations=observations,
        actions=np.zeros((steps, 1), np.float32),
        rewards=np.ones(steps),
        terminations=np.array([False, False, False, True]),
        truncations=np.zeros(steps, bool),
    )
    _create("tests/dict-v0", [buffer], space, gym.spaces.Box(-1, 1, (1,), np.float32))
    reader = MinariReader("minari://tests/dict-v0", batch_size=1)
    batch = reader.next()
    flat: list[Any] = [gym.spaces.flatten(space, s) for s in samples]
    expected = np.stack(flat).astype(np.float32)
    np.testing.assert_array_equal(batch[SB.OBS], expected[:-1])
    np.testing.assert_array_equal(batch[SB.NEXT_OBS], expected[1:])
    assert reader.observation_space.shape == (gym.spaces.flatdim(space),)
    assert batch[SB.ACTIONS].dtype == np.float32 and batch[SB.ACTIONS].shape == (4, 1)


def test_unsupported_spaces_are_refused_by_name() -> None:
    with pytest.raises(ValueError, match="Text"):
        row_observation_space(gym.spaces.Text(5), "dataset 'x'")
    with pytest.raises(ValueError, match="Sequence"):
        observation_rows(
            gym.spaces.Sequence(gym.spaces.Discrete(2)), [(0,), (1,)], 2, "dataset 'x'"
        )


def test_missing_dataset_names_the_id_and_the_root(root: Path) -> None:
    _make_dataset()
    with pytest.raises(FileNotFoundError) as error:
        MinariReader("minari://tests/absent-v0")
    message = str(error.value)
    assert "tests/absent-v0" in message
    assert str(root) in message
    assert "tests/small-v0" in message  # what is there


def test_missing_minari_says_how_to_install(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "minari", None)
    with pytest.raises(ImportError) as error:
        MinariReader("minari://tests/small-v0")
    message = str(error.value)
    assert "pip install 'rlconf[minari]'" in message
    assert "minari://tests/small-v0" in message
    assert str(root) in message
    with pytest.raises(ImportError, match=r"rlconf\[minari\]"):
        MinariWriter("minari://tests/out-v0", action_space=ACTION_SPACE)


def test_bad_ids_and_settings_are_refused(root: Path) -> None:
    with pytest.raises(ValueError, match="version"):
        MinariWriter("minari://tests/out", action_space=ACTION_SPACE)
    with pytest.raises(ValueError, match="not name a Minari dataset"):
        MinariReader("minari://bad id!")
    with pytest.raises(ValueError, match="batch_size"):
        MinariReader("tests/small-v0", batch_size=0)
    with pytest.raises(ValueError, match="data_format='csv'"):
        MinariWriter("tests/out-v0", action_space=ACTION_SPACE, data_format="csv")
    with pytest.raises(ValueError, match="action space"):
        MinariWriter("tests/out-v0")


# ----------------------------------------------------------------------------- writing


def _rows(eps_id: int, ts: list[int], end: str | None = None) -> dict[str, np.ndarray]:
    """Rows of episode ``eps_id`` at steps ``ts`` (a CartPole-like Box(4) / Discrete(2));
    ``end``: 'terminated' or 'truncated' on the last row."""
    t = np.asarray(ts, dtype=np.int64)
    obs = np.stack([np.array([eps_id, s, 0.5 * s, -s], np.float32) for s in ts])
    new_obs = np.stack([np.array([eps_id, s + 1, 0.5 * (s + 1), -s - 1], np.float32) for s in ts])
    flags = {"terminated": np.zeros(len(ts), bool), "truncated": np.zeros(len(ts), bool)}
    if end is not None:
        flags[end][-1] = True
    return {
        SB.OBS: obs,
        SB.NEXT_OBS: new_obs,
        SB.ACTIONS: (t % 2).astype(np.int64),
        SB.REWARDS: np.full(len(ts), 1.0, np.float32) + t.astype(np.float32),
        SB.TERMINATEDS: flags["terminated"],
        SB.TRUNCATEDS: flags["truncated"],
        SB.EPS_ID: np.full(len(ts), eps_id, np.int64),
        SB.T: t,
        SB.ACTION_LOGP: np.zeros(len(ts), np.float32),
    }


def _batch(*parts: dict[str, np.ndarray]) -> SB:
    return SB({name: np.concatenate([p[name] for p in parts]) for name in parts[0]})


def test_round_trip_through_a_minari_dataset(root: Path, caplog: pytest.LogCaptureFixture) -> None:
    env = gym.make("CartPole-v1")
    writer = MinariWriter(
        "minari://tests/out-v0",
        observation_space=env.observation_space,
        action_space=env.action_space,
        env_id="CartPole-v1",
    )
    # Two sub-envs: episode 7 goes on into the next batch, 8 ends in the first, 9 never ends.
    writer.write(_batch(_rows(7, [0, 1, 2]), _rows(8, [0, 1], "terminated")))
    writer.write(_batch(_rows(7, [3, 4], "truncated"), _rows(9, [0, 1])))
    # Not there before close(): being written in a hidden folder.
    assert not (root / "tests" / "out-v0").exists()
    assert "tests/out-v0" not in minari.list_local_datasets()
    with caplog.at_level(logging.WARNING, logger="runtime.offline.minari_output"):
        writer.close()
    assert "1 unfinished episodes (2 rows)" in caplog.text
    assert not list(root.glob(".rlconf-partial-*"))
    writer.close()  # idempotent

    dataset = minari.load_dataset("tests/out-v0")
    assert dataset.total_episodes == 2 and dataset.total_steps == 7
    assert dataset.observation_space == env.observation_space
    assert dataset.action_space == env.action_space
    assert dataset.spec.env_spec.id == "CartPole-v1"
    assert "tests/out-v0" in minari.list_local_datasets()
    # Episodes in the order they ended: 8, then 7.
    eight, seven = list(dataset.iterate_episodes())
    expected7 = _rows(7, [0, 1, 2, 3, 4], "truncated")
    np.testing.assert_array_equal(
        seven.observations, np.concatenate([expected7[SB.OBS], expected7[SB.NEXT_OBS][-1:]])
    )
    np.testing.assert_array_equal(seven.actions, expected7[SB.ACTIONS])
    np.testing.assert_array_equal(seven.rewards, expected7[SB.REWARDS])
    assert seven.truncations.tolist() == [False] * 4 + [True]
    assert not seven.terminations.any()
    assert eight.terminations.tolist() == [False, True]

    batch = MinariReader("minari://tests/out-v0", batch_size=7).next()
    read8, read7 = _episodes(batch)
    for read, rows in ((read7, expected7), (read8, _rows(8, [0, 1], "terminated"))):
        for name in (SB.OBS, SB.NEXT_OBS, SB.ACTIONS, SB.REWARDS, SB.TERMINATEDS, SB.TRUNCATEDS):
            np.testing.assert_array_equal(read[name], rows[name], err_msg=name)
            assert read[name].dtype == rows[name].dtype, name
        np.testing.assert_array_equal(read[SB.T], rows[SB.T])


@pytest.mark.parametrize("data_format", ["hdf5", "arrow"])
def test_writer_formats_and_existing_datasets(root: Path, data_format: str) -> None:
    space = gym.spaces.Box(-np.inf, np.inf, (4,), np.float32)
    with MinariWriter(
        "out-v1",
        observation_space=space,
        action_space=gym.spaces.Discrete(2),
        data_format=data_format,
    ) as writer:
        writer.write(_batch(_rows(1, [0, 1, 2], "terminated")))
    dataset = minari.load_dataset("out-v1")
    stored_format = dataset.storage.FORMAT
    assert stored_format == data_format
    assert dataset.total_steps == 3
    with pytest.raises(FileExistsError, match="out-v1"):
        MinariWriter(
            "minari://out-v1", observation_space=space, action_space=gym.spaces.Discrete(2)
        )


def test_no_finished_episode_writes_no_dataset(root: Path) -> None:
    writer = MinariWriter("tests/empty-v0", action_space=gym.spaces.Discrete(2))
    writer.write(_batch(_rows(1, [0, 1])))
    writer.close()
    assert not (root / "tests" / "empty-v0").exists()
    assert not list(root.glob(".rlconf-partial-*"))


def test_remote_workers_write_parts_read_as_one(root: Path) -> None:
    assert worker_dataset_id("ns/data-v2", 0, 0) == "ns/data-v2"
    assert worker_dataset_id("ns/data-v2", 3, 4) == "ns/data-worker3-v2"
    space = gym.spaces.Box(-np.inf, np.inf, (4,), np.float32)
    for index in (1, 2):
        ioctx = _ioctx(index, 2, observation_space=space, action_space=gym.spaces.Discrete(2))
        writer = MinariWriter("minari://tests/multi-v0", ioctx)
        assert writer.dataset_id == f"tests/multi-worker{index}-v0"
        writer.write(_batch(_rows(10 * index, [0, 1], "terminated")))
        writer.close()
    reader = MinariReader("minari://tests/multi-v0", batch_size=4)
    assert [s.dataset_id for s in reader.sources] == [
        "tests/multi-worker1-v0",
        "tests/multi-worker2-v0",
    ]
    batch = reader.next()
    assert sorted(set(batch[SB.OBS][:, 0].tolist())) == [10.0, 20.0]
    assert batch[SB.EPS_ID].tolist() == [0, 0, 1, 1]
    combined = minari.combine_datasets(
        [minari.load_dataset(s.dataset_id) for s in reader.sources], "tests/multi-v0"
    )
    assert combined.total_episodes == 2


def test_policy_actions_are_written_as_env_actions(root: Path) -> None:
    action_space = gym.spaces.Box(-2.0, 4.0, (1,), np.float32)
    worker = {
        "observation_space": gym.spaces.Box(-1.0, 1.0, (4,), np.float32),
        "action_space": action_space,
        "filters": {"default_policy": MeanStdFilter((4,))},
    }
    ioctx = _ioctx(0, 0, **worker)
    ioctx.config = {"normalize_actions": True, "clip_actions": False}
    writer = MinariWriter("tests/actions-v0", ioctx)
    rows = _rows(1, [0, 1, 2], "terminated")
    rows[SB.ACTIONS] = np.array([[-1.0], [0.0], [1.5]], np.float32)
    writer.write(MultiAgentBatch({"default_policy": _batch(rows)}, 3))
    writer.close()
    dataset = minari.load_dataset("tests/actions-v0")
    episode = next(iter(dataset.iterate_episodes()))
    # Unsquashed from [-1, 1] onto [-2, 4] (clipped first), as the env received them.
    np.testing.assert_allclose(episode.actions[:, 0], [-2.0, 1.0, 4.0])
    assert dataset.action_space == action_space
    # A filter changes the rows: the dataset says so with an unbounded space.
    assert dataset.observation_space == gym.spaces.Box(-np.inf, np.inf, (4,), np.float32)
    read = MinariReader("tests/actions-v0", batch_size=1).next()
    np.testing.assert_allclose(read[SB.ACTIONS][:, 0], [-2.0, 1.0, 4.0])


def test_writer_refuses_rows_it_cannot_place(root: Path) -> None:
    writer = MinariWriter("tests/bad-v0", action_space=gym.spaces.Discrete(2))
    rows = _rows(1, [0, 1])
    del rows[SB.NEXT_OBS]
    with pytest.raises(ValueError, match="new_obs"):
        writer.write(_batch(rows))
    writer.write(_batch(_rows(2, [0, 1])))
    with pytest.raises(ValueError, match="not in time order"):
        writer.write(_batch(_rows(2, [5], "terminated")))
    two_policies = MultiAgentBatch({"a": _batch(_rows(3, [0])), "b": _batch(_rows(4, [0]))}, 1)
    with pytest.raises(ValueError, match="one agent"):
        writer.write(two_policies)
    writer.discard()
    assert not list(root.glob(".rlconf-partial-*"))
