"""The learner on a GPU (``.resources(num_gpus=1)``) on the embedded default: the learner's
module lives on ``cuda:0``, the driver's rollout worker acts with a CPU copy, and that copy has
the learner's weights after every iteration. Skipped where torch has no CUDA device."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from rlconf import AlgorithmConfig, DQNConfig, PPOConfig

pytestmark = pytest.mark.skipif(
    not torch.cuda.is_available(), reason="torch.cuda.is_available() is false: no CUDA device"
)


def _ppo() -> PPOConfig:
    return PPOConfig().training(train_batch_size=400, sgd_minibatch_size=100, num_sgd_iter=3)


def _dqn() -> DQNConfig:
    return DQNConfig().training(train_batch_size=32, num_steps_sampled_before_learning_starts=0)


def _device(module: torch.nn.Module) -> set[str]:
    return {str(p.device) for p in module.parameters()}


@pytest.mark.parametrize("make", [_ppo, _dqn], ids=["PPO", "DQN"])
def test_learner_on_cuda_acting_copy_on_cpu_with_the_learners_weights(make: Any) -> None:
    config: AlgorithmConfig = (
        make()
        .environment("CartPole-v1")
        .rollouts(num_workers=0)
        .resources(num_gpus=1)
        .debugging(seed=0)
    )
    algo = config.build()
    try:
        assert algo.learner_group.devices == ["cuda:0"]
        policy = algo.get_policy()
        learner = policy.learner
        assert learner.module is not policy.module
        assert _device(learner.module) == {"cuda:0"}
        assert _device(policy.module) == {"cpu"}
        for iteration in range(3):
            before = learner.num_grad_updates
            algo.train()
            assert learner.num_grad_updates > before, f"no gradient step in iteration {iteration}"
            assert _device(learner.module) == {"cuda:0"}
            assert _device(policy.module) == {"cpu"}
            learned = learner.module.state_dict()
            acting = policy.module.state_dict()
            assert acting.keys() <= learned.keys()
            for name, value in acting.items():
                assert value.device.type == "cpu", name
                assert torch.equal(value, learned[name].cpu()), (iteration, name)
    finally:
        algo.stop()
