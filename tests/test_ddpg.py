"""DDPG's and TD3's parts: the configs' defaults (TD3 is DDPG with its tricks on), the losses
and what each optimizer steps, TD3's delayed actor and clipped target-policy noise, the Huber
and L2 terms, the refusals (Discrete actions, ``lr``, a ``model`` nothing is built from), acting
greedily, and a checkpoint round trip with the replay buffer, the targets and the optimizers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch

from rlconf import ConfigError, DDPGConfig, TD3Config
from runtime import DDPG, TD3, Algorithm
from runtime.algorithms.ddpg import DDPGLearner, DDPGModule, ddpg_loss
from runtime.algorithms.ddpg.loss import DDPGLossSettings, smoothing_noise
from runtime.core.sample_batch import SampleBatch as SB

BOX = gym.spaces.Box(-2.0, 2.0, (2,), np.float32)
OBS = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)


def _config(cls: type[DDPGConfig] = DDPGConfig, **training: Any) -> Any:
    return cls().training(actor_hiddens=[16], critic_hiddens=[16], **training).freeze()


def _batch(rows: int = 8) -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    return {
        SB.OBS: torch.randn(rows, 3),
        SB.NEXT_OBS: torch.randn(rows, 3),
        SB.ACTIONS: torch.rand(rows, 2) * 2 - 1,
        SB.REWARDS: torch.randn(rows),
        SB.TERMINATEDS: torch.zeros(rows, dtype=torch.bool),
        "n_step_gamma": torch.full((rows,), 0.99),
    }


# ------------------------------------------------------------------ configs


def test_td3_is_ddpg_with_its_tricks_on() -> None:
    ddpg, td3 = DDPGConfig(), TD3Config()
    assert isinstance(td3, DDPGConfig)
    assert (ddpg.twin_q, ddpg.policy_delay, ddpg.smooth_target_policy) == (False, 1, False)
    assert (td3.twin_q, td3.policy_delay, td3.smooth_target_policy) == (True, 2, True)
    assert (td3.target_noise, td3.target_noise_clip) == (0.2, 0.5)
    assert ddpg.exploration_config["type"] == "OrnsteinUhlenbeckNoise"
    assert td3.exploration_config["type"] == "GaussianNoise"
    assert ddpg.replay_buffer_config["type"] == "PrioritizedReplayBuffer"
    assert td3.replay_buffer_config["type"] == "ReplayBuffer"
    assert (ddpg.actor_hiddens, ddpg.critic_hiddens) == ([400, 300], [400, 300])
    assert (ddpg.actor_lr, ddpg.critic_lr, ddpg.tau, td3.tau) == (1e-3, 1e-3, 0.002, 5e-3)
    # A partial exploration dict (as RLlib's pendulum-td3.yaml has) keeps the type.
    changed = TD3Config().exploration(exploration_config={"random_timesteps": 5000})
    assert changed.exploration_config["type"] == "GaussianNoise"
    assert changed.exploration_config["random_timesteps"] == 5000


def test_bad_values_are_refused_as_typed() -> None:
    with pytest.raises(ConfigError, match="policy_delay"):
        DDPGConfig().training(policy_delay=0)
    with pytest.raises(ConfigError, match="actor_hidden_activation"):
        DDPGConfig().training(actor_hidden_activation="sigmoid")  # type: ignore[arg-type]


# ------------------------------------------------------------------ the losses


@pytest.mark.parametrize("twin_q", [True, False])
def test_losses_and_what_each_optimizer_steps(twin_q: bool) -> None:
    config = _config(twin_q=twin_q)
    module = DDPGModule(OBS, BOX, config)
    learner = DDPGLearner(module, config)
    assert len(module.q_nets) == (2 if twin_q else 1)
    batch = _batch()
    losses = learner.compute_losses(batch)
    assert set(losses) == {"actor", "critic"}
    actor_grads = torch.autograd.grad(
        losses["actor"], module.q_parameters(), allow_unused=True, retain_graph=True
    )
    # The actor's loss runs through the critic without reaching its parameters (they are
    # frozen there), so one backward pass of both losses trains each network by its own.
    assert all(g is None for g in actor_grads)
    assert learner.one_backward_pass
    grads = learner.gradients_of(losses)
    assert len(grads["actor"]) == len(module.policy_parameters())
    before = [p.detach().clone() for p in module.q_parameters()]
    info = learner.update(_as_sample_batch(batch))
    assert info["td_error"].shape == (8,)
    assert {"critic_loss", "actor_loss", "mean_q"} <= set(info["learner_stats"])
    assert any(not torch.equal(a, b) for a, b in zip(before, module.q_parameters(), strict=True))


def _as_sample_batch(batch: dict[str, torch.Tensor]) -> Any:
    from runtime.core.sample_batch import SampleBatch

    return SampleBatch({k: v.numpy() for k, v in batch.items()})


def test_td3_steps_the_actor_once_per_policy_delay_critic_steps() -> None:
    config = _config(TD3Config, policy_delay=3)
    module = DDPGModule(OBS, BOX, config)
    learner = DDPGLearner(module, config)
    batch = _as_sample_batch(_batch())
    actor_moved, critic_moved = [], []
    for _ in range(7):
        actor = [p.detach().clone() for p in module.policy_parameters()]
        critic = [p.detach().clone() for p in module.q_parameters()]
        stats = learner.update(batch)["learner_stats"]
        actor_moved.append(
            any(
                not torch.equal(a, p)
                for a, p in zip(actor, module.policy_parameters(), strict=True)
            )
        )
        critic_moved.append(
            any(not torch.equal(a, p) for a, p in zip(critic, module.q_parameters(), strict=True))
        )
        assert ("actor_loss" in stats) == actor_moved[-1]
    assert critic_moved == [True] * 7
    assert actor_moved == [True, False, False, True, False, False, True]


def test_target_policy_smoothing_noise_is_clipped() -> None:
    torch.manual_seed(0)
    noise = smoothing_noise(torch.zeros(20000, 2), stddev=1.0, clip=0.3)
    assert noise.abs().max() <= 0.3 + 1e-7
    # Most of N(0, 1) lies outside 0.3, so the clip is reached, not just respected.
    assert ((noise.abs() - 0.3).abs() < 1e-6).float().mean() > 0.5
    small = smoothing_noise(torch.zeros(20000, 2), stddev=0.1, clip=0.5)
    assert small.std().item() == pytest.approx(0.1, rel=0.05)


def test_the_smoothed_target_stays_within_the_clip_of_the_target_actor() -> None:
    config = _config(TD3Config, target_noise=5.0, target_noise_clip=0.05)
    module = DDPGModule(OBS, BOX, config)
    target = DDPGModule(OBS, BOX, config)
    target.load_state_dict(module.state_dict())
    seen: list[torch.Tensor] = []
    original = target.q_values

    def spy(obs: torch.Tensor, actions: torch.Tensor, first_only: bool = False) -> torch.Tensor:
        seen.append(actions)
        return original(obs, actions, first_only)

    target.q_values = spy  # type: ignore[method-assign]
    batch = _batch(256)
    settings = DDPGLossSettings(smooth_target_policy=True, target_noise=5.0, target_noise_clip=0.05)
    ddpg_loss(module, target, batch, settings, update_actor=False)
    (smoothed,) = seen
    clean = target.actions(batch[SB.NEXT_OBS])
    difference = (smoothed - clean).abs()
    assert difference.max() <= 0.05 + 1e-6
    assert difference.mean() > 0.02  # noise was added
    assert smoothed.abs().max() <= 1.0  # within the (normalized) action bounds


def test_huber_and_l2_terms() -> None:
    module = DDPGModule(OBS, BOX, _config())
    target = DDPGModule(OBS, BOX, _config())
    batch = _batch()
    batch[SB.REWARDS] = batch[SB.REWARDS] * 100  # large errors: Huber is linear there
    plain = ddpg_loss(module, target, batch, DDPGLossSettings(), update_actor=True)[0]
    huber = ddpg_loss(module, target, batch, DDPGLossSettings(use_huber=True), update_actor=True)[0]
    assert huber["critic"] < plain["critic"] / 10
    l2 = ddpg_loss(module, target, batch, DDPGLossSettings(l2_reg=0.5), update_actor=True)[0]
    assert l2["critic"] > plain["critic"]
    assert l2["actor"] > plain["actor"]


def test_actions_stay_within_the_bounds_the_policy_acts_in() -> None:
    normalized = DDPGModule(OBS, BOX, _config())
    raw = DDPGModule(
        OBS,
        BOX,
        DDPGConfig().training(actor_hiddens=[16]).environment(normalize_actions=False).freeze(),
    )
    obs = torch.randn(64, 3) * 100
    with torch.no_grad():
        for module in (normalized, raw):
            last = list(module.model.modules())[-1]
            assert isinstance(last, torch.nn.Linear)
            last.bias.fill_(50.0)
        assert torch.allclose(normalized.actions(obs), torch.ones(64, 2))
        assert torch.allclose(raw.actions(obs), torch.full((64, 2), 2.0))


# ------------------------------------------------------------------ refusals


def test_a_discrete_action_space_is_refused_at_build() -> None:
    config = DDPGConfig().environment("CartPole-v1")
    with pytest.raises(ConfigError, match=r"(?s)action_space.*Box"):
        config.build()


def test_lr_is_refused_with_what_to_set_instead() -> None:
    config = TD3Config().environment("Pendulum-v1").training(lr=0.01)
    with pytest.raises(ConfigError, match=r"(?s)lr.*actor_lr and critic_lr"):
        config.build()


def test_a_model_nothing_is_built_from_is_refused() -> None:
    config = DDPGConfig().environment("Pendulum-v1").training(model={"fcnet_hiddens": [32]})
    with pytest.raises(ConfigError, match=r"(?s)model.fcnet_hiddens.*use_state_preprocessor"):
        config.build()


def test_the_state_preprocessor_runs_observations_through_the_model() -> None:
    config = (
        DDPGConfig()
        .training(
            use_state_preprocessor=True,
            model={"fcnet_hiddens": [8]},
            actor_hiddens=[16],
            critic_hiddens=[16],
        )
        .freeze()
    )
    module = DDPGModule(OBS, BOX, config)
    actor_features, actor_head = list(module.model)
    first = getattr(actor_features, "model", None)
    assert first is not None
    first_layer = next(m for m in actor_head.modules() if isinstance(m, torch.nn.Linear))
    assert first_layer.in_features == 8
    critic = module.q_nets[0]
    assert isinstance(critic, torch.nn.ModuleDict)
    assert getattr(critic["features"], "model", None) is not first  # a preprocessor of its own


# ------------------------------------------------------------------ algorithms


def _small(cls: type[DDPGConfig]) -> DDPGConfig:
    return (
        cls()
        .environment("Pendulum-v1")
        .training(
            num_steps_sampled_before_learning_starts=50,
            train_batch_size=32,
            actor_hiddens=[16],
            critic_hiddens=[16],
            store_buffer_in_checkpoints=True,
        )
        .exploration(exploration_config={"random_timesteps": 50})
        .reporting(min_sample_timesteps_per_reporting=100, min_time_s_per_reporting=0)
        .debugging(seed=0)
    )


@pytest.mark.parametrize("cls", [DDPGConfig, TD3Config])
def test_a_checkpoint_restores_buffer_targets_and_optimizers(
    cls: type[DDPGConfig], tmp_path: Path
) -> None:
    algo = _small(cls).build()
    assert isinstance(algo, TD3 if cls is TD3Config else DDPG)
    assert isinstance(algo, DDPG)
    try:
        algo.train()
        learner = algo.get_policy().learner
        assert isinstance(learner, DDPGLearner)
        target = {k: v.clone() for k, v in learner.target.state_dict().items()}
        buffered = len(algo.replay_buffers["default_policy"])
        assert buffered == 100
        obs = np.array([0.5, -0.5, 0.1], dtype=np.float32)
        greedy = algo.compute_single_action(obs, explore=False)
        path = algo.save(str(tmp_path))
    finally:
        algo.stop()
    restored = Algorithm.from_checkpoint(path)
    assert isinstance(restored, DDPG)
    try:
        learner = restored.get_policy().learner
        assert isinstance(learner, DDPGLearner)
        for name, value in learner.target.state_dict().items():
            assert torch.equal(value, target[name]), name
        assert set(learner.optimizers) == {"actor", "critic"}
        assert len(restored.replay_buffers["default_policy"]) == buffered
        np.testing.assert_allclose(restored.compute_single_action(obs, explore=False), greedy)
        assert restored.train()["timesteps_total"] == 200
    finally:
        restored.stop()


def test_explore_false_acts_on_the_actor_and_exploring_adds_noise() -> None:
    algo = _small(TD3Config).build()
    try:
        algo.train()  # past random_timesteps
        obs = np.array([0.5, -0.5, 0.1], dtype=np.float32)
        greedy = [algo.compute_single_action(obs, explore=False) for _ in range(3)]
        assert all(np.array_equal(greedy[0], g) for g in greedy)
        noisy = [algo.compute_single_action(obs, explore=True) for _ in range(3)]
        assert not all(np.array_equal(greedy[0], n) for n in noisy)
        assert all(np.all(np.abs(n) <= 2.0) for n in noisy)
    finally:
        algo.stop()


@pytest.mark.parametrize("config_class", [DDPGConfig, TD3Config])
def test_acting_advances_the_timestep_past_random_timesteps(config_class: Any) -> None:
    """As the reference: every observation acted on through compute_single_action advances
    the policy's timestep, explore or not, so the random window of 50 timesteps ends after 50
    calls, and the noise is then the (tiny) scaled noise around the deterministic action."""
    noise = {"ou_base_scale": 0.001} if config_class is DDPGConfig else {"stddev": 0.001}
    base = config_class().rollouts(num_workers=0).environment("Pendulum-v1").debugging(seed=1)
    exploration = {
        **dict(base.exploration_config),
        "random_timesteps": 50,
        "initial_scale": 0.001,
        "final_scale": 0.001,
        **noise,
    }
    algo = base.exploration(exploration_config=exploration).build()
    try:
        obs = np.array([0.0, 0.1, -0.1], dtype=np.float32)
        policy = algo.get_policy()
        deterministic = algo.compute_single_action(obs, explore=False)
        random = [algo.compute_single_action(obs, explore=True) for _ in range(49)]
        assert policy.global_timestep == 50
        assert np.std(random) > 0.5
        assert not any(np.allclose(a, deterministic, atol=0.01) for a in random)
        after = [algo.compute_single_action(obs, explore=True) for _ in range(20)]
        assert all(np.allclose(a, deterministic, atol=0.01) for a in after)
        # The policy's own compute_single_action counts too; a training round sets the
        # timestep from the env steps sampled.
        policy.compute_single_action(obs)
        assert policy.global_timestep == 71
    finally:
        algo.stop()


# ------------------------------------------------------------------ RLlib's files

RLLIB_PENDULUM_TD3 = """
pendulum-td3:
    env: Pendulum-v1
    run: TD3
    stop:
        episode_reward_mean: -900
        timesteps_total: 100000
    config:
        framework: tf
        actor_hiddens: [64, 64]
        critic_hiddens: [64, 64]
        replay_buffer_config:
          type: MultiAgentReplayBuffer
          min_size_for_sampling: 5000
        exploration_config:
            random_timesteps: 5000
"""

RLLIB_PENDULUM_DDPG = """
pendulum-ddpg:
    env: Pendulum-v1
    run: DDPG
    stop:
      episode_reward_mean: -320
      timesteps_total: 30000
    config:
        seed: 42
        soft_horizon: false
        no_done_at_end: true
        framework: torch
        actor_hiddens: [64, 64]
        critic_hiddens: [64, 64]
        n_step: 1
        model: {}
        gamma: 0.99
        exploration_config:
            type: "OrnsteinUhlenbeckNoise"
            scale_timesteps: 10000
            initial_scale: 1.0
            final_scale: 0.02
            ou_base_scale: 0.1
            ou_theta: 0.15
            ou_sigma: 0.2
        min_sample_timesteps_per_iteration: 600
        target_network_update_freq: 0
        tau: 0.001
        replay_buffer_config:
          type: MultiAgentPrioritizedReplayBuffer
          capacity: 10000
          worker_side_prioritization: false
          min_size_for_sampling: 500
        clip_rewards: False
        actor_lr: 0.001
        critic_lr: 0.001
        use_huber: True
        huber_threshold: 1.0
        l2_reg: 0.000001
        rollout_fragment_length: 1
        train_batch_size: 64
        num_workers: 0
"""


@pytest.mark.parametrize("text", [RLLIB_PENDULUM_TD3, RLLIB_PENDULUM_DDPG])
def test_rllibs_pendulum_files_run_with_framework_torch(text: str, tmp_path: Path) -> None:
    from rlconf.cli import main

    file = tmp_path / "rllib.yaml"
    file.write_text(text)
    # Learning starts early so that the short run trains too.
    overrides = json.dumps(
        {
            "num_steps_sampled_before_learning_starts": 100,
            "replay_buffer_config": {"min_size_for_sampling": 100},
        }
    )
    stop = '{"timesteps_total": 600}'
    args = ["train", "-f", str(file), "--framework", "torch", "--config", overrides]
    assert main([*args, "--stop", stop, "--local-dir", str(tmp_path / "out"), "-q"]) == 0
    (run_dir,) = (tmp_path / "out").iterdir()
    last = json.loads((run_dir / "result.json").read_text().splitlines()[-1])
    assert last["timesteps_total"] >= 600
    stats = last["info"]["learner"]["default_policy"]["learner_stats"]
    assert "critic_loss" in stats
