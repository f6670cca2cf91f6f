"""SAC's parts: the squashed Gaussian's log-probabilities against the change of variables and a
numerical density, the losses' shapes and what each optimizer steps, alpha's gradient towards
the target entropy, discrete SAC, the config's defaults and refusals, and a checkpoint round
trip that keeps alpha, the target Q-networks and the optimizers."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch

from rlconf import ConfigError, SACConfig
from runtime import SAC, Algorithm
from runtime.algorithms.sac import SACLearner, SACModule, sac_loss
from runtime.core.distributions import SquashedGaussian
from runtime.core.sample_batch import SampleBatch as SB

BOX = gym.spaces.Box(-2.0, 2.0, (2,), np.float32)
OBS = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)


def _config(**training: Any) -> Any:
    return (
        SACConfig()
        .training(
            q_model_config={"fcnet_hiddens": [16]},
            policy_model_config={"fcnet_hiddens": [16]},
            **training,
        )
        .freeze()
    )


def _batch(action_space: gym.Space[Any], rows: int = 8) -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    if isinstance(action_space, gym.spaces.Discrete):
        actions = torch.randint(0, int(action_space.n), (rows,))
    else:
        actions = torch.rand(rows, 2) * 2 - 1
    return {
        SB.OBS: torch.randn(rows, 3),
        SB.NEXT_OBS: torch.randn(rows, 3),
        SB.ACTIONS: actions,
        SB.REWARDS: torch.randn(rows),
        SB.TERMINATEDS: torch.zeros(rows, dtype=torch.bool),
        "n_step_gamma": torch.full((rows,), 0.99),
    }


# ------------------------------------------------------------------ the distribution


def test_squashed_gaussian_logp_is_the_change_of_variables() -> None:
    mean, log_std = torch.tensor([[0.3, -0.5]]), torch.tensor([[-0.2, 0.1]])
    dist = SquashedGaussian(torch.cat([mean, log_std], -1), low=-2.0, high=2.0)
    u = torch.tensor([[0.4, -1.1]])
    action = 2.0 * torch.tanh(u)
    std = log_std.exp()
    normal = (-0.5 * ((u - mean) / std) ** 2 - torch.log(std * math.sqrt(2 * math.pi))).sum(-1)
    jacobian = torch.log(2.0 * (1 - torch.tanh(u) ** 2)).sum(-1)
    torch.testing.assert_close(dist.logp(action), normal - jacobian, rtol=1e-4, atol=1e-4)
    # sample_logp's logp (from u, without unsquashing) agrees with logp of the action.
    sample, logp = dist.sample_logp()
    torch.testing.assert_close(logp, dist.logp(sample), rtol=1e-3, atol=1e-3)


def test_squashed_gaussian_density_integrates_to_one_and_matches_samples() -> None:
    # One dimension on [-1, 1]: the density integrates to 1 and its histogram fits samples.
    dist = SquashedGaussian(torch.tensor([[0.5, math.log(0.8)]]).expand(4000, 2))
    grid = torch.linspace(-0.9999, 0.9999, 20001).unsqueeze(-1)
    grid_dist = SquashedGaussian(torch.tensor([[0.5, math.log(0.8)]]).expand(len(grid), 2))
    density = grid_dist.logp(grid).exp()
    assert torch.trapezoid(density, grid[:, 0]).item() == pytest.approx(1.0, abs=2e-3)
    torch.manual_seed(0)
    samples = torch.cat([dist.sample() for _ in range(25)])[:, 0]
    assert samples.abs().max() <= 1.0
    # P(a < 0.5) from the density against the samples' share.
    below = grid[:, 0] < 0.5
    mass = torch.trapezoid(density[below], grid[below, 0]).item()
    assert (samples < 0.5).float().mean().item() == pytest.approx(mass, abs=0.01)


def test_deterministic_sample_is_tanh_of_the_mean() -> None:
    dist = SquashedGaussian(torch.tensor([[0.7, -3.0, 0.0, 0.0]]), low=-2.0, high=2.0)
    torch.testing.assert_close(
        dist.deterministic_sample(), 2.0 * torch.tanh(torch.tensor([[0.7, -3.0]]))
    )


# ------------------------------------------------------------------ the losses


@pytest.mark.parametrize("twin_q", [True, False])
def test_losses_shapes_and_what_each_optimizer_steps(twin_q: bool) -> None:
    module = SACModule(OBS, BOX, _config(twin_q=twin_q))
    learner = SACLearner(module, _config(twin_q=twin_q))
    assert len(module.q_nets) == (2 if twin_q else 1)
    assert learner.target_entropy == -2.0
    losses, stats = sac_loss(module, learner.target, _batch(BOX), target_entropy=-2.0)
    assert set(losses) == {"actor", "critic", "entropy"}
    assert all(loss.shape == () for loss in losses.values())
    assert stats["td_error"].shape == (8,)
    before = {name: [p.clone() for p in learner.param_lists[name]] for name in learner.optimizers}
    target_before = [p.clone() for p in learner.target.parameters()]
    learner.update(_as_sample_batch(_batch(BOX)))
    for name, params in before.items():
        changed = [
            not torch.equal(a, b) for a, b in zip(params, learner.param_lists[name], strict=True)
        ]
        assert any(changed), name
    # The target Q-networks move only through update_target_networks.
    assert all(
        torch.equal(a, b) for a, b in zip(target_before, learner.target.parameters(), strict=True)
    )
    learner.update_target_networks(0.5)
    assert not all(
        torch.equal(a, b) for a, b in zip(target_before, learner.target.parameters(), strict=True)
    )


def _as_sample_batch(batch: dict[str, torch.Tensor]) -> Any:
    from runtime.core.sample_batch import SampleBatch

    return SampleBatch({k: v.numpy() for k, v in batch.items()})


def test_the_actor_loss_leaves_the_critics_alone() -> None:
    module = SACModule(OBS, BOX, _config())
    learner = SACLearner(module, _config())
    losses = learner.compute_losses(_batch(BOX))
    grads = learner.gradients_of(losses)
    assert len(grads["actor"]) == len(module.policy_parameters())
    assert len(grads["critic"]) == len(module.q_parameters())
    assert len(grads["entropy"]) == 1


@pytest.mark.parametrize("entropy_above_target", [True, False])
def test_alpha_moves_the_entropy_towards_the_target(entropy_above_target: bool) -> None:
    # logp is about -1.4 per dimension pair at std ~ 1: entropy above -2 (lower alpha), below 5.
    target = -2.0 if entropy_above_target else 5.0
    module = SACModule(OBS, BOX, _config())
    target_net = SACModule(OBS, BOX, _config())
    losses, stats = sac_loss(module, target_net, _batch(BOX), target_entropy=target)
    (grad,) = torch.autograd.grad(losses["entropy"], [module.log_alpha])
    entropy = float(stats["policy_entropy"])
    assert (entropy > target) == entropy_above_target
    # Gradient descent lowers log_alpha (less entropy bonus) when entropy exceeds the target.
    assert (grad.item() > 0) == entropy_above_target


def test_alpha_loss_by_hand() -> None:
    module = SACModule(OBS, BOX, _config(initial_alpha=0.5))
    assert module.log_alpha.item() == pytest.approx(math.log(0.5))
    torch.manual_seed(1)
    losses, stats = sac_loss(module, module, _batch(BOX), target_entropy=-2.0)
    logp = -float(stats["policy_entropy"])
    assert losses["entropy"].item() == pytest.approx(-math.log(0.5) * (logp - 2.0), rel=1e-5)
    assert float(stats["alpha_value"]) == pytest.approx(0.5)


def test_discrete_sac_losses() -> None:
    space = gym.spaces.Discrete(3)
    module = SACModule(OBS, space, _config())
    learner = SACLearner(module, _config())
    assert learner.target_entropy == pytest.approx(0.98 * math.log(3))
    assert module.q_values(torch.randn(5, 3)).shape == (2, 5, 3)
    losses, stats = sac_loss(module, learner.target, _batch(space), target_entropy=1.0)
    assert all(loss.shape == () for loss in losses.values())
    assert stats["td_error"].shape == (8,)
    # The uniform-ish initial policy has entropy close to log(3).
    assert float(stats["policy_entropy"]) == pytest.approx(math.log(3), abs=0.05)


# ------------------------------------------------------------------ the config


def test_config_defaults_are_the_references() -> None:
    config = SACConfig()
    assert config["twin_q"] is True
    assert config["tau"] == 5e-3
    assert config["initial_alpha"] == 1.0
    assert config["target_entropy"] == "auto"
    assert config["n_step"] == 1
    assert config["target_network_update_freq"] == 0
    assert config["num_steps_sampled_before_learning_starts"] == 1500
    assert config["train_batch_size"] == 256
    # "auto" is n_step (RLlib's rule for SAC): the reference's 1 step by default.
    assert config["rollout_fragment_length"] == "auto"
    assert config.get_rollout_fragment_length() == 1
    assert config["replay_buffer_config"]["capacity"] == 1_000_000
    assert config["grad_clip"] is None
    assert config["normalize_actions"] is True and config["clip_actions"] is False
    assert config["q_model_config"]["fcnet_hiddens"] == [256, 256]
    assert config["policy_model_config"]["fcnet_activation"] == "relu"
    assert dict(config["optimization"]) == {
        "actor_learning_rate": 3e-4,
        "critic_learning_rate": 3e-4,
        "entropy_learning_rate": 3e-4,
    }


def test_optimization_refuses_unknown_keys_and_merges_partial_dicts() -> None:
    with pytest.raises(ConfigError, match=r"optimization\.actor_lr"):
        SACConfig().training(optimization={"actor_lr": 1e-3})  # type: ignore[typeddict-unknown-key]
    config = SACConfig().training(optimization={"critic_learning_rate": 1e-3})
    assert config["optimization"]["critic_learning_rate"] == 1e-3
    assert config["optimization"]["actor_learning_rate"] == 3e-4


def test_lr_other_than_sacs_is_refused_at_build() -> None:
    config = SACConfig().environment("Pendulum-v1").training(lr=1e-3)
    config.training(num_steps_sampled_before_learning_starts=0)
    config.reporting(min_sample_timesteps_per_reporting=1, min_time_s_per_reporting=0)
    with pytest.raises(ConfigError, match="optimization"):
        algo = config.build()
        try:
            algo.train()
        finally:
            algo.stop()


def test_a_multi_discrete_action_space_is_refused() -> None:
    with pytest.raises(ConfigError):
        SACModule(OBS, gym.spaces.MultiDiscrete([2, 2]), _config())


# ------------------------------------------------------------------ checkpoints


def _small() -> SACConfig:
    return (
        SACConfig()
        .environment("Pendulum-v1")
        .training(
            num_steps_sampled_before_learning_starts=50,
            train_batch_size=32,
            initial_alpha=0.3,
            q_model_config={"fcnet_hiddens": [16]},
            policy_model_config={"fcnet_hiddens": [16]},
        )
        .reporting(min_sample_timesteps_per_reporting=100, min_time_s_per_reporting=0)
        .debugging(seed=0)
    )


def test_a_checkpoint_restores_alpha_targets_and_optimizers(tmp_path: Path) -> None:
    algo = _small().build()
    assert isinstance(algo, SAC)
    try:
        algo.train()
        learner = algo.get_policy().learner
        assert isinstance(learner, SACLearner)
        alpha = learner.alpha
        assert alpha != pytest.approx(0.3)  # tuned since
        target = {k: v.clone() for k, v in learner.target.state_dict().items()}
        optimizers = {n: o.state_dict() for n, o in learner.optimizers.items()}
        path = algo.save(str(tmp_path))
    finally:
        algo.stop()
    restored = Algorithm.from_checkpoint(path)
    try:
        learner = restored.get_policy().learner
        assert isinstance(learner, SACLearner)
        assert learner.alpha == pytest.approx(alpha)
        for name, value in learner.target.state_dict().items():
            assert torch.equal(value, target[name]), name
        assert set(learner.optimizers) == {"actor", "critic", "entropy"}
        for name, optimizer in learner.optimizers.items():
            state = optimizer.state_dict()["state"]
            assert state.keys() == optimizers[name]["state"].keys(), name
        assert restored.train()["timesteps_total"] == 200
    finally:
        restored.stop()


def test_cartpole_with_discrete_sac_trains() -> None:
    config = (
        SACConfig()
        .environment("CartPole-v1")
        .training(num_steps_sampled_before_learning_starts=50, train_batch_size=32)
        .reporting(min_sample_timesteps_per_reporting=100, min_time_s_per_reporting=0)
    )
    algo = config.build()
    try:
        stats = algo.train()["info"]["learner"]["default_policy"]["learner_stats"]
        assert {"critic_loss", "actor_loss", "alpha_loss", "alpha_value"} <= set(stats)
    finally:
        algo.stop()


def test_a_model_key_the_sac_networks_take_from_their_own_configs_is_refused() -> None:
    from rlconf import ConfigError, SACConfig

    config = (
        SACConfig()
        .environment("Pendulum-v1")
        .rollouts(num_workers=0)
        .training(model={"fcnet_hiddens": [32]})
    )
    with pytest.raises(ConfigError, match=r"(?s)model.fcnet_hiddens.*policy_model_config"):
        config.build()


def test_the_beta_distribution_switch_is_taken_off_and_refused_on() -> None:
    assert SACConfig.from_dict({"_use_beta_distribution": False})["_use_beta_distribution"] is False
    with pytest.raises(ConfigError, match=r"_use_beta_distribution=True .*squashed Gaussian"):
        SACConfig().training(_use_beta_distribution=True)


def test_td_error_loss_fn_mse_is_half_the_squared_error_and_huber_is_the_default() -> None:
    from runtime.algorithms.sac.loss import _critic_loss

    q_taken = torch.tensor([[0.0, 3.0], [0.5, -2.0]])  # (num_q, B)
    td_target = torch.tensor([0.0, 1.0])
    mse, td_error = _critic_loss(q_taken, td_target, None, "mse")
    # rows: (0 + 0.125) and (2 + 4.5), halved squares summed over the Q-networks, mean over rows
    assert mse.item() == pytest.approx((0.125 + 6.5) / 2)
    huber, _ = _critic_loss(q_taken, td_target, None)
    assert huber.item() == pytest.approx((0.125 + 1.5 + 2.5) / 2)
    assert torch.equal(td_error, torch.tensor([0.25, -0.5]))
    assert SACConfig()["td_error_loss_fn"] == "huber"
    with pytest.raises(ConfigError, match="td_error_loss_fn"):
        SACConfig().training(td_error_loss_fn="l1")  # type: ignore[arg-type]
