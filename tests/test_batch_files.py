"""Episode traces: ``output`` writes sampled batches as JSON lines, ``input`` trains on them."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from rlconf import ConfigError, PGConfig
from runtime.core.multi_agent_batch import MultiAgentBatch
from runtime.core.sample_batch import SampleBatch
from runtime.offline.batch_files import decode_batch, encode_batch
from runtime.offline.json_reader import JsonReader


def _pg(**offline: object) -> PGConfig:
    return (
        PGConfig()
        .environment("CartPole-v1")
        .rollouts(num_workers=0, num_envs_per_worker=2, rollout_fragment_length=50)
        .training(train_batch_size=100)
        .offline_data(**offline)  # type: ignore[arg-type]
        .debugging(seed=0)
    )


def test_a_batch_survives_the_round_trip_with_and_without_compression() -> None:
    infos = np.empty(2, dtype=object)
    infos[:] = [{"a": 1}, {}]
    batch = SampleBatch(
        {
            "obs": np.arange(8, dtype=np.float32).reshape(2, 4),
            "actions": np.array([0, 1]),
            "rewards": np.array([1.0, 0.5], dtype=np.float32),
            "infos": infos,
        }
    )
    for compress in ([], ["obs", "infos"]):
        line = encode_batch(batch, compress)
        back = decode_batch(line)
        assert isinstance(back, SampleBatch)
        for name in ("obs", "actions", "rewards"):
            assert np.array_equal(back[name], batch[name])
            assert back[name].dtype == batch[name].dtype  # with and without compression
        assert list(back["infos"]) == [{"a": 1}, {}]
    assert "npy_zlib_b64" in json.loads(encode_batch(batch, ["obs"]))["obs"]


def test_output_writes_every_sampled_batch_and_rolls_files(tmp_path: Path) -> None:
    algo = _pg(output=str(tmp_path), output_max_file_size=20_000).build()
    try:
        for _ in range(3):
            algo.train()
    finally:
        algo.stop()
    files = sorted(tmp_path.glob("output-*_worker-0_*.json"))
    assert len(files) > 1  # rolled over at output_max_file_size
    lines = [line for f in files for line in f.read_text().splitlines()]
    batches = [decode_batch(line) for line in lines]
    assert all(isinstance(b, SampleBatch) for b in batches)
    assert sum(len(b) for b in batches) == 300
    # written after postprocessing: ready to train on
    first = batches[0]
    assert isinstance(first, SampleBatch)
    assert {"obs", "actions", "advantages"} <= set(first.columns)
    assert json.loads(lines[0])["obs"]["npy_zlib_b64"]  # obs compressed by default


def test_output_logdir_writes_into_the_results_directory() -> None:
    algo = _pg(output="logdir").build()
    try:
        algo.train()
        assert list(Path(algo.logdir).glob("output-*.json"))
    finally:
        algo.stop()


def test_train_from_the_files_pg_wrote(tmp_path: Path) -> None:
    writer = _pg(output=str(tmp_path)).build()
    try:
        for _ in range(4):
            writer.train()
    finally:
        writer.stop()
    reader_config = _pg(input_=str(tmp_path / "*.json"))
    algo = reader_config.build()
    try:
        before = algo.get_weights()["default_policy"]
        results = [algo.train() for _ in range(3)]
        after = algo.get_weights()["default_policy"]
    finally:
        algo.stop()
    assert [r["timesteps_total"] for r in results] == [100, 200, 300]
    assert np.isfinite(
        results[-1]["info"]["learner"]["default_policy"]["learner_stats"]["policy_loss"]
    )
    assert any(not np.array_equal(before[k], after[k]) for k in before)
    # the reader goes through the files and starts over at the end
    reader = JsonReader(str(tmp_path))
    first = reader.next()
    assert isinstance(first, SampleBatch)
    seen = [reader.next() for _ in range(7)]
    again = reader.next()
    assert isinstance(again, SampleBatch)
    assert not any(isinstance(b, MultiAgentBatch) for b in seen)
    assert sorted(len(b) for b in [first, *seen]) == [100] * 8


def test_bad_input_and_output_settings_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"input=.*none-\*\.json.*no glob matching a file"):
        _pg(input_=str(tmp_path / "none-*.json")).build()
    with pytest.raises(FileNotFoundError, match="no files found"):
        JsonReader(str(tmp_path / "none-*.json"))
    (tmp_path / "bad.json").write_text("{oops\n")
    algo = _pg(input_=str(tmp_path / "bad.json")).build()
    try:
        with pytest.raises(ValueError, match=r"bad.json:1: not a JSON line"):
            algo.train()
    finally:
        algo.stop()
