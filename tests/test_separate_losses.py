"""One backward pass of the summed losses (``Learner.separate_losses``) gives every optimizer the
gradient its own loss gives it alone (``Learner.gradients_of``), for SAC (Box and Discrete, one
or two Q-networks), DDPG and TD3 (with l2 terms); and ``frozen`` hands the parameters back."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch

from rlconf import DDPGConfig, SACConfig, TD3Config
from runtime.algorithms.ddpg.learner import DDPGLearner
from runtime.algorithms.ddpg.module import DDPGModule
from runtime.algorithms.sac import SACLearner, SACModule
from runtime.core.gradients import frozen
from runtime.core.learner import Learner
from runtime.core.sample_batch import SampleBatch as SB

BOX = gym.spaces.Box(-2.0, 2.0, (2,), np.float32)
DISCRETE = gym.spaces.Discrete(3)
OBS = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)


def _batch(action_space: gym.Space[Any], rows: int = 16) -> dict[str, torch.Tensor]:
    generator = torch.Generator().manual_seed(0)
    if isinstance(action_space, gym.spaces.Discrete):
        actions = torch.randint(0, int(action_space.n), (rows,), generator=generator)
    else:
        actions = torch.rand(rows, 2, generator=generator) * 2 - 1
    return {
        SB.OBS: torch.randn(rows, 3, generator=generator),
        SB.NEXT_OBS: torch.randn(rows, 3, generator=generator),
        SB.ACTIONS: actions,
        SB.REWARDS: torch.randn(rows, generator=generator),
        SB.TERMINATEDS: torch.zeros(rows, dtype=torch.bool),
        "n_step_gamma": torch.full((rows,), 0.99),
    }


def _sac(space: gym.Space[Any], twin_q: bool) -> Learner:
    config = (
        SACConfig()
        .training(
            twin_q=twin_q,
            q_model_config={"fcnet_hiddens": [16, 16]},
            policy_model_config={"fcnet_hiddens": [16, 16]},
        )
        .freeze()
    )
    return SACLearner(SACModule(OBS, space, config), config)


def _ddpg(cls: type[DDPGConfig]) -> Learner:
    config = cls().training(actor_hiddens=[16], critic_hiddens=[16], l2_reg=0.01).freeze()
    return DDPGLearner(DDPGModule(OBS, BOX, config), config)


CASES: dict[str, Callable[[], tuple[Learner, gym.Space[Any]]]] = {
    "sac-box-twin": lambda: (_sac(BOX, True), BOX),
    "sac-box-single": lambda: (_sac(BOX, False), BOX),
    "sac-discrete": lambda: (_sac(DISCRETE, True), DISCRETE),
    "ddpg": lambda: (_ddpg(DDPGConfig), BOX),
    "td3": lambda: (_ddpg(TD3Config), BOX),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_one_backward_pass_gives_each_optimizer_its_own_loss_s_gradient(case: str) -> None:
    learner, space = CASES[case]()
    assert learner.one_backward_pass
    batch = _batch(space)

    torch.manual_seed(1)  # (SAC samples the policy's actions in its losses)
    alone = learner.gradients_of(learner.compute_losses(batch))
    assert len(alone) >= 2

    torch.manual_seed(1)
    losses = learner.compute_losses(batch)
    for optimizer in learner.optimizers.values():
        optimizer.zero_grad(set_to_none=True)
    sum(losses.values()).backward()  # type: ignore[union-attr]
    for name, grads in alone.items():
        params = learner.param_lists[name]
        reached = 0
        for param, grad in zip(params, grads, strict=True):
            # (A model's value branch, which these losses do not use, gets no gradient.)
            assert (grad is None) == (param.grad is None), name
            if grad is not None:
                torch.testing.assert_close(param.grad, grad, rtol=1e-5, atol=1e-6)
                reached += 1
        assert reached, name
    # Every parameter still learns after the frozen stretch.
    assert all(p.requires_grad for params in learner.param_lists.values() for p in params)


def test_a_subclass_with_losses_of_its_own_takes_one_pass_per_loss_unless_it_promises() -> None:
    class MyLearner(SACLearner):
        def compute_losses(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
            return super().compute_losses(batch)

    class MyPromisingLearner(MyLearner):
        separate_losses = True

    config = SACConfig().training(q_model_config={"fcnet_hiddens": [8]}).freeze()
    assert not MyLearner(SACModule(OBS, BOX, config), config).one_backward_pass
    # ... unless it makes the promise for its own losses again.
    assert MyPromisingLearner(SACModule(OBS, BOX, config), config).one_backward_pass


def test_frozen_hands_back_only_what_it_froze_even_on_an_error() -> None:
    learning, fixed = torch.nn.Parameter(torch.ones(2)), torch.nn.Parameter(torch.ones(2))
    fixed.requires_grad_(False)
    with pytest.raises(RuntimeError, match="inside"), frozen([learning, fixed]):
        assert not learning.requires_grad
        raise RuntimeError("inside")
    assert learning.requires_grad and not fixed.requires_grad
