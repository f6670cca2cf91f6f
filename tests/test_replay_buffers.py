"""Replay buffers: the sum/min tree against a plain cumulative sum; prioritized sampling in
proportion to priority**alpha with hand-computed importance weights; priorities from TD errors,
new rows at the largest priority, ring overwrites; the uniform buffer's weights and indexes;
``replay_buffer_config`` checked on the config side; and, through an off-policy Q-learning
algorithm (the pattern of test_off_policy.py), priorities updated from the learner's TD errors
and buffers saved in and restored from checkpoints."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Annotated, Any, ClassVar, Self

import gymnasium as gym
import numpy as np
import pytest
import torch
from pydantic import Field
from torch import nn
from typing_extensions import Unpack

from rlconf import AlgorithmConfig, ConfigError
from rlconf.field_types import NonNegInt, PosFloat, PosInt, UnitFloat
from rlconf.fluent import fluent
from rlconf.inert_keys import INERT_REPLAY_BUFFER_KEYS, REFUSED_REPLAY_BUFFER_KEYS
from rlconf.replay_buffer_config import (
    REPLAY_BUFFER_DEFAULTS,
    REPLAY_BUFFER_KEYS,
    ReplayBufferConfig,
    complete_replay_buffer_config,
    replay_buffer_config_schema,
    validate_replay_buffer_config,
)
from rlconf.section import Section
from rlconf.sections.training import TRAINING, TrainingArgs
from runtime import Learner, RLModule, SampleBatch
from runtime.buffers import PrioritizedReplayBuffer, ReplayBuffer, SumMinTree, make_replay_buffer
from runtime.core.distributions import Categorical
from runtime.training.checkpoint_files import CheckpointError, read_arrays, write_arrays
from runtime.training.off_policy import OffPolicyAlgorithm
from tests.envs import CorridorEnv

SB = SampleBatch


def _rows(values: Any) -> SampleBatch:
    obs = np.asarray(values, dtype=np.float32)
    return SampleBatch({"obs": obs, "frames": np.repeat(obs[:, None], 3, axis=1)})


def _frequencies(buffer: ReplayBuffer, draws: int) -> np.ndarray[Any, np.dtype[np.float64]]:
    index = buffer.sample(draws)["batch_indexes"]
    counts = np.bincount(index, minlength=len(buffer)).astype(np.float64)
    return counts / draws


# ---------------------------------------------------------------------- the tree


@pytest.mark.parametrize("capacity", [1, 2, 3, 1000, 1024, 1025, 70_000])
def test_sum_tree_search_matches_a_cumulative_sum(capacity: int) -> None:
    rng = np.random.default_rng(capacity)
    tree = SumMinTree(capacity)
    leaves = rng.random(capacity) + 0.01
    tree.set(np.arange(capacity), leaves)
    for _ in range(20):  # small updates walk the tree; the first one rebuilt it
        index = rng.choice(capacity, size=min(capacity, 5), replace=False)
        leaves[index] = rng.random(len(index)) * 10
        tree.set(index, leaves[index])
    assert math.isclose(tree.total, leaves.sum(), rel_tol=1e-12)
    assert tree.min == leaves.min()
    targets = rng.random(5000) * tree.total
    expected = np.searchsorted(np.cumsum(leaves), targets, side="right")
    np.testing.assert_array_equal(tree.find_prefix_sum(targets), np.minimum(expected, capacity - 1))


def test_sum_tree_never_returns_an_empty_leaf() -> None:
    tree = SumMinTree(2000)
    tree.set(np.arange(1500), 1.0)  # leaves 1500.. are unset (a buffer not yet full)
    targets = np.array([0.0, 749.5, np.nextafter(tree.total, 0.0)])
    assert tree.find_prefix_sum(targets, num_set=1500).tolist() == [0, 749, 1499]
    assert tree.min == 1.0


# ---------------------------------------------------------------------- prioritized buffer


def test_sampling_is_proportional_to_priority_to_the_alpha() -> None:
    buffer = PrioritizedReplayBuffer(8, alpha=0.5, eps=1e-6, seed=0)
    buffer.add(_rows(np.arange(4.0)))
    priorities = np.array([1.0, 2.0, 4.0, 9.0])
    buffer.update_priorities(np.arange(4), -(priorities - 1e-6))  # |td| + eps = priority
    expected = priorities**0.5 / (priorities**0.5).sum()
    np.testing.assert_allclose(_frequencies(buffer, 200_000), expected, atol=0.005)


def test_importance_weights_on_a_hand_computed_case() -> None:
    # priorities 1, 4, 16 at alpha 0.5: p**alpha 1, 2, 4, so P = 1/7, 2/7, 4/7 and with N = 3,
    # beta = 0.5: w = (3P)**-0.5 = (3/7)**-0.5, (6/7)**-0.5, (12/7)**-0.5; the largest is
    # (3/7)**-0.5 (the rarest row), so the normalised weights are 1, 2**-0.5, 4**-0.5.
    buffer = PrioritizedReplayBuffer(5, alpha=0.5, beta=0.5, eps=1e-9, seed=0)
    buffer.add(_rows([10.0, 11.0, 12.0]))
    buffer.update_priorities([0, 1, 2], [1.0, 4.0, 16.0])
    batch = buffer.sample(300)
    expected = {0: 1.0, 1: 2**-0.5, 2: 0.5}
    assert batch["weights"].dtype == np.float32
    assert batch["batch_indexes"].dtype == np.int64
    assert set(batch["batch_indexes"].tolist()) == {0, 1, 2}
    for slot, weight in zip(batch["batch_indexes"], batch["weights"], strict=True):
        assert weight == pytest.approx(expected[int(slot)], rel=1e-6)
    np.testing.assert_array_equal(batch["obs"], 10.0 + batch["batch_indexes"])
    # beta 0: no correction; alpha 0: uniform draws, all weights 1.
    flat = PrioritizedReplayBuffer(5, alpha=0.0, beta=1.0, seed=0)
    flat.add(_rows([1.0, 2.0, 3.0]))
    flat.update_priorities([0, 1, 2], [1.0, 4.0, 16.0])
    assert flat.sample(50)["weights"].tolist() == [1.0] * 50
    np.testing.assert_allclose(_frequencies(flat, 60_000), [1 / 3] * 3, atol=0.01)


def test_update_priorities_changes_the_proportions() -> None:
    buffer = PrioritizedReplayBuffer(10, alpha=1.0, seed=1)
    buffer.add(_rows(np.arange(4.0)))
    np.testing.assert_allclose(_frequencies(buffer, 40_000), [0.25] * 4, atol=0.01)
    buffer.update_priorities([0, 1, 2, 3], np.zeros(4))  # all to eps ...
    buffer.update_priorities([2], [7.0])  # ... but row 2
    assert _frequencies(buffer, 40_000)[2] > 0.999
    assert buffer.max_priority == pytest.approx(7.0 + 1e-6)
    # A row given twice keeps its last TD error.
    buffer.update_priorities([1, 1, 3], [5.0, 0.5, 0.5])
    np.testing.assert_allclose(buffer.priorities()[[1, 3]], [0.5 + 1e-6] * 2)


def test_new_rows_get_the_largest_priority_seen() -> None:
    buffer = PrioritizedReplayBuffer(10, alpha=1.0, seed=0)
    buffer.add(_rows([0.0, 1.0]))
    assert buffer.priorities().tolist() == [1.0, 1.0]
    buffer.update_priorities([0, 1], [3.0, 0.5])
    buffer.add(_rows([2.0]))
    assert buffer.priorities()[2] == pytest.approx(3.0 + 1e-6)


def test_ring_overwrite_resets_the_overwritten_rows_priorities() -> None:
    buffer = PrioritizedReplayBuffer(3, alpha=1.0, seed=0)
    buffer.add(_rows([0.0, 1.0, 2.0]))
    buffer.update_priorities([0, 1, 2], [0.1, 0.1, 5.0])
    buffer.add(_rows([3.0, 4.0]))  # slots 0 and 1: rows 0 and 1 go
    assert len(buffer) == 3 and buffer.num_added == 5
    # Oldest first: row 2, then the new rows at the largest priority seen (5 + eps).
    np.testing.assert_allclose(buffer.priorities(), [5.0 + 1e-6] * 3)
    assert set(buffer.sample(500)["obs"].tolist()) == {2.0, 3.0, 4.0}
    buffer.update_priorities([0, 1, 2], [1.0, 1.0, 2.0])  # slot 0: row 3, slot 2: row 2
    np.testing.assert_allclose(buffer.priorities(), np.array([2.0, 1.0, 1.0]) + 1e-6)
    frequencies = _frequencies(buffer, 60_000)  # by slot: rows 3, 4, 2
    np.testing.assert_allclose(frequencies, [0.25, 0.25, 0.5], atol=0.01)


def test_update_priorities_refuses_bad_input() -> None:
    buffer = PrioritizedReplayBuffer(4, seed=0)
    buffer.add(_rows([0.0, 1.0]))
    with pytest.raises(ValueError, match="2 batch indexes but 1 TD errors"):
        buffer.update_priorities([0, 1], [1.0])
    with pytest.raises(ValueError, match="finite"):
        buffer.update_priorities([0], [np.nan])
    with pytest.raises(ValueError, match=r"in \[0, 2\)"):
        buffer.update_priorities([2], [1.0])
    with pytest.raises(ValueError, match="alpha"):
        PrioritizedReplayBuffer(4, alpha=-0.1)
    with pytest.raises(ValueError, match="beta"):
        PrioritizedReplayBuffer(4, beta=1.5)
    with pytest.raises(ValueError, match="eps"):
        PrioritizedReplayBuffer(4, eps=0.0)
    with pytest.raises(ValueError, match="empty"):
        PrioritizedReplayBuffer(4).sample(1)


def test_prioritized_state_round_trip() -> None:
    buffer = PrioritizedReplayBuffer(4, alpha=0.7, seed=3)
    buffer.add(_rows([0.0, 1.0, 2.0]))
    buffer.add(_rows([3.0, 4.0, 5.0]))  # slots hold rows 4, 5, 2, 3
    buffer.update_priorities([0, 1, 2, 3], [4.0, 5.0, 2.0, 3.0])
    meta, arrays = buffer.get_state()
    assert arrays["obs"].tolist() == [2.0, 3.0, 4.0, 5.0]
    again = PrioritizedReplayBuffer(4, alpha=0.7, seed=99)
    again.set_state(json.loads(json.dumps(meta)), arrays)
    np.testing.assert_allclose(again.priorities(), buffer.priorities())
    assert again.max_priority == buffer.max_priority and again.num_added == 6
    np.testing.assert_array_equal(again.sample(20)["obs"], buffer.sample(20)["obs"])
    # Into a smaller buffer: the newest rows with their own priorities.
    small = PrioritizedReplayBuffer(2, alpha=0.7)
    small.set_state(meta, arrays)
    assert small.get_state()[1]["obs"].tolist() == [4.0, 5.0]
    np.testing.assert_allclose(small.priorities(), np.array([4.0, 5.0]) + 1e-6)
    # Into a uniform buffer: the rows only.
    uniform = ReplayBuffer(4)
    uniform.set_state(meta, arrays)
    assert sorted(uniform.get_state()[1]) == ["frames", "obs"]


# ---------------------------------------------------------------------- uniform buffer, factory


def test_uniform_sample_has_unit_weights_and_batch_indexes() -> None:
    buffer = ReplayBuffer(5, seed=0)
    buffer.add(_rows([0.0, 1.0, 2.0]))
    buffer.add(_rows([3.0, 4.0, 5.0, 6.0]))  # wraps around: rows 5 and 6 in slots 0 and 1
    batch = buffer.sample(64)
    assert batch["weights"].dtype == np.float32 and batch["weights"].tolist() == [1.0] * 64
    index = batch["batch_indexes"]
    assert index.dtype == np.int64 and set(index.tolist()) <= set(range(5))
    stored = np.array([5.0, 6.0, 2.0, 3.0, 4.0])  # by slot
    np.testing.assert_array_equal(batch["obs"], stored[index])
    np.testing.assert_array_equal(batch["frames"][:, 1], stored[index])
    with pytest.raises(ValueError, match="reserved"):
        buffer.add(batch)  # a replayed batch carries the sampled columns
    # Restored at the same capacity, the rows are back in their slots: the same draws.
    meta, arrays = buffer.get_state()
    again = ReplayBuffer(5, seed=7)
    again.set_state(meta, arrays)
    np.testing.assert_array_equal(again.sample(32)["obs"], buffer.sample(32)["obs"])


def test_make_replay_buffer_from_a_typed_config() -> None:
    uniform = make_replay_buffer({"capacity": 7}, seed=0)
    assert type(uniform) is ReplayBuffer and uniform.capacity == 7
    assert make_replay_buffer(None).capacity == REPLAY_BUFFER_DEFAULTS["capacity"]
    prioritized = make_replay_buffer(
        {
            "type": "PrioritizedReplayBuffer",
            "capacity": 9,
            "prioritized_replay_alpha": 0.5,
            "prioritized_replay_beta": 1.0,
            "prioritized_replay_eps": 0.01,
        },
        seed=1,
    )
    assert isinstance(prioritized, PrioritizedReplayBuffer)
    assert (prioritized.capacity, prioritized.alpha, prioritized.beta, prioritized.eps) == (
        9,
        0.5,
        1.0,
        0.01,
    )
    defaults = make_replay_buffer({"type": "PrioritizedReplayBuffer"})
    assert isinstance(defaults, PrioritizedReplayBuffer)
    assert (defaults.alpha, defaults.beta, defaults.eps) == (0.6, 0.4, 1e-6)
    with pytest.raises(ValueError, match="'size' is not a key"):
        make_replay_buffer({"size": 3})


# ---------------------------------------------------------------------- config side


def test_replay_buffer_config_validation() -> None:
    assert validate_replay_buffer_config(REPLAY_BUFFER_DEFAULTS) == REPLAY_BUFFER_DEFAULTS
    assert complete_replay_buffer_config({"capacity": 3}) == {
        **REPLAY_BUFFER_DEFAULTS,
        "capacity": 3,
    }
    with pytest.raises(ValueError, match="prioritized_replay_beta") as info:
        validate_replay_buffer_config({"capacity": 10, "prioritized_replay_betta": 0.5})
    message = str(info.value)
    assert "'prioritized_replay_betta' is not a key" in message
    assert "did you mean 'prioritized_replay_beta'" in message
    assert "its keys: type, capacity, prioritized_replay_alpha" in message
    bad = {
        "capacity": 0,
        "prioritized_replay_alpha": -1.0,
        "prioritized_replay_beta": 1.5,
        "prioritized_replay_eps": 0.0,
    }
    with pytest.raises(ValueError) as info:
        validate_replay_buffer_config(bad)
    for key in bad:
        assert f"{key}=" in str(info.value)
    for value in ({"capacity": 10.0}, {"capacity": True}, {"type": "MultiAgentBuffer"}):
        with pytest.raises(ValueError):
            validate_replay_buffer_config(value)
    assert validate_replay_buffer_config({"prioritized_replay_alpha": 1}) == {
        "prioritized_replay_alpha": 1.0
    }
    schema = replay_buffer_config_schema()
    assert schema["additionalProperties"] is False
    assert schema["properties"]["type"]["enum"] == [
        "ReplayBuffer",
        "PrioritizedReplayBuffer",
        "MultiAgentReplayBuffer",
        "MultiAgentPrioritizedReplayBuffer",
        # RLlib's new API stack's names of the same buffers
        "EpisodeReplayBuffer",
        "PrioritizedEpisodeReplayBuffer",
        "MultiAgentEpisodeReplayBuffer",
        "MultiAgentPrioritizedEpisodeReplayBuffer",
    ]
    assert schema["properties"]["prioritized_replay_eps"]["exclusiveMinimum"] == 0.0


def test_replay_buffer_config_as_a_config_field() -> None:
    config = PQConfig().training(replay_buffer_config={"capacity": 7})
    # A partial dict updates the current one, as model and exploration_config do.
    assert config["replay_buffer_config"] == {"type": "PrioritizedReplayBuffer", "capacity": 7}
    with pytest.raises(ConfigError) as info:
        PQConfig().training(replay_buffer_config={"capacity": 10, "capacityy": 5})  # type: ignore[typeddict-unknown-key]
    issue = info.value.issues[0]
    assert issue.field == "replay_buffer_config.capacityy" and "unknown key" in issue.problem
    assert "capacity" in issue.allowed and "prioritized_replay_eps" in issue.allowed
    with pytest.raises(ConfigError, match=r"replay_buffer_config\.capacity"):
        PQConfig().training(replay_buffer_config={"capacity": 0})
    with pytest.raises(ConfigError, match=r"replay_buffer_config\.prioritized_replay_beta"):
        PQConfig().training(replay_buffer_config={"prioritized_replay_beta": 2.0})
    with pytest.raises(ConfigError, match=r"replay_buffer_config\.type"):
        PQConfig().training(replay_buffer_config={"type": "Prioritized"})  # type: ignore[typeddict-item]
    schema = PQConfig.json_schema()
    field = schema["properties"]["replay_buffer_config"]
    assert field["default"] == {"type": "PrioritizedReplayBuffer", "capacity": 1000}
    definition = schema["$defs"][field["$ref"].rsplit("/", 1)[-1]]
    assert definition["additionalProperties"] is False
    # RLlib 2.x's learning_starts there sets num_steps_sampled_before_learning_starts.
    assert sorted(definition["properties"]) == sorted([*REPLAY_BUFFER_KEYS, "learning_starts"])
    assert set(REPLAY_BUFFER_KEYS) - set(REPLAY_BUFFER_DEFAULTS) == set(
        INERT_REPLAY_BUFFER_KEYS
    ) | set(REFUSED_REPLAY_BUFFER_KEYS)


# ---------------------------------------------------------------------- through an algorithm


class PQArgs(TrainingArgs, total=False):
    replay_buffer_config: Annotated[ReplayBufferConfig, Field(description="the buffer")]
    store_buffer_in_checkpoints: Annotated[bool, Field(description="buffers in checkpoints")]
    num_steps_sampled_before_learning_starts: Annotated[NonNegInt, Field(description="warm-up")]
    training_intensity: Annotated[PosFloat | None, Field(description="replayed / sampled")]
    target_network_update_freq: Annotated[PosInt, Field(description="env steps")]
    tau: Annotated[UnitFloat, Field(description="polyak")]


class PQConfig(AlgorithmConfig):
    """Q-learning with a typed replay_buffer_config."""

    __slots__ = ()
    algo_name = "TestPrioritizedQ"
    _sections: ClassVar[dict[str, Section]] = {
        **AlgorithmConfig._sections,
        "training": TRAINING.with_fields(
            PQArgs,
            {
                "replay_buffer_config": {"type": "PrioritizedReplayBuffer", "capacity": 1000},
                "store_buffer_in_checkpoints": False,
                "num_steps_sampled_before_learning_starts": 0,
                "training_intensity": None,
                "target_network_update_freq": 50,
                "tau": 1.0,
            },
        ),
    }
    _algo_defaults: ClassVar[dict[str, Any]] = {
        "num_workers": 0,
        "rollout_fragment_length": 4,
        "train_batch_size": 16,
        "lr": 0.01,
    }

    @fluent
    def training(self, /, **kwargs: Unpack[PQArgs]) -> Self:
        return self._set("training", dict(kwargs))


class QModule(RLModule):
    dist_class = Categorical

    def __init__(self, obs_space: gym.Space[Any], action_space: gym.Space[Any], config: Any):
        super().__init__(obs_space, action_space, config)
        size = int(np.prod(obs_space.shape or (1,)))
        assert isinstance(action_space, gym.spaces.Discrete)
        self.q = nn.Sequential(nn.Linear(size, 16), nn.ReLU(), nn.Linear(16, int(action_space.n)))

    def forward_train(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        q_values = self.q(batch[SB.OBS].reshape(len(batch[SB.OBS]), -1))
        return {"q_values": q_values, SB.ACTION_DIST_INPUTS: 20.0 * q_values}


class PQLearner(Learner):
    """Q-learning whose loss weights rows by their importance weights and whose update returns
    the TD errors (and keeps the last ones, with their rows' slots, for the tests)."""

    def setup(self) -> None:
        assert isinstance(self.module, QModule)
        self.target = self.add_target_network("q", self.module)
        self.last_td_error = np.empty(0)
        self.last_batch_indexes = np.empty(0, dtype=np.int64)

    def compute_loss(self, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, dict[str, Any]]:
        q = self.module.forward_train(batch)["q_values"]
        q_taken = q.gather(1, batch[SB.ACTIONS].long().unsqueeze(1)).squeeze(1)
        with torch.no_grad():
            next_q = self.target.forward_train({SB.OBS: batch[SB.NEXT_OBS]})["q_values"]
            done = batch[SB.TERMINATEDS].float()
            target = batch[SB.REWARDS] + 0.9 * (1 - done) * next_q.max(1).values
        td_error = q_taken - target
        loss = (batch["weights"] * td_error.pow(2)).mean()
        return loss, {"td_loss": loss, "td_error": td_error.detach()}

    def update(self, batch: SampleBatch) -> dict[str, Any]:
        stats = self.gradient_step(self.batch_tensors(batch))
        td_error = stats.pop("td_error").cpu().numpy()
        self.last_td_error, self.last_batch_indexes = td_error, batch["batch_indexes"]
        info = self.info({k: float(v) for k, v in stats.items()})
        info["td_error"] = td_error
        return info


class NoTDLearner(PQLearner):
    def update(self, batch: SampleBatch) -> dict[str, Any]:
        info = super().update(batch)
        del info["td_error"]
        return info


class PrioritizedQ(OffPolicyAlgorithm):
    config_class: ClassVar[type[AlgorithmConfig]] = PQConfig
    learner_class: ClassVar[type[Learner]] = PQLearner
    module_class: ClassVar[type[RLModule]] = QModule


class NoTDQ(PrioritizedQ):
    learner_class: ClassVar[type[Learner]] = NoTDLearner


def _config(**training: Any) -> PQConfig:
    return (
        PQConfig()
        .environment(CorridorEnv, env_config={"length": 4, "max_steps": 12})
        .training(**training)
        .debugging(seed=0)
    )


def test_a_training_step_sets_priorities_from_the_td_errors() -> None:
    algo = PrioritizedQ(config=_config())
    try:
        result: dict[str, Any] = {}
        for _ in range(6):
            result = algo.train()
        buffer = algo.replay_buffers["default_policy"]
        assert isinstance(buffer, PrioritizedReplayBuffer)
        learner = algo.get_policy().learner
        assert isinstance(learner, PQLearner)
        # The last update's rows hold |td| + eps (a row replayed twice: its last TD error).
        last: dict[int, float] = {}
        for slot, td in zip(learner.last_batch_indexes, learner.last_td_error, strict=True):
            last[int(slot)] = abs(float(td)) + buffer.eps
        slots = np.array(sorted(last))
        np.testing.assert_allclose(buffer._priorities[slots], [last[s] for s in slots])
        assert buffer.max_priority >= max(last.values())
        info = result["info"]["learner"]["default_policy"]
        assert "td_error" not in info and "td_loss" in info["learner_stats"]
    finally:
        algo.stop()


def test_a_prioritized_buffer_needs_td_errors_from_the_learner() -> None:
    algo = NoTDQ(config=_config())
    try:
        with pytest.raises(RuntimeError, match="returned no 'td_error'"):
            algo.train()
    finally:
        algo.stop()
    uniform = NoTDQ(config=_config(replay_buffer_config={"type": "ReplayBuffer"}))
    try:
        uniform.train()  # a uniform buffer needs none; the weights are ones
        assert type(uniform.replay_buffers["default_policy"]) is ReplayBuffer
    finally:
        uniform.stop()


def test_buffers_round_trip_through_checkpoints(tmp_path: Path) -> None:
    settings = {"store_buffer_in_checkpoints": True}
    algo = PrioritizedQ(config=_config(**settings))
    try:
        for _ in range(5):
            algo.train()
        buffer = algo.replay_buffers["default_policy"]
        assert isinstance(buffer, PrioritizedReplayBuffer)
        path = algo.save(str(tmp_path))
        files = sorted(p.name for p in (Path(path) / "replay_buffers").iterdir())
        assert files == ["0.npz"]  # no temporary file left behind
        restored = PrioritizedQ.from_checkpoint(path, config=_config(**settings))
        try:
            assert isinstance(restored, PrioritizedQ)
            again = restored.replay_buffers["default_policy"]
            assert isinstance(again, PrioritizedReplayBuffer)
            meta, arrays = buffer.get_state()
            meta_again, arrays_again = again.get_state()
            assert meta_again == json.loads(json.dumps(meta))
            assert sorted(arrays_again) == sorted(arrays)
            for name, values in arrays.items():
                np.testing.assert_array_equal(arrays_again[name], values)
                assert arrays_again[name].dtype == values.dtype
            # Same rows, priorities and generator state: the same next draw.
            np.testing.assert_array_equal(again.sample(16)["obs"], buffer.sample(16)["obs"])
            restored.train()
        finally:
            restored.stop()
        # Tune's hooks write and read the same files.
        tune_dir = tmp_path / "tune"
        tune_dir.mkdir()
        algo.save_checkpoint(str(tune_dir))
        assert read_arrays(tune_dir, "replay_buffers/0")["obs"].shape[0] == len(buffer)
        fresh = PrioritizedQ(config=_config())
        try:
            fresh.load_checkpoint(str(tune_dir))
            assert len(fresh.replay_buffers["default_policy"]) == len(buffer)
        finally:
            fresh.stop()
    finally:
        algo.stop()


def test_buffers_stay_out_of_checkpoints_by_default(tmp_path: Path) -> None:
    algo = PrioritizedQ(config=_config())
    try:
        algo.train()
        path = algo.save(str(tmp_path))
        assert not (Path(path) / "replay_buffers").exists()
        restored = PrioritizedQ.from_checkpoint(path, config=_config())
        try:
            assert isinstance(restored, PrioritizedQ) and restored.replay_buffers == {}
        finally:
            restored.stop()
    finally:
        algo.stop()


def test_array_files_refuse_objects_and_report_a_missing_file(tmp_path: Path) -> None:
    arrays = {"file": np.arange(3), "names": np.array(["a", "b"]), "x": np.zeros((2, 2))}
    write_arrays(tmp_path, "some/stem", arrays)
    back = read_arrays(tmp_path, "some/stem")
    assert list(back) == ["file", "names", "x"]
    np.testing.assert_array_equal(back["names"], arrays["names"])
    with pytest.raises(ValueError, match="Python objects"):
        write_arrays(tmp_path, "objects", {"infos": np.array([{}], dtype=object)})
    assert not list(tmp_path.glob("*objects*"))
    with pytest.raises(CheckpointError, match=r"missing\.npz is missing"):
        read_arrays(tmp_path, "missing")
