"""Replay buffers hold image observations as frames, each distinct frame once
(``runtime.buffers.frame_store``, ``frame_pool``): stacked sub-env trajectories (episode
boundaries, n-step rows, rows in any order) read back exactly through ``sample``, ``_storage``,
prioritized sampling and saved states; overwritten rows free their frames and the pool reuses
them; 84x84x4 stacked frames take about one frame per transition (SB3's memory-optimized buffer
takes the whole 28,224-byte observation); a million-row buffer allocates only what its rows
use; and RLlib's ``compress_observations`` is accepted."""

from __future__ import annotations

import resource
import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rlconf.algorithms.dqn import DQNConfig
from runtime.buffers import PrioritizedReplayBuffer, ReplayBuffer, frame_pool
from runtime.buffers.frame_pool import MIN_CHUNK_BYTES, FramePool
from runtime.buffers.frame_store import FRAMES_KEY, ROWS_KEY_PREFIX
from runtime.buffers.multi_agent_replay_buffer import MultiAgentReplayBuffer
from runtime.buffers.prioritized_replay_buffer import PRIORITIES_KEY
from runtime.core.multi_agent_batch import MultiAgentBatch
from runtime.core.sample_batch import SampleBatch
from runtime.training.checkpoint_files import read_arrays, write_arrays
from runtime.training.unsupported import NO_EFFECT, REFUSED, refuse_unsupported
from tests.fake_atari import FakeAtariEnv

SB = SampleBatch
Frames = npt.NDArray[np.uint8]
#: What SB3's DQN with optimize_memory_usage=True holds per transition: one 84x84x4 observation.
SB3_BYTES_PER_TRANSITION = 84 * 84 * 4


class StackedEnvs:
    """Sub-envs whose observations stack their last ``channels`` frames on the last axis (the
    DeepMind wrappers' layout), every frame new and random, episodes of random lengths; a reset
    observation repeats its first frame on every channel (gymnasium's padding)."""

    def __init__(
        self,
        num_envs: int,
        size: tuple[int, int] = (84, 84),
        channels: int = 4,
        episode_steps: tuple[int, int] = (20, 200),
        seed: int = 0,
    ) -> None:
        self.rng = np.random.default_rng(seed)
        self.size, self.channels, self.episode_steps = size, channels, episode_steps
        self.eps_id = 0
        self.stacks = [self._reset() for _ in range(num_envs)]

    def _reset(self) -> tuple[Frames, int, int]:
        frame = self.rng.integers(0, 256, (*self.size, 1), dtype=np.uint8)
        self.eps_id += 1
        return np.repeat(frame, self.channels, axis=-1), self.eps_id, self._length()

    def _length(self) -> int:
        return int(self.rng.integers(*self.episode_steps, endpoint=True))

    def fragment(self, steps: int, n_step: int = 1, shuffle: bool = False) -> SampleBatch:
        """``steps`` rows of each sub-env, sub-env after sub-env (as the runtime's fragments),
        with n-step ``new_obs`` (the observation ``n_step`` steps on, or where the episode
        ends within the fragment); ``shuffle``: the rows in a random order."""
        columns: dict[str, list[Any]] = {k: [] for k in ("obs", "new_obs", "eps", "done", "env")}
        for env, (stack, eps_id, left) in enumerate(self.stacks):
            obs, new_obs, done = [], [], []
            for _ in range(steps):
                frame = self.rng.integers(0, 256, (*self.size, 1), dtype=np.uint8)
                following = np.concatenate([stack[..., 1:], frame], axis=-1)
                left -= 1
                obs.append(stack)
                new_obs.append(following)
                done.append(left == 0)
                columns["eps"].append(eps_id)
                columns["env"].append(env)
                stack = following
                if left == 0:
                    stack, eps_id, left = self._reset()
            self.stacks[env] = (stack, eps_id, left)
            for t in range(steps):
                last = t
                while last < min(t + n_step - 1, steps - 1) and not done[last]:
                    last += 1
                columns["new_obs"].append(new_obs[last])
            columns["obs"].extend(obs)
            columns["done"].extend(done)
        rows = len(columns["obs"])
        order = self.rng.permutation(rows) if shuffle else np.arange(rows)
        batch = {
            SB.OBS: np.stack(columns["obs"]),
            SB.NEXT_OBS: np.stack(columns["new_obs"]),
            SB.ACTIONS: self.rng.integers(0, 4, rows),
            SB.REWARDS: self.rng.random(rows, dtype=np.float32),
            SB.TERMINATEDS: np.array(columns["done"]),
            SB.TRUNCATEDS: np.zeros(rows, dtype=bool),
            SB.EPS_ID: np.array(columns["eps"]),
            "env_id": np.array(columns["env"]),
            "t": np.arange(rows),
            "n_step_gamma": np.full(rows, 0.99, dtype=np.float32),
        }
        return SampleBatch({k: v[order] for k, v in batch.items()})


def _oldest_first(buffer: ReplayBuffer) -> dict[str, npt.NDArray[Any]]:
    """The stored rows, oldest first, with the image columns rebuilt from the saved frames."""
    _, arrays = buffer.get_state()
    arrays.pop(PRIORITIES_KEY, None)
    frames = arrays.pop(FRAMES_KEY, None)
    for name in (SB.OBS, SB.NEXT_OBS):
        numbers = arrays.pop(ROWS_KEY_PREFIX + name, None)
        if numbers is not None:
            assert frames is not None
            arrays[name] = np.moveaxis(frames[numbers], 1, -1)
    return arrays


def _slot_position(buffer: ReplayBuffer, slots: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """The position of each slot's row among the rows oldest first."""
    oldest = (buffer._next - len(buffer)) % buffer.capacity
    position: npt.NDArray[np.int64] = (slots - oldest) % buffer.capacity
    return position


def _distinct_frames(rows: dict[str, npt.NDArray[Any]]) -> int:
    planes = [np.moveaxis(rows[name], -1, 1) for name in (SB.OBS, SB.NEXT_OBS)]
    frames = np.concatenate(planes, axis=1)
    return len({frame.tobytes() for frame in frames.reshape(-1, *frames.shape[2:])})


def _assert_holds(buffer: ReplayBuffer, expected: dict[str, npt.NDArray[Any]]) -> None:
    """``buffer`` holds exactly ``expected`` (oldest first), each distinct frame once, and
    sampling, ``_storage`` and ``stored_bytes`` agree with it."""
    stored = _oldest_first(buffer)
    assert sorted(stored) == sorted(expected)
    for name, values in expected.items():
        # np.array_equal: assert_array_equal's checks cost seconds on 100 MB of frames.
        assert np.array_equal(stored[name], values), name
        assert stored[name].dtype == values.dtype, name
    batch = buffer.sample(16)
    rows = _slot_position(buffer, batch["batch_indexes"])
    for name in (SB.OBS, SB.NEXT_OBS, SB.ACTIONS):
        assert batch[name].flags.c_contiguous and batch[name].dtype == expected[name].dtype
        assert np.array_equal(batch[name], expected[name][rows]), name
    slot = int(batch["batch_indexes"][0])
    np.testing.assert_array_equal(buffer._storage[slot][SB.OBS], expected[SB.OBS][rows[:1]])
    frames = buffer._frames
    assert frames is not None
    assert frames.pool.live_frames == _distinct_frames(expected)
    plain = sum(v[0].nbytes for k, v in expected.items() if k not in (SB.OBS, SB.NEXT_OBS))
    frame_bytes = frames.pool.frame_bytes
    row_bytes = plain + 4 * 2 * expected[SB.OBS].shape[-1]
    assert buffer.stored_bytes() == len(buffer) * row_bytes + frames.pool.live_frames * frame_bytes


# ------------------------------------------------------------------ exact rows, shared frames


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    num_envs=st.integers(1, 3),
    channels=st.integers(1, 4),
    steps=st.integers(1, 6),
    n_step=st.integers(1, 3),
    capacity=st.integers(1, 40),
    fragments=st.integers(1, 8),
    prioritized=st.booleans(),
    shuffle=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_interleaved_trajectories_read_back_exactly_with_each_live_frame_held_once(
    num_envs: int,
    channels: int,
    steps: int,
    n_step: int,
    capacity: int,
    fragments: int,
    prioritized: bool,
    shuffle: bool,
    seed: int,
) -> None:
    envs = StackedEnvs(num_envs, (8, 8), channels, episode_steps=(1, 5), seed=seed)
    buffer = PrioritizedReplayBuffer(capacity, seed=seed) if prioritized else ReplayBuffer(capacity)
    added: list[SampleBatch] = []
    for _ in range(fragments):
        batch = envs.fragment(steps, min(n_step, steps), shuffle)
        buffer.add(batch)
        added.append(batch)
        everything = SampleBatch.concat_samples(added)
        expected = {k: v[-capacity:] for k, v in everything.items()}
        _assert_holds(buffer, expected)
    assert buffer.num_added == sum(len(b) for b in added)


@pytest.mark.parametrize("hashing", ["all equal", "first byte"])
def test_rows_read_back_exactly_when_hashes_collide_or_frames_leave_the_recent_table(
    hashing: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A frame is shared only with a frame of equal bytes: with every hash equal, or hashes
    of one byte, and a table of 3 recent frames, rows still read back exactly."""

    def weak_hashes(self: FramePool, frames: Frames) -> npt.NDArray[np.uint64]:
        if hashing == "all equal":
            return np.zeros(len(frames), dtype=np.uint64)
        return frames[:, 0].astype(np.uint64)

    monkeypatch.setattr(FramePool, "hashes", weak_hashes)
    monkeypatch.setattr(frame_pool, "RECENT_FRAMES", 3)
    envs = StackedEnvs(3, (8, 8), 4, episode_steps=(1, 6), seed=8)
    buffer = ReplayBuffer(30, seed=0)
    added = []
    for _ in range(12):
        added.append(envs.fragment(4, n_step=2, shuffle=True))
        buffer.add(added[-1])
    expected = {k: v[-30:] for k, v in SampleBatch.concat_samples(added).items()}
    stored = _oldest_first(buffer)
    for name, values in expected.items():
        np.testing.assert_array_equal(stored[name], values, err_msg=name)
    rows = buffer.sample(64)
    position = _slot_position(buffer, rows["batch_indexes"])
    np.testing.assert_array_equal(rows[SB.NEXT_OBS], expected[SB.NEXT_OBS][position])


def test_overwritten_rows_free_their_frames_and_the_pool_reuses_the_slots() -> None:
    envs = StackedEnvs(4, seed=1)
    buffer = ReplayBuffer(100, seed=0)
    for _ in range(40):  # 1280 rows through 100 slots
        buffer.add(envs.fragment(8))
    frames = buffer._frames
    assert frames is not None
    assert 100 <= frames.pool.live_frames <= 120  # a new frame per row, and reset frames
    # Freed slots are reused: the first chunk is all the pool ever allocated.
    assert frames.pool.slots == MIN_CHUNK_BYTES // (84 * 84)
    expected = _oldest_first(buffer)
    assert frames.pool.live_frames == _distinct_frames(expected)


def test_prioritized_sampling_reads_the_prioritized_rows_frames() -> None:
    envs = StackedEnvs(2, seed=2)
    batch = envs.fragment(10, n_step=3)
    buffer = PrioritizedReplayBuffer(32, alpha=1.0, seed=0)
    buffer.add(batch)
    buffer.update_priorities(np.arange(20), np.zeros(20))
    buffer.update_priorities([7], [50.0])
    replayed = buffer.sample(64)
    assert (replayed["batch_indexes"] == 7).mean() > 0.9
    rows = replayed["batch_indexes"]
    np.testing.assert_array_equal(replayed[SB.OBS], batch[SB.OBS][rows])
    np.testing.assert_array_equal(replayed[SB.NEXT_OBS], batch[SB.NEXT_OBS][rows])
    weight_of_7 = ((50.0 + 1e-6) / 1e-6) ** -0.4  # (p / min p) ** -beta at alpha 1
    np.testing.assert_allclose(replayed["weights"][rows == 7], weight_of_7, rtol=1e-5)


# ------------------------------------------------------------------ bytes held


def test_stacked_84x84x4_frames_take_about_one_frame_per_transition() -> None:
    envs = StackedEnvs(8, seed=3)
    buffer = ReplayBuffer(5000, seed=0)
    added = [envs.fragment(4) for _ in range(50)]
    for batch in added:
        buffer.add(batch)
    assert len(buffer) == 1600
    assert len(buffer._frames.pool._chunks) > 1  # type: ignore[union-attr]
    _assert_holds(buffer, dict(SampleBatch.concat_samples(added)))
    per_transition = buffer.bytes_per_transition()
    assert per_transition <= 1.2 * SB3_BYTES_PER_TRANSITION
    # One new 7,056-byte frame per row, a reset frame per episode, 32 bytes of frame slots
    # and the scalar columns: about a quarter of SB3's bytes, an eighth of two full columns.
    assert per_transition < 7600
    assert buffer.stored_bytes() == per_transition * len(buffer)


def test_images_whose_frames_do_not_repeat_take_no_more_than_plain_columns() -> None:
    rng = np.random.default_rng(4)
    rows = 200
    images = rng.integers(0, 256, (rows + 1, 32, 32, 3), dtype=np.uint8)
    independent = SampleBatch(
        {
            SB.OBS: images[:-1],
            SB.NEXT_OBS: rng.integers(0, 256, (rows, 32, 32, 3), dtype=np.uint8),
            SB.ACTIONS: np.zeros(rows, dtype=np.int64),
        }
    )
    plain_row = 2 * 32 * 32 * 3 + 8
    buffer = ReplayBuffer(rows)
    buffer.add(independent)
    assert buffer.stored_bytes() == rows * (plain_row + 4 * 6)  # 2C frames, 4 bytes of slot each
    # Consecutive transitions (new_obs the next row's obs): each image once.
    consecutive = SampleBatch({**independent, SB.NEXT_OBS: images[1:]})
    chained = ReplayBuffer(rows)
    chained.add(consecutive)
    assert chained.stored_bytes() == rows * (8 + 4 * 6) + (rows + 1) * 32 * 32 * 3
    np.testing.assert_array_equal(chained.sample(8)[SB.NEXT_OBS].shape, (8, 32, 32, 3))


def test_images_of_another_shape_are_refused_before_any_row_is_written() -> None:
    envs = StackedEnvs(1, (8, 8), 4, seed=9)
    buffer = ReplayBuffer(10)
    first = envs.fragment(3)
    buffer.add(first)
    other = StackedEnvs(1, (8, 9), 4, seed=9).fragment(2)
    with pytest.raises(ValueError, match=r"column 'obs' has rows of shape \(8, 9, 4\)"):
        buffer.add(other)
    assert len(buffer) == 3 and buffer.num_added == 3
    _assert_holds(buffer, dict(first))


def test_a_million_row_buffer_allocates_only_what_its_rows_use() -> None:
    envs = StackedEnvs(8, seed=5)
    tracemalloc.start()
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    try:
        buffer = ReplayBuffer(1_000_000, seed=0)
        for _ in range(100):  # 3,200 rows
            buffer.add(envs.fragment(4))
        replayed = buffer.sample(32)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(buffer) == 3200 and replayed[SB.OBS].shape == (32, 84, 84, 4)
    # Two full (1M, 84, 84, 4) columns would be 56 GB; the plain columns' 1M-row arrays,
    # the frame slots and the first chunks of frames are a little over 100 MB.
    assert peak < 400 * 2**20
    assert buffer.stored_bytes() < 3200 * 7600
    rss_growth_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before
    assert rss_growth_kib < 400 * 2**10


def test_the_multi_agent_view_sums_its_buffers_bytes() -> None:
    envs = StackedEnvs(2, seed=6)
    buffers = {"a": ReplayBuffer(50), "b": ReplayBuffer(50)}
    view = MultiAgentReplayBuffer(buffers, buffers.__getitem__)
    view.add(MultiAgentBatch({"a": envs.fragment(5)}, 10))
    buffers["b"].add(envs.fragment(3))
    assert view.stored_bytes() == buffers["a"].stored_bytes() + buffers["b"].stored_bytes() > 0
    assert view.stats()["b"]["est_size_bytes"] == buffers["b"].stored_bytes()


# ------------------------------------------------------------------ saved states


def test_states_restore_rows_bitwise_and_frames_once(tmp_path: Path) -> None:
    envs = StackedEnvs(3, seed=7, episode_steps=(3, 12))
    buffer = PrioritizedReplayBuffer(50, alpha=0.5, seed=1)
    for _ in range(8):  # 96 rows through 50 slots
        buffer.add(envs.fragment(4, n_step=2))
    buffer.update_priorities(np.arange(50), np.linspace(0.1, 3.0, 50))
    meta, arrays = buffer.get_state()
    assert SB.OBS not in arrays and arrays[FRAMES_KEY].dtype == np.uint8
    assert len(arrays[FRAMES_KEY]) == buffer._frames.pool.live_frames  # type: ignore[union-attr]
    write_arrays(tmp_path, "buffer", arrays)
    saved = read_arrays(tmp_path, "buffer")
    expected = _oldest_first(buffer)

    again = PrioritizedReplayBuffer(50, alpha=0.5, seed=99)
    again.set_state(meta, saved)
    meta_again, arrays_again = again.get_state()
    assert meta_again == meta and sorted(arrays_again) == sorted(arrays)
    for name, values in arrays.items():
        np.testing.assert_array_equal(arrays_again[name], values, err_msg=name)
    # The same rows in the same slots with the same generator: the same draws.
    np.testing.assert_array_equal(again.sample(20)[SB.OBS], buffer.sample(20)[SB.OBS])
    _assert_holds(again, expected)

    # Into a smaller uniform buffer: the newest rows, holding only the frames they use.
    small = ReplayBuffer(10)
    small.set_state(meta, saved)
    _assert_holds(small, {k: v[-10:] for k, v in expected.items()})

    # Rows added after a restore share the frames of the rows before it.
    following = envs.fragment(4, n_step=2)
    for restored in (again, small):
        restored.add(following)
        everything = {k: np.concatenate([v, following[k]]) for k, v in expected.items()}
        _assert_holds(restored, {k: v[-restored.capacity :] for k, v in everything.items()})

    # Whole image columns (a state written before frames) are stored as frames.
    whole = ReplayBuffer(50)
    whole.set_state({"num_added": 96}, expected)
    _assert_holds(whole, expected)


def test_batches_from_the_fake_atari_env_read_back_exactly() -> None:
    algo = (
        DQNConfig()
        .environment(FakeAtariEnv, clip_rewards=True, env_config={"life_every": 13})
        .rollouts(num_workers=0, num_envs_per_worker=2, rollout_fragment_length=6)
        .training(n_step=3, model={"dim": 42})
        .debugging(seed=0)
        .build()
    )
    try:
        worker = algo.workers.local_worker()
        batches = [MultiAgentBatch.wrap(worker.sample())["default_policy"] for _ in range(5)]
    finally:
        algo.stop()
    buffer = ReplayBuffer(40, seed=0)
    added = []
    for batch in batches:
        rows = SampleBatch(
            {
                k: np.asarray(v, dtype=np.uint8) if k in (SB.OBS, SB.NEXT_OBS) else v
                for k, v in batch.items()
                if k != SB.INFOS
            }
        )
        assert rows[SB.OBS].shape[1:] == (42, 42, 4)
        buffer.add(rows)
        added.append(rows)
    everything = SampleBatch.concat_samples(added)
    assert any(everything[SB.TERMINATEDS]) and len(everything) == 60
    _assert_holds(buffer, {k: v[-40:] for k, v in everything.items()})
    assert buffer.bytes_per_transition() < 1.2 * 42 * 42 * 4 / 2


# ------------------------------------------------------------------ the config key


def test_compress_observations_is_accepted_as_frames_are_held_once() -> None:
    assert "compress_observations" not in REFUSED
    assert "frame once" in NO_EFFECT["compress_observations"]
    config = DQNConfig().environment("CartPole-v1").rollouts(compress_observations=True)
    refuse_unsupported(config, "DQN")
