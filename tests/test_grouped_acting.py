"""Policies of one architecture act in one pass (``runtime.core.grouped_acting``): the same
numbers as each policy's own pass (to float rounding), only where the architectures match,
following weight changes; and the multi-agent sampler uses it."""

from __future__ import annotations

from typing import Any, cast

import gymnasium as gym
import numpy as np
import numpy.typing as npt
import pytest
import torch

from rlconf import PolicySpec, PPOConfig
from runtime import RolloutWorker, make_multi_agent
from runtime.algorithms.ppo import PPO
from runtime.core.grouped_acting import GroupedActing
from runtime.core.policy import TorchPolicy
from runtime.core.sample_batch import SampleBatch as SB
from runtime.env.env_registry import env_creator_for

OBS_SPACE = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
DISCRETE = gym.spaces.Discrete(3)
BOX = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)


def _policy(seed: int, model: Any = None, action_space: gym.Space[Any] = DISCRETE) -> TorchPolicy:
    config = PPOConfig().training(model=cast(Any, model or {"fcnet_hiddens": [16, 16]})).freeze()
    torch.manual_seed(seed)
    return TorchPolicy(OBS_SPACE, action_space, config, algorithm="PPO")


def _obs(rows: int, seed: int) -> npt.NDArray[np.float32]:
    return np.random.default_rng(seed).uniform(-1, 1, (rows, 3)).astype(np.float32)


def _groups(policies: dict[str, TorchPolicy], value_preds: bool = False) -> list[set[str]]:
    """The groups of two or more that ``GroupedActing.member`` puts ``policies`` in."""
    acting = GroupedActing()
    by_key: dict[Any, set[str]] = {}
    for policy_id, policy in policies.items():
        found = acting.member(policy_id, policy, None, value_preds)
        if found is not None:
            by_key.setdefault(found[0], set()).add(policy_id)
    return [group for group in by_key.values() if len(group) > 1]


def _grouped(
    acting: GroupedActing, policies: list[TorchPolicy], obs: list[Any], explore: bool
) -> list[tuple[Any, dict[str, Any]]]:
    ids = tuple(str(k) for k in range(len(policies)))
    found = [acting.member(i, p, explore, False) for i, p in zip(ids, policies, strict=True)]
    assert all(f is not None and f[0] == found[0][0] for f in found if found[0] is not None)
    layers = [f[1] for f in found if f is not None]
    return acting.act(policies, layers, obs, ids, explore)


@pytest.mark.parametrize("space", [DISCRETE, BOX], ids=["discrete", "box"])
def test_one_pass_gives_each_policys_own_numbers(space: gym.Space[Any]) -> None:
    policies = [_policy(seed, action_space=space) for seed in range(3)]
    obs = [_obs(rows, seed) for seed, rows in enumerate((4, 7, 1))]
    out = _grouped(GroupedActing(), policies, obs, explore=False)
    for policy, batch, (actions, extra) in zip(policies, obs, out, strict=True):
        own_actions, _, own = policy.compute_actions(batch, explore=False, value_preds=False)
        np.testing.assert_allclose(actions, own_actions, rtol=1e-5, atol=1e-6)
        assert extra.keys() == own.keys()
        for name in extra:
            np.testing.assert_allclose(extra[name], own[name], rtol=1e-5, atol=1e-6)


def test_sampled_actions_are_drawn_from_each_policys_distribution() -> None:
    policies = [_policy(seed) for seed in range(2)]
    # Policy 1's last layer strongly prefers action 2, policy 0's action 0.
    with torch.no_grad():
        for policy, best in zip(policies, (0, 2), strict=True):
            cast(Any, policy.model).logits.bias.copy_(torch.tensor([-20.0, -20.0, -20.0]))
            cast(Any, policy.model).logits.bias[best] = 20.0
    obs = [_obs(50, 0), _obs(30, 1)]
    torch.manual_seed(0)
    out = _grouped(GroupedActing(), policies, obs, explore=True)
    assert (out[0][0] == 0).all() and (out[1][0] == 2).all()
    for (actions, extra), batch, policy in zip(out, obs, policies, strict=True):
        logp = policy.compute_log_likelihoods(actions, batch)
        np.testing.assert_allclose(extra[SB.ACTION_LOGP], logp, rtol=1e-5, atol=1e-5)


def test_stacked_weights_follow_weight_changes() -> None:
    policies = [_policy(seed) for seed in range(2)]
    acting = GroupedActing()
    obs = [_obs(5, 0), _obs(5, 1)]
    _grouped(acting, policies, obs, explore=False)
    policies[1].set_weights(_policy(seed=9).get_weights())
    out = _grouped(acting, policies, obs, explore=False)
    _, _, own = policies[1].compute_actions(obs[1], explore=False, value_preds=False)
    np.testing.assert_allclose(
        out[1][1][SB.ACTION_DIST_INPUTS], own[SB.ACTION_DIST_INPUTS], rtol=1e-5, atol=1e-6
    )
    # A storage swapped in (``param.data = ...``) counts as a change too.
    logits = cast(Any, policies[0].model).logits
    logits.bias.data = torch.full_like(logits.bias, 3.0)
    out = _grouped(acting, policies, obs, explore=False)
    _, _, own = policies[0].compute_actions(obs[0], explore=False, value_preds=False)
    np.testing.assert_allclose(
        out[0][1][SB.ACTION_DIST_INPUTS], own[SB.ACTION_DIST_INPUTS], rtol=1e-5, atol=1e-6
    )
    # A parameter object replaced is read at the next fragment (the parameters are looked up
    # once per fragment, with the policies' layers).
    logits.bias = torch.nn.Parameter(torch.full_like(logits.bias, -2.0))
    acting.replan()
    out = _grouped(acting, policies, obs, explore=False)
    _, _, own = policies[0].compute_actions(obs[0], explore=False, value_preds=False)
    np.testing.assert_allclose(
        out[0][1][SB.ACTION_DIST_INPUTS], own[SB.ACTION_DIST_INPUTS], rtol=1e-5, atol=1e-6
    )


def test_only_matching_architectures_act_together() -> None:
    same = {"a": _policy(0), "b": _policy(1), "c": _policy(2)}
    assert _groups(same) == [{"a", "b", "c"}]
    mixed = {
        "a": _policy(0),
        "wider": _policy(1, {"fcnet_hiddens": [32, 16]}),
        "relu": _policy(2, {"fcnet_hiddens": [16, 16], "fcnet_activation": "relu"}),
        "relu2": _policy(3, {"fcnet_hiddens": [16, 16], "fcnet_activation": "relu"}),
        "lstm": _policy(4, {"fcnet_hiddens": [16], "use_lstm": True, "lstm_cell_size": 4}),
        "box": _policy(5, action_space=BOX),
    }
    assert _groups(mixed) == [{"relu", "relu2"}]
    # Values wanted in the pass, or a hooked layer: each policy acts alone.
    assert _groups(same, value_preds=True) == []
    cast(Any, same["b"].model).trunk[2].register_forward_hook(lambda *args: None)
    assert _groups(same) == [{"a", "c"}]


def _two_policy_worker(num_agents: int, fragment: int, **multi_agent: Any) -> RolloutWorker:
    """A local worker on a multi-agent CartPole whose agents alternate between two PPO
    policies of the default network."""
    config = (
        PPOConfig()
        .environment(make_multi_agent("CartPole-v1"), env_config={"num_agents": num_agents})
        .rollouts(num_workers=0, num_envs_per_worker=2, rollout_fragment_length=fragment)
        .multi_agent(
            policies={"p0": PolicySpec(), "p1": PolicySpec()},
            policy_mapping_fn=lambda agent_id, *args, **kwargs: f"p{agent_id % 2}",
            **multi_agent,
        )
        .debugging(seed=0)
        .freeze()
    )
    return RolloutWorker(
        env_creator=env_creator_for(config["env"]),
        config=config,
        policy_class=PPO.policy_class,
        worker_index=0,
        num_workers=0,
    )


def _assert_logp_is_each_policys(worker: RolloutWorker, batch: Any) -> None:
    for policy_id, rows in batch.policy_batches.items():
        policy = worker.policy_map[policy_id]
        logp = policy.compute_log_likelihoods(rows[SB.ACTIONS], rows[SB.OBS])
        np.testing.assert_allclose(rows[SB.ACTION_LOGP], logp, rtol=1e-5, atol=1e-5)


def test_the_multi_agent_sampler_acts_for_policies_of_one_architecture_in_one_pass(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    passes: list[int] = []
    real_act = GroupedActing.act

    def counting(self: GroupedActing, policies: Any, *args: Any) -> Any:
        passes.append(len(policies))
        return real_act(self, policies, *args)

    monkeypatch.setattr(GroupedActing, "act", counting)
    worker = _two_policy_worker(num_agents=4, fragment=20)
    try:
        batch = worker.sample()
        assert passes and set(passes) == {2}
        _assert_logp_is_each_policys(worker, batch)
    finally:
        worker.stop()


def test_a_policy_object_that_replaced_the_checked_one_is_checked_again() -> None:
    """A policy reloaded after its eviction is a new object: its own layers act."""
    acting = GroupedActing()
    first = _policy(0)
    found = acting.member("p", first, None, False)
    assert found is not None and found[1][0] is cast(Any, first.model).trunk[0]
    reloaded = _policy(1, {"fcnet_hiddens": [16, 16], "fcnet_activation": "relu"})
    found_again = acting.member("p", reloaded, None, False)
    assert found_again is not None and found_again[0] != found[0]
    assert found_again[1][0] is cast(Any, reloaded.model).trunk[0]


def test_two_policies_sample_together_with_one_of_them_evicted_at_a_time() -> None:
    worker = _two_policy_worker(num_agents=2, fragment=10, policy_map_capacity=1)
    try:
        batch = worker.sample()
        assert set(batch.policy_batches) == {"p0", "p1"}
        assert len(worker.policy_map.in_memory()) == 1
        _assert_logp_is_each_policys(worker, batch)
    finally:
        worker.stop()
