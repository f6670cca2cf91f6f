"""uint8 frames stay uint8 from the env to the network's first layer: the preprocessor and the
policy's observation space, sample batches (``obs``, ``new_obs``), the DQN replay buffer, the
learners' tensors (PPO, DQN, IMPALA; a memory model's sequences, fake GPU towers), acting (the
lean path and the general one), and the vision network's float32 cast, which gives the same
numbers as float32 frames; SAC's and DDPG's flat layers take them as float32 values. A
MeanStdFilter makes float32 values of them; NoFilter keeps them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, cast

import gymnasium as gym
import numpy as np
import pytest
import torch
from torch import nn

from rlconf import DDPGConfig, DQNConfig, IMPALAConfig, PPOConfig, SACConfig
from rlconf.algorithm_config import AlgorithmConfig
from rlconf.model_config import ModelConfigDict
from runtime import Algorithm
from runtime.core import layer_calls
from runtime.core.policy import TorchPolicy
from runtime.core.sample_batch import SampleBatch as SB
from runtime.core.vision_network import VisionNetwork
from runtime.env.filters import MeanStdFilter, NoFilter
from runtime.env.preprocessors import get_preprocessor
from tests.fake_atari import FakeAtariEnv

#: The DeepMind-wrapped fake Atari frames at 42x42x4, through a small conv stack ("same" to
#: 11x11, then an 11x11 "valid" layer to 1x1).
ATARI_MODEL: ModelConfigDict = {"dim": 42, "conv_filters": [[8, [4, 4], 4], [16, [11, 11], 1]]}
SMALL_SHAPE = (10, 10, 2)
#: A conv stack for 10x10 images: "same" to 5x5, then a 5x5 "valid" layer to 1x1.
SMALL_MODEL: ModelConfigDict = {"conv_filters": [[4, [3, 3], 2], [8, [5, 5], 1]]}


class SmallImageEnv(gym.Env[Any, Any]):
    """A user's env of uint8 10x10x2 images (no Atari wrappers): the pixels hold the step."""

    def __init__(self, config: dict[str, Any] | None = None) -> None:
        self.observation_space = gym.spaces.Box(0, 255, SMALL_SHAPE, np.uint8)
        self.action_space = gym.spaces.Discrete(2)
        self.t = 0

    def _obs(self) -> Any:
        return np.full(SMALL_SHAPE, (7 * self.t) % 256, np.uint8)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        self.t = 0
        return self._obs(), {}

    def step(self, action: int) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        self.t += 1
        return self._obs(), float(action), self.t >= 12, False, {}


def _atari(algorithm: str) -> AlgorithmConfig:
    """PPO, DQN or IMPALA on the DeepMind-wrapped fake Atari env, tiny batches."""
    if algorithm == "PPO":
        config: AlgorithmConfig = PPOConfig().training(
            train_batch_size=16, sgd_minibatch_size=8, num_sgd_iter=1, model=ATARI_MODEL
        )
    elif algorithm == "DQN":
        config = DQNConfig().training(
            train_batch_size=8,
            num_steps_sampled_before_learning_starts=16,
            replay_buffer_config={"capacity": 200},
            model={**ATARI_MODEL, "fcnet_hiddens": [16]},
            hiddens=[8],
        )
    else:
        config = IMPALAConfig().training(train_batch_size=16, model=ATARI_MODEL)
    return (
        config.environment(FakeAtariEnv, clip_rewards=True)
        .rollouts(num_workers=0, num_envs_per_worker=2, rollout_fragment_length=8)
        .reporting(min_time_s_per_reporting=0, min_sample_timesteps_per_reporting=32)
        .debugging(seed=0)
    )


class DtypeRecorder:
    """Records the dtype of what the first layers of a vision network (its conv stacks)
    receive: ``_ChannelsFirst``'s input and the first conv layer's, per call."""

    def __init__(self, model: nn.Module) -> None:
        self.into_network: list[torch.dtype] = []
        self.into_conv: list[torch.dtype] = []
        self.handles = []
        for stack in _conv_stacks(model):
            first_conv = next(m for m in stack if isinstance(m, nn.Conv2d))
            self.handles.append(stack[0].register_forward_pre_hook(self._hook(self.into_network)))
            self.handles.append(first_conv.register_forward_pre_hook(self._hook(self.into_conv)))
        assert self.handles, f"no conv stack in {type(model).__name__}"

    @staticmethod
    def _hook(seen: list[torch.dtype]) -> Any:
        def hook(module: nn.Module, args: tuple[Any, ...]) -> None:
            seen.append(args[0].dtype)

        return hook

    def remove(self) -> None:
        for handle in self.handles:
            handle.remove()


def _conv_stacks(model: nn.Module) -> Iterator[nn.Sequential]:
    """The ``nn.Sequential``s of ``model`` that start with ``_ChannelsFirst``."""
    stacks = [m for m in model.modules() if isinstance(m, nn.Sequential) and len(m)]
    yield from (stack for stack in stacks if type(stack[0]).__name__ == "_ChannelsFirst")


def _learner_model(algo: Algorithm) -> nn.Module:
    policy = algo.get_policy()
    return cast(nn.Module, policy.learner.module.model)


def _assert_uint8(batch: Any) -> None:
    assert batch[SB.OBS].dtype == np.uint8, batch[SB.OBS].dtype
    if SB.NEXT_OBS in batch:
        assert batch[SB.NEXT_OBS].dtype == np.uint8, batch[SB.NEXT_OBS].dtype


def _assert_saw_uint8(recorder: DtypeRecorder) -> None:
    assert recorder.into_network, "the vision network was not called"
    assert set(recorder.into_network) == {torch.uint8}, recorder.into_network
    assert set(recorder.into_conv) == {torch.float32}, recorder.into_conv


def _assert_learns_on_uint8(algo: Algorithm, *models: nn.Module) -> None:
    """``train()`` until the learner ran (at most 6 iterations): each of ``models`` (the
    learner's) received uint8 frames and its first conv layer float32 ones."""
    recorders = [DtypeRecorder(model) for model in models or (_learner_model(algo),)]
    try:
        for _ in range(6):
            algo.train()
            if recorders[-1].into_conv:
                break
    finally:
        for recorder in recorders:
            recorder.remove()
    for recorder in recorders:
        _assert_saw_uint8(recorder)


# ------------------------------------------------------------------ preprocessing and filters


def test_the_preprocessor_keeps_uint8_images_and_reports_a_uint8_box() -> None:
    space = gym.spaces.Box(0, 255, (6, 5, 3), np.uint8)
    prep = get_preprocessor(space, {})
    frames = [np.full((6, 5, 3), 200, np.uint8), np.full((6, 5, 3), 3, np.uint8)]
    rows = prep.transform_many(frames)
    assert rows.dtype == np.uint8 and rows.shape == (2, 6, 5, 3)
    assert prep.observation_space == gym.spaces.Box(0, 255, (6, 5, 3), np.uint8)
    # A float frame of that space (the reference's acting calls take both): float32, as given.
    as_float = prep.transform(np.full((6, 5, 3), 2.5))
    assert as_float.dtype == np.float32 and (as_float == 2.5).all()
    # Float images and flat byte vectors are float32 as before.
    float_space = gym.spaces.Box(0.0, 1.0, (6, 5, 3), np.float32)
    assert get_preprocessor(float_space, {}).transform_many(frames).dtype == np.float32
    assert get_preprocessor(float_space, {}).observation_space.dtype == np.float32
    ram = get_preprocessor(gym.spaces.Box(0, 255, (128,), np.uint8), {})
    assert ram.transform(np.zeros(128, np.uint8)).dtype == np.float32


def _small_ppo(**rollouts: Any) -> AlgorithmConfig:
    return (
        PPOConfig()
        .environment(SmallImageEnv)
        .rollouts(num_workers=0, rollout_fragment_length=8, **rollouts)
        .training(train_batch_size=8, sgd_minibatch_size=8, num_sgd_iter=1, model=SMALL_MODEL)
        .debugging(seed=0)
    )


def test_no_filter_keeps_uint8_frames_and_mean_std_filter_normalizes_them() -> None:
    frames = np.stack([np.full((4, 4, 2), v, np.uint8) for v in (10, 20, 30)])
    assert NoFilter()(frames) is frames
    out = MeanStdFilter((4, 4, 2))(frames)
    assert out.dtype == np.float32
    expected = (frames.astype(np.float64) - 20.0) / (10.0 + 1e-8)
    np.testing.assert_allclose(out, expected, rtol=1e-6)
    # The policy's space, its model's and its view requirements follow the filter.
    for observation_filter, dtype in (("NoFilter", np.uint8), ("MeanStdFilter", np.float32)):
        algo = _small_ppo(observation_filter=observation_filter).build()
        try:
            policy = algo.get_policy()
            assert policy.observation_space.dtype == dtype, observation_filter
            assert policy.view_requirements[SB.OBS].space == policy.observation_space
            assert policy.view_requirements[SB.NEXT_OBS].space == policy.observation_space
            assert policy.model.obs_space == policy.observation_space
            batch = algo.workers.local_worker().sample()
            assert batch[SB.OBS].dtype == dtype and batch[SB.NEXT_OBS].dtype == dtype
        finally:
            algo.stop()


# ------------------------------------------------------------------ the vision network


def test_the_vision_network_gives_the_same_outputs_on_uint8_and_float32_frames() -> None:
    torch.manual_seed(0)
    config = PPOConfig().training(model=SMALL_MODEL).to_dict()
    space = gym.spaces.Box(0, 255, SMALL_SHAPE, np.uint8)
    net = VisionNetwork(space, gym.spaces.Discrete(3), 3, dict(config["model"]), "model")
    batch = np.random.default_rng(0).integers(0, 256, (5, *SMALL_SHAPE)).astype(np.uint8)
    # A batch, and one frame made a batch of one as acting does (frame[None]: a view with
    # stride 0 on its batch axis), each against its float32 copy as numpy makes it.
    for frames in (batch, batch[2][None]):
        as_uint8 = torch.from_numpy(frames)
        as_float = torch.from_numpy(np.asarray(frames, dtype=np.float32))
        logits_u8, _ = net({"obs": as_uint8}, [], None)
        values_u8 = net.value_function()
        logits_f32, _ = net({"obs": as_float}, [], None)
        assert torch.equal(logits_u8, logits_f32)
        assert torch.equal(values_u8, net.value_function())
        assert torch.equal(net.values({"obs": as_uint8}), net.values({"obs": as_float}))


# ------------------------------------------------------------------ acting


def test_acting_keeps_uint8_frames_into_the_network_on_both_paths(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    algo = _atari("PPO").build()
    try:
        policy = algo.get_policy()
        frames = np.random.default_rng(0).integers(0, 256, (3, 42, 42, 4)).astype(np.uint8)
        # The lean path (built-in network, StochasticSampling): what its trunk runs on.
        seen: list[torch.dtype] = []

        def recording(layers: Any, x: torch.Tensor) -> torch.Tensor:
            seen.append(x.dtype)
            return layer_calls.run_layers(layers, x)

        monkeypatch.setattr("runtime.core.lean_acting.run_layers", recording)
        lean_actions, _, lean_extra = policy.compute_actions(frames, explore=False)
        assert seen and seen[0] == torch.uint8
        monkeypatch.undo()
        # The general path (a hooked model acts through the module): the same outputs.
        recorder = DtypeRecorder(policy.model)
        try:
            actions, _, extra = policy.compute_actions(frames, explore=False)
        finally:
            recorder.remove()
        _assert_saw_uint8(recorder)
        np.testing.assert_array_equal(actions, lean_actions)
        np.testing.assert_array_equal(
            extra[SB.ACTION_DIST_INPUTS], lean_extra[SB.ACTION_DIST_INPUTS]
        )
    finally:
        algo.stop()


def test_compute_single_action_takes_uint8_and_float_frames_alike() -> None:
    algo = _small_ppo().build()
    try:
        policy: TorchPolicy = algo.get_policy()
        assert policy.observation_space == gym.spaces.Box(0, 255, SMALL_SHAPE, np.uint8)
        rng = np.random.default_rng(1)
        for _ in range(5):
            frame = rng.integers(0, 256, SMALL_SHAPE).astype(np.uint8)
            as_float = frame.astype(np.float64)
            action, _, extra = policy.compute_single_action(frame, explore=False)
            action_f, _, extra_f = policy.compute_single_action(as_float, explore=False)
            assert action == action_f
            np.testing.assert_array_equal(
                extra[SB.ACTION_DIST_INPUTS], extra_f[SB.ACTION_DIST_INPUTS]
            )
            # The algorithm's call on raw observations (preprocessed as in training).
            assert algo.compute_single_action(frame, explore=False) == action
            assert algo.compute_single_action(as_float, explore=False) == action
    finally:
        algo.stop()


# ------------------------------------------------------------------ the algorithms' batches


@pytest.mark.parametrize("algorithm", ["PPO", "DQN", "IMPALA"])
def test_samples_replay_and_learner_tensors_keep_uint8_frames(algorithm: str) -> None:
    algo = _atari(algorithm).build()
    try:
        policy = algo.get_policy()
        assert policy.observation_space == gym.spaces.Box(0, 255, (42, 42, 4), np.uint8)
        _assert_uint8(algo.workers.local_worker().sample())
        _assert_learns_on_uint8(algo)
        if algorithm == "DQN":
            buffer = algo.replay_buffers["default_policy"]
            _assert_uint8(buffer.sample(4))
            # However the buffer stores them: no frame is kept as floats.
            _, arrays = buffer.get_state()
            frames = {k: a.dtype for k, a in arrays.items() if a.ndim >= 3}
            assert frames and set(frames.values()) == {np.dtype(np.uint8)}, frames
    finally:
        algo.stop()


def test_a_memory_model_pads_uint8_sequences() -> None:
    """An LSTM over images: the learner's zero-padded sequences keep the frames uint8."""
    algo = (
        PPOConfig()
        .environment(SmallImageEnv)
        .rollouts(num_workers=0, rollout_fragment_length=16)
        .training(
            train_batch_size=16,
            sgd_minibatch_size=16,
            num_sgd_iter=1,
            model={**SMALL_MODEL, "use_lstm": True, "max_seq_len": 5, "lstm_cell_size": 8},
        )
        .debugging(seed=0)
        .build()
    )
    try:
        _assert_uint8(algo.workers.local_worker().sample())
        _assert_learns_on_uint8(algo)
    finally:
        algo.stop()


def test_fake_gpu_towers_split_uint8_frames() -> None:
    algo = _small_ppo().resources(num_gpus=2, _fake_gpus=True).build()
    try:
        learner = algo.get_policy().learner
        assert learner.parallel is not None
        towers = learner.parallel.replicas
        assert len(towers) == 2
        _assert_learns_on_uint8(algo, *(tower.module.model for tower in towers))
    finally:
        algo.stop()


class SmallImageBoxActionEnv(SmallImageEnv):
    """``SmallImageEnv`` with a Box action (ignored), for SAC and DDPG."""

    def __init__(self, config: dict[str, Any] | None = None) -> None:
        super().__init__(config)
        self.action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        return super().step(0)


@pytest.mark.parametrize("algorithm", ["SAC", "DDPG"])
def test_sac_and_ddpg_take_uint8_frames_into_their_flat_layers(algorithm: str) -> None:
    """SAC's Q-networks and DDPG's without ``use_state_preprocessor`` read the flattened
    frames (with the action) through linear layers: float32 values of the uint8 rows."""
    config: AlgorithmConfig
    if algorithm == "SAC":
        config = SACConfig().training(
            policy_model_config=SMALL_MODEL, q_model_config={"fcnet_hiddens": [8]}
        )
    else:
        config = DDPGConfig().training(actor_hiddens=[8], critic_hiddens=[8])
    algo = (
        config.environment(SmallImageBoxActionEnv)
        .rollouts(num_workers=0, rollout_fragment_length=4)
        .training(num_steps_sampled_before_learning_starts=8, train_batch_size=4)
        .reporting(min_sample_timesteps_per_reporting=16)
        .debugging(seed=0)
        .build()
    )
    try:
        assert algo.get_policy().observation_space.dtype == np.uint8
        _assert_uint8(algo.workers.local_worker().sample())
        result = algo.train()
        assert result["num_env_steps_trained"] > 0
        _assert_uint8(algo.replay_buffers["default_policy"].sample(2))
    finally:
        algo.stop()
