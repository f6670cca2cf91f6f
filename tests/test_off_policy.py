"""The off-policy base: a Q-learning algorithm written on it (module, learner with a target
network, config fields) samples into a replay buffer, starts learning after the configured
number of steps, replays as often as ``training_intensity`` says, updates its target network
every ``target_network_update_freq`` steps, checkpoints, and learns a corridor."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar, Self

import gymnasium as gym
import numpy as np
import pytest
import torch
from torch import nn
from typing_extensions import Unpack

from rlconf import AlgorithmConfig
from rlconf.algorithms.off_policy_fields import OFF_POLICY_DEFAULTS, OffPolicyArgs
from rlconf.fluent import fluent
from rlconf.replay_buffer_config import REPLAY_BUFFER_DEFAULTS
from rlconf.section import Section
from rlconf.sections.training import TRAINING, TrainingArgs
from runtime import Learner, RLModule, SampleBatch
from runtime.buffers import ReplayBuffer
from runtime.core.distributions import Categorical
from runtime.training.off_policy import OffPolicyAlgorithm
from tests.envs import CorridorEnv

SB = SampleBatch


class QArgs(TrainingArgs, OffPolicyArgs, total=False):
    """The shared off-policy fields (the off-policy training step reads them all)."""


class QConfig(AlgorithmConfig):
    __slots__ = ()
    algo_name = "TestQ"
    _sections: ClassVar[dict[str, Section]] = {
        **AlgorithmConfig._sections,
        "training": TRAINING.with_fields(
            QArgs,
            {
                **OFF_POLICY_DEFAULTS,
                "replay_buffer_config": {**REPLAY_BUFFER_DEFAULTS, "capacity": 1000},
                "num_steps_sampled_before_learning_starts": 100,
                "training_intensity": None,
                "target_network_update_freq": 50,
                "tau": 1.0,
            },
        ),
    }
    _algo_defaults: ClassVar[dict[str, Any]] = {
        "num_workers": 0,
        "rollout_fragment_length": 4,
        "train_batch_size": 32,
        "lr": 0.01,
    }

    @fluent
    def training(self, /, **kwargs: Unpack[QArgs]) -> Self:
        return self._set("training", dict(kwargs))


class QModule(RLModule):
    """Q(s, .) from an MLP; acting samples a Boltzmann distribution over the Q-values."""

    dist_class = Categorical

    def __init__(self, obs_space: gym.Space[Any], action_space: gym.Space[Any], config: Any):
        super().__init__(obs_space, action_space, config)
        size = int(np.prod(obs_space.shape or (1,)))
        assert isinstance(action_space, gym.spaces.Discrete)
        self.q = nn.Sequential(nn.Linear(size, 32), nn.ReLU(), nn.Linear(32, int(action_space.n)))

    def forward_train(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        q_values = self.q(batch[SB.OBS].reshape(len(batch[SB.OBS]), -1))
        return {"q_values": q_values, SB.ACTION_DIST_INPUTS: 20.0 * q_values}


class QLearner(Learner):
    def setup(self) -> None:
        assert isinstance(self.module, QModule)
        self.target = self.add_target_network("q", self.module)

    def compute_loss(self, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, dict[str, Any]]:
        q = self.module.forward_train(batch)["q_values"]
        q_taken = q.gather(1, batch[SB.ACTIONS].long().unsqueeze(1)).squeeze(1)
        with torch.no_grad():
            next_q = self.target.forward_train({SB.OBS: batch[SB.NEXT_OBS]})["q_values"]
            done = batch[SB.TERMINATEDS].float()
            target = batch[SB.REWARDS] + 0.9 * (1 - done) * next_q.max(1).values
        loss = (q_taken - target).pow(2).mean()
        return loss, {"td_loss": loss}


class QLearning(OffPolicyAlgorithm):
    config_class: ClassVar[type[AlgorithmConfig]] = QConfig
    learner_class: ClassVar[type[Learner]] = QLearner
    module_class: ClassVar[type[RLModule]] = QModule


def _config(**training: Any) -> QConfig:
    return (
        QConfig()
        .environment(CorridorEnv, env_config={"length": 4, "max_steps": 12})
        .training(**training)
        .debugging(seed=0)
    )


def _algo(**training: Any) -> QLearning:
    algo = QLearning(config=_config(**training))
    return algo


def test_learning_starts_after_the_warm_up_and_replays_one_batch_per_round() -> None:
    algo = _algo(num_steps_sampled_before_learning_starts=40)
    try:
        policy = algo.get_policy()
        for _ in range(10):  # 4 steps per round: 40 steps, learning starts at the 10th
            result = algo.train()
        assert len(algo.replay_buffers["default_policy"]) == 40
        assert policy.learner.num_grad_updates == 1
        algo.train()
        assert policy.learner.num_grad_updates == 2
        assert result["info"]["num_env_steps_trained"] == 32
    finally:
        algo.stop()


def test_training_intensity_sets_replayed_over_sampled_steps() -> None:
    algo = _algo(num_steps_sampled_before_learning_starts=0, training_intensity=16.0)
    try:
        algo.train()  # 4 sampled steps x 16 = 64 replayed rows = two batches of 32
        assert algo.get_policy().learner.num_grad_updates == 2
        assert algo.train()["info"]["num_env_steps_trained"] == 128
    finally:
        algo.stop()


def test_target_network_follows_every_target_network_update_freq_steps() -> None:
    algo = _algo(num_steps_sampled_before_learning_starts=0, target_network_update_freq=20)
    try:
        learner = algo.get_policy().learner
        source, target = learner.target_networks["q"]
        result: dict[str, Any] = {}
        for _ in range(4):  # 16 steps: the target has not moved yet
            result = algo.train()
        assert result["info"].get("num_target_updates", 0) == 0
        assert not all(
            torch.equal(a, b)
            for a, b in zip(source.state_dict().values(), target.state_dict().values(), strict=True)
        )
        result = algo.train()  # step 20: the first update copies the source
        assert result["info"]["num_target_updates"] == 1
        assert result["info"]["last_target_update_ts"] == 20
        for a, b in zip(source.state_dict().values(), target.state_dict().values(), strict=True):
            assert torch.equal(a, b)
    finally:
        algo.stop()


def test_checkpoint_restores_target_network_and_counters(tmp_path: Path) -> None:
    settings = {"num_steps_sampled_before_learning_starts": 0, "target_network_update_freq": 8}
    algo = _algo(**settings)
    try:
        for _ in range(5):
            algo.train()
        path = algo.save(str(tmp_path))
        restored = QLearning.from_checkpoint(path, config=_config(**settings))
        try:
            assert isinstance(restored, QLearning)
            mine = algo.get_policy().learner.target_networks["q"][1].state_dict()
            theirs = restored.get_policy().learner.target_networks["q"][1].state_dict()
            for name, value in mine.items():
                assert torch.equal(value, theirs[name])
            assert restored.train()["info"]["num_target_updates"] == 3
        finally:
            restored.stop()
    finally:
        algo.stop()


def test_q_learning_on_the_off_policy_base_walks_the_corridor() -> None:
    algo = _algo(num_steps_sampled_before_learning_starts=100, training_intensity=8.0)
    try:
        for _ in range(300):
            algo.train()
        policy = algo.get_policy()
        # Greedy from every cell: go right (action 1).
        cells = np.array([[p / 4] for p in range(4)], np.float32)
        obs = np.concatenate([np.eye(5, dtype=np.float32)[:4], cells], axis=1)
        actions, _, _ = policy.compute_actions(obs, explore=False)
        assert actions.tolist() == [1, 1, 1, 1]
    finally:
        algo.stop()


def test_replay_buffer_is_a_ring_of_preallocated_columns() -> None:
    buffer = ReplayBuffer(5, seed=0)
    buffer.add(SampleBatch({"obs": np.arange(3.0), "infos": [{}, {}, {}]}))
    buffer.add(SampleBatch({"obs": np.arange(3.0, 7.0), "infos": [{}] * 4}))
    assert len(buffer) == 5 and buffer.num_added == 7
    meta, arrays = buffer.get_state()
    assert arrays["obs"].tolist() == [2.0, 3.0, 4.0, 5.0, 6.0]
    assert set(buffer.sample(50)["obs"].tolist()) <= {2.0, 3.0, 4.0, 5.0, 6.0}
    again = ReplayBuffer(5)
    again.set_state(meta, arrays)
    assert again.get_state()[1]["obs"].tolist() == [2.0, 3.0, 4.0, 5.0, 6.0]
    with pytest.raises(ValueError, match="capacity"):
        ReplayBuffer(0)


@pytest.mark.parametrize("algorithm", ["SAC", "DDPG", "TD3", "DQN"])
def test_n_step_longer_than_a_fragment_is_refused_with_the_reason(algorithm: str) -> None:
    """n-step sums run within one sampled fragment: with rollout_fragment_length below n_step
    they would all be cut short, so the setting would not act as set."""
    import rlconf
    from rlconf import ConfigError

    config_class = getattr(rlconf, f"{algorithm}Config")
    short = config_class().training(n_step=3).rollouts(rollout_fragment_length=2)
    with pytest.raises(ConfigError) as caught:
        short.validate()
    text = str(caught.value)
    assert "n_step=3" in text and "rollout_fragment_length=2" in text
    assert "n_step <= rollout_fragment_length (2)" in text
    # Long enough fragments, and whole episodes, let the sums act.
    config_class().training(n_step=3).rollouts(rollout_fragment_length=3).validate()
    config_class().training(n_step=3).rollouts(
        rollout_fragment_length=1, batch_mode="complete_episodes"
    ).validate()
    config_class().training(n_step=1).rollouts(rollout_fragment_length=1).validate()


def test_n_step_is_checked_against_the_resolved_auto_fragment() -> None:
    from rlconf import ConfigError, DDPGConfig, DQNConfig

    # "auto": ceil(train_batch_size / workers / envs) = ceil(4 / 1 / 2) = 2 steps per sub-env.
    auto = (
        DDPGConfig()
        .training(n_step=3, train_batch_size=4)
        .rollouts(rollout_fragment_length="auto", num_envs_per_worker=2)
    )
    with pytest.raises(ConfigError, match="rollout_fragment_length=2"):
        auto.validate()
    auto.training(n_step=2).validate()
    # DQN's (and SAC's) "auto" is n_step, RLlib's rule for them.
    DQNConfig().training(n_step=3, train_batch_size=4).rollouts(
        rollout_fragment_length="auto"
    ).validate()
    # Search spaces are checked per trial, once sampled.
    from rlconf.sweep import grid_search

    DQNConfig().training(n_step=3).rollouts(rollout_fragment_length=grid_search([1, 8])).validate()
    DDPGConfig().training(n_step=3, train_batch_size=grid_search([4, 64])).rollouts(
        rollout_fragment_length="auto", num_envs_per_worker=2
    ).validate()


def test_before_learn_on_batch_changes_each_replayed_batch_before_the_update() -> None:
    """RLlib's DQN-family hook: fn(batch, policy_map, train_batch_size) -> batch."""
    from runtime.core.multi_agent_batch import MultiAgentBatch

    seen: list[tuple[MultiAgentBatch, list[str], int]] = []
    learned: list[MultiAgentBatch] = []

    def halve(batch: MultiAgentBatch, policy_map: Any, train_batch_size: int) -> MultiAgentBatch:
        seen.append((batch, list(policy_map), train_batch_size))
        rows = batch["default_policy"].slice(0, 16)
        return MultiAgentBatch({"default_policy": rows}, 16)

    algo = _algo(num_steps_sampled_before_learning_starts=0, before_learn_on_batch=halve)
    learn = algo.learn_on_batch

    def spy(batch: Any) -> Any:
        learned.append(batch)
        return learn(batch)

    algo.learn_on_batch = spy  # type: ignore[method-assign]  # a spy on the instance
    try:
        algo.train()
        assert [(len(b), ids, size) for b, ids, size in seen] == [(32, ["default_policy"], 32)]
        assert [len(b["default_policy"]) for b in learned] == [16]
    finally:
        algo.stop()
    algo = _algo(num_steps_sampled_before_learning_starts=0, before_learn_on_batch=lambda *a: 1)
    try:
        with pytest.raises(TypeError, match=r"before_learn_on_batch .* returned int"):
            algo.train()
    finally:
        algo.stop()
