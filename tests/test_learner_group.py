"""The learner group: learners own their modules (apart from the acting copies), towers split
each minibatch (``_fake_gpus`` on CPU) and give the weights one learner would, several named
optimizers each step on their own loss, and the devices are listed and checked."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
from torch import nn

from rlconf import DQNConfig, PPOConfig
from rlconf.errors import ConfigError
from runtime import Algorithm, Learner
from runtime.core.data_parallel import DataParallel, shard_sizes
from runtime.core.learner import OptimizerSettings
from runtime.core.multi_agent_batch import MultiAgentBatch


def _ppo(**resources: Any) -> PPOConfig:
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .rollouts(num_workers=0, num_envs_per_worker=4, rollout_fragment_length=50)
        .training(train_batch_size=200, sgd_minibatch_size=50, num_sgd_iter=3)
        .resources(**resources)
        .debugging(seed=3)
    )


def _dqn(**resources: Any) -> DQNConfig:
    return (
        DQNConfig()
        .environment("CartPole-v1")
        .rollouts(num_workers=0, num_envs_per_worker=2, rollout_fragment_length=16)
        .training(train_batch_size=33, num_steps_sampled_before_learning_starts=0)
        .resources(**resources)
        .debugging(seed=3)
    )


def _assert_same_weights(a: Algorithm, b: Algorithm, rtol: float = 1e-5) -> None:
    wa, wb = a.get_weights()["default_policy"], b.get_weights()["default_policy"]
    assert wa.keys() == wb.keys()
    for key in wa:
        np.testing.assert_allclose(wa[key], wb[key], rtol=rtol, atol=1e-6, err_msg=key)


# ------------------------------------------------------------------ devices


def test_devices_list_one_cpu_learner_by_default_and_a_tower_per_fake_gpu() -> None:
    algo = _ppo().build()
    try:
        assert algo.learner_group.devices == ["cpu"]
    finally:
        algo.stop()
    algo = _ppo(num_gpus=2, _fake_gpus=True).build()
    try:
        assert algo.learner_group.devices == ["cpu", "cpu"]
        learner = algo.get_policy().learner
        assert isinstance(learner.parallel, DataParallel)
        assert len(learner.parallel.replicas) == 2
    finally:
        algo.stop()


def test_num_gpus_above_one_must_be_whole() -> None:
    with pytest.raises(ConfigError, match=r"num_gpus.*whole number"):
        _ppo(num_gpus=1.5, _fake_gpus=True).build()


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU-only message")
def test_real_gpus_that_are_not_there_are_refused_at_build() -> None:
    with pytest.raises(ConfigError, match=r"num_gpus.*torch sees none"):
        _ppo(num_gpus=2).build()


def test_the_learner_owns_a_module_apart_from_the_acting_copy() -> None:
    algo = _ppo().build()
    try:
        policy = algo.get_policy()
        learner = policy.learner
        assert learner.module is not policy.module
        before = {k: v.clone() for k, v in policy.module.state_dict().items()}
        # The learner starts from the acting copy's weights...
        for key, value in learner.module.state_dict().items():
            assert torch.equal(value, before[key])
        algo.train()
        # ... and the acting copy gets the learned weights back.
        for key, value in learner.module.state_dict().items():
            assert torch.equal(value, policy.module.state_dict()[key])
        assert any(not torch.equal(before[k], v) for k, v in policy.module.state_dict().items())
    finally:
        algo.stop()


# ------------------------------------------------------------------ towers


def test_two_fake_towers_give_the_weights_of_one_learner_for_ppo() -> None:
    one, two = _ppo().build(), _ppo(num_gpus=2, _fake_gpus=True).build()
    try:
        two.set_weights(one.get_weights())
        batch = one.sample_train_batch()
        info_one = one.learn_on_batch(batch)["default_policy"]["learner_stats"]
        info_two = two.learn_on_batch(batch)["default_policy"]["learner_stats"]
        _assert_same_weights(one, two)
        for key in ("total_loss", "policy_loss", "vf_loss", "kl", "entropy"):
            assert info_two[key] == pytest.approx(info_one[key], rel=1e-4, abs=1e-6), key
        assert info_two["kl_coeff"] == info_one["kl_coeff"]
    finally:
        one.stop()
        two.stop()


def test_two_fake_towers_give_the_weights_of_one_learner_for_dqn() -> None:
    one, two = _dqn().build(), _dqn(num_gpus=2, _fake_gpus=True).build()
    try:
        two.set_weights(one.get_weights())
        one.sample_and_store()  # fills the buffer
        batch = one.replay()
        for _ in range(3):  # 33 rows: shards of 17 and 16
            info_one = one.learn_on_batch(batch)["default_policy"]
            info_two = two.learn_on_batch(batch)["default_policy"]
            np.testing.assert_allclose(info_two["td_error"], info_one["td_error"], rtol=1e-4)
        one.learner_group.update_target_networks(["default_policy"], 1.0)
        two.learner_group.update_target_networks(["default_policy"], 1.0)
        info_one = one.learn_on_batch(batch)["default_policy"]
        info_two = two.learn_on_batch(batch)["default_policy"]
        # The second tower reads the learner's new target network.
        np.testing.assert_allclose(info_two["td_error"], info_one["td_error"], rtol=1e-4)
        _assert_same_weights(one, two)
    finally:
        one.stop()
        two.stop()


def test_fake_towers_train_and_checkpoint_like_one_learner(tmp_path: Any) -> None:
    algo = _ppo(num_gpus=2, _fake_gpus=True).build()
    try:
        algo.train()
        path = algo.save(str(tmp_path))
        restored = type(algo).from_checkpoint(path)
        try:
            assert restored.learner_group.devices == ["cpu", "cpu"]
            _assert_same_weights(algo, restored, rtol=0)
            kl = [vars(a.get_policy().learner)["kl_coeff"] for a in (algo, restored)]
            assert kl[0] == kl[1]
            restored.train()
        finally:
            restored.stop()
    finally:
        algo.stop()


def test_a_minibatch_smaller_than_the_towers_is_refused_with_the_numbers() -> None:
    algo = _ppo(num_gpus=3, _fake_gpus=True).build()
    try:
        learner = algo.get_policy().learner
        tensors = {"obs": torch.zeros(2, 4)}
        with pytest.raises(ValueError, match=r"2 rows can't be split over 3"):
            learner.gradient_step(tensors)
    finally:
        algo.stop()


def test_shard_sizes_are_as_equal_as_can_be() -> None:
    assert shard_sizes(33, 2) == [17, 16]
    assert shard_sizes(10, 4) == [3, 3, 2, 2]
    assert sum(shard_sizes(1001, 7)) == 1001


# ------------------------------------------------------------------ several optimizers


class _TwoHeads(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.actor = nn.Linear(3, 1)
        self.critic = nn.Linear(3, 1)


class _ActorCriticLearner(Learner):
    """The actor's loss runs through the critic (as SAC's and DDPG's do)."""

    def optimizer_settings(self) -> dict[str, OptimizerSettings]:
        return {
            "actor": OptimizerSettings(lr=0.1),
            "critic": OptimizerSettings(lr=0.01, lr_schedule=[[0, 0.01], [100, 0.0]]),
        }

    def optimizer_parameters(self, name: str) -> Any:
        module: Any = self.module
        return module.actor.parameters() if name == "actor" else module.critic.parameters()

    def compute_losses(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        module: Any = self.module
        obs = batch["obs"]
        action = module.actor(obs)
        q = module.critic(obs) * action
        critic_loss = (module.critic(obs) - batch["target"]).pow(2).mean()
        actor_loss = -q.mean()
        self.report(critic_loss=critic_loss, actor_loss=actor_loss)
        return {"actor": actor_loss, "critic": critic_loss}


def _batch(rows: int = 8) -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(0)
    return {
        "obs": torch.randn(rows, 3, generator=gen),
        "target": torch.randn(rows, 1, generator=gen),
    }


def test_each_optimizer_steps_on_the_gradient_of_its_own_loss_only() -> None:
    torch.manual_seed(0)
    learner = _ActorCriticLearner(_TwoHeads(), {"lr": 1.0, "model": {}})  # type: ignore[arg-type]
    module: Any = learner.module
    batch = _batch()
    # The expected gradients, computed by hand with autograd.
    critic_grad = torch.autograd.grad(
        (module.critic(batch["obs"]) - batch["target"]).pow(2).mean(), module.critic.weight
    )[0]
    actor_grad = torch.autograd.grad(
        -(module.critic(batch["obs"]) * module.actor(batch["obs"])).mean(), module.actor.weight
    )[0]
    stats = learner.gradient_step(batch)
    assert set(stats) == {"critic_loss", "actor_loss"}
    assert torch.allclose(module.critic.weight.grad, critic_grad)
    assert torch.allclose(module.actor.weight.grad, actor_grad)
    assert learner.num_grad_updates == 1
    assert learner.lr_of("actor") == 0.1 and learner.lr_of("critic") == 0.01
    learner.on_timestep(50)
    assert learner.lr_of("critic") == pytest.approx(0.005)
    assert learner.optimizers["critic"].param_groups[0]["lr"] == pytest.approx(0.005)
    assert learner.optimizers["actor"].param_groups[0]["lr"] == 0.1


def test_several_optimizers_on_towers_match_one_learner() -> None:
    torch.manual_seed(0)
    one = _ActorCriticLearner(_TwoHeads(), {"lr": 1.0, "model": {}})  # type: ignore[arg-type]
    two = _ActorCriticLearner(_TwoHeads(), {"lr": 1.0, "model": {}})  # type: ignore[arg-type]
    two.module.load_state_dict(one.module.state_dict())
    two.parallel = DataParallel(two, ["cpu", "cpu"])
    for _ in range(3):
        s1, s2 = one.gradient_step(_batch(9)), two.gradient_step(_batch(9))
        assert float(s2["actor_loss"]) == pytest.approx(float(s1["actor_loss"]), rel=1e-5)
    for key, value in one.module.state_dict().items():
        torch.testing.assert_close(two.module.state_dict()[key], value)


def test_a_loss_for_an_unknown_optimizer_is_an_error_naming_it() -> None:
    class Wrong(_ActorCriticLearner):
        def compute_losses(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
            return {"policy": super().compute_losses(batch)["actor"]}

    learner = Wrong(_TwoHeads(), {"lr": 1.0, "model": {}})  # type: ignore[arg-type]
    with pytest.raises(KeyError, match=r"\['policy'\].*optimizers: actor, critic"):
        learner.gradient_step(_batch())


def test_grad_clip_applies_per_optimizer() -> None:
    class Clipped(_ActorCriticLearner):
        def optimizer_settings(self) -> dict[str, OptimizerSettings]:
            return {
                "actor": OptimizerSettings(lr=0.1, grad_clip=1e-6),
                "critic": OptimizerSettings(lr=0.01),
            }

    learner = Clipped(_TwoHeads(), {"lr": 1.0, "model": {}})  # type: ignore[arg-type]
    stats = learner.gradient_step(_batch())
    assert "actor_grad_gnorm" in stats and "critic_grad_gnorm" not in stats
    module: Any = learner.module
    norm = torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in module.actor.parameters()]))
    assert float(norm) <= 1e-6 * 1.01


def test_multi_agent_batches_learn_per_policy_through_the_group() -> None:
    algo = _ppo().build()
    try:
        batch = algo.sample_train_batch()
        info = algo.learn_on_batch(MultiAgentBatch.wrap(batch))
        assert algo.learner_group.has_learner("default_policy")
        assert info["default_policy"]["num_grad_updates"] > 0
    finally:
        algo.stop()


def test_a2c_microbatches_on_fake_towers_match_one_learner() -> None:
    from rlconf import A2CConfig

    def a2c(**resources: Any) -> A2CConfig:
        return (
            A2CConfig()
            .environment("CartPole-v1")
            .rollouts(num_workers=0, num_envs_per_worker=2, rollout_fragment_length=20)
            .training(train_batch_size=80, microbatch_size=30)
            .resources(**resources)
            .debugging(seed=2)
        )

    one, two = a2c().build(), a2c(num_gpus=2, _fake_gpus=True).build()
    try:
        two.set_weights(one.get_weights())
        batch = one.sample_train_batch()
        info_one = one.learn_on_batch(batch)["default_policy"]["learner_stats"]
        info_two = two.learn_on_batch(batch)["default_policy"]["learner_stats"]
        assert info_one["num_microbatches"] == info_two["num_microbatches"] == 3
        _assert_same_weights(one, two)
    finally:
        one.stop()
        two.stop()


@pytest.mark.parametrize(
    "resources", [{"num_gpus_per_learner_worker": 1.0}, {"num_cpus_per_learner_worker": 2.0}]
)
def test_learner_worker_sizes_without_learner_workers_are_refused(
    resources: dict[str, float],
) -> None:
    with pytest.raises(ConfigError, match=r"(?s)learner_worker.*num_learner_workers is 0"):
        _ppo(**resources).build()
