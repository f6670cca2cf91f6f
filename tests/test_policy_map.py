"""``PolicyMap``: LRU eviction to an on-disk cache and exact round trips of what a policy is
(weights, optimizer and target-network state, learner and exploration state, timestep), with
real PPO and DQN policies on CartPole's spaces."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch

from rlconf import DQNConfig, PPOConfig
from runtime import DQN, PPO, SampleBatch, TorchPolicy
from runtime.core.learner import DEFAULT_OPTIMIZER
from runtime.core.policy_map import PolicyMap
from runtime.training.checkpoint_files import STATE_FILE

SB = SampleBatch
OBS_SPACE = gym.spaces.Box(-np.inf, np.inf, (4,), np.float32)  # CartPole-v1
ACTION_SPACE = gym.spaces.Discrete(2)
PPO_CONFIG = (
    PPOConfig()
    .rollouts(rollout_fragment_length=16)
    .training(
        train_batch_size=16,
        sgd_minibatch_size=8,
        num_sgd_iter=2,
        model={"fcnet_hiddens": [8]},
    )
    .debugging(seed=0)
    .freeze()
)
DQN_CONFIG = DQNConfig().training(model={"fcnet_hiddens": [8]}).freeze()


def _ppo(policy_id: str = "") -> TorchPolicy:
    return PPO.policy_class(OBS_SPACE, ACTION_SPACE, PPO_CONFIG)


def _dqn(policy_id: str = "") -> TorchPolicy:
    return DQN.policy_class(OBS_SPACE, ACTION_SPACE, DQN_CONFIG)


class Counting:
    """A ``make_policy`` that counts its calls."""

    def __init__(self, make: Callable[[str], TorchPolicy] = _ppo) -> None:
        self.make = make
        self.calls: list[str] = []

    def __call__(self, policy_id: str) -> TorchPolicy:
        self.calls.append(policy_id)
        return self.make(policy_id)


def _batch(policy: TorchPolicy) -> SampleBatch:
    """16 rows the policy sampled itself, with made-up advantages and value targets."""
    obs = np.random.default_rng(1).normal(size=(16, 4)).astype(np.float32)
    actions, _, extra = policy.compute_actions(obs)
    return SB(
        {
            SB.OBS: obs,
            SB.ACTIONS: actions,
            **extra,
            SB.ADVANTAGES: np.linspace(-1.0, 1.0, 16, dtype=np.float32),
            SB.VALUE_TARGETS: np.ones(16, np.float32),
        }
    )


def _assert_same(a: Any, b: Any) -> None:
    """Equal nested state dicts, tensors included (exactly)."""
    if isinstance(a, torch.Tensor):
        assert isinstance(b, torch.Tensor) and torch.equal(a, b)
    elif isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys()
        for key in a:
            _assert_same(a[key], b[key])
    elif isinstance(a, list | tuple):
        assert isinstance(b, list | tuple) and len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            _assert_same(x, y)
    else:
        assert a == b


def _entries(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob(STATE_FILE))


# ---------------------------------------------------------------------------- eviction


def test_capacity_two_evicts_the_least_recently_used_to_the_cache_folder(tmp_path: Path) -> None:
    make = Counting()
    policies = PolicyMap(2, tmp_path, make)
    for pid in ("a", "b", "c"):
        policies[pid] = _ppo()
    assert policies.in_memory() == ["b", "c"]
    assert policies.is_cached("a") and not policies.is_cached("b")
    assert list(policies) == ["a", "b", "c"] and len(policies) == 3
    assert policies.peek("a") is None
    [entry] = _entries(tmp_path)
    assert (entry.parent / "module.pt").is_file()
    assert not (entry.parent / "learner").exists()  # "a" never learned: no learner to save

    # Using "b" makes "c" the least recently used: it goes when "a" comes back.
    policies["b"]
    policies["a"]
    assert policies.in_memory() == ["b", "a"]
    assert policies.is_cached("c") and not policies.is_cached("a")
    assert make.calls == ["a"]
    assert len(_entries(tmp_path)) == 1  # "a"'s entry went with its reload
    policies.close()


def test_peek_and_contains_neither_reload_nor_reorder(tmp_path: Path) -> None:
    make = Counting()
    policies = PolicyMap(2, tmp_path, make)
    for pid in ("a", "b", "c"):
        policies[pid] = _ppo()
    assert "a" in policies and "nope" not in policies
    assert policies.peek("b") is not None and policies.peek("a") is None
    assert policies.in_memory() == ["b", "c"]  # peek("b") did not make it the most recent
    assert policies.is_cached("a") and make.calls == []
    policies.close()


def test_reload_restores_weights_optimizer_learner_state_and_timestep(tmp_path: Path) -> None:
    policies = PolicyMap(1, tmp_path, _ppo)
    original = _ppo()
    original.learn_on_batch(_batch(original))
    original.on_global_var_update({"timestep": 1234})
    weights = {k: v.clone() for k, v in original.module.state_dict().items()}
    optimizer = original.optimizer.state_dict()
    learner_state = original.learner.get_state()
    assert optimizer["state"] and learner_state["num_grad_updates"] == 4

    policies["p"] = original
    policies["other"] = _ppo()
    assert policies.is_cached("p")
    [entry] = _entries(tmp_path)
    assert (entry.parent / "learner" / "optimizers" / f"{DEFAULT_OPTIMIZER}.pt").is_file()

    restored = policies["p"]
    assert restored is not original
    _assert_same(weights, restored.module.state_dict())
    assert restored._learner is not None
    _assert_same(optimizer, restored.optimizer.state_dict())
    assert restored.learner.get_state() == learner_state
    assert restored.global_timestep == 1234
    assert restored.get_exploration_state() == original.get_exploration_state()

    # The next update goes the same way on both: nothing that shapes it was lost.
    batch = _batch(original)
    original.learn_on_batch(batch)
    restored.learn_on_batch(batch)
    _assert_same(original.module.state_dict(), restored.module.state_dict())
    policies.close()


def test_reload_restores_target_networks_and_the_epsilon_schedule(tmp_path: Path) -> None:
    policies = PolicyMap(1, tmp_path, _dqn)
    original = _dqn()
    # One real Adam step moves the Q-network away from its target copy.
    loss = sum(p.square().sum() for p in original.module.parameters())
    original.optimizer.zero_grad()
    assert isinstance(loss, torch.Tensor)
    loss.backward()  # type: ignore[no-untyped-call]
    original.learner.apply_gradients()
    original.on_global_var_update({"timestep": 5_000})
    exploration = original.get_exploration_state()
    assert 0.0 < exploration["cur_epsilon"] < 1.0
    tensors = original.learner.get_tensor_state()
    with pytest.raises(AssertionError):
        _assert_same(original.module.state_dict(), tensors["targets/q"])

    policies["dqn"] = original
    policies["other"] = _dqn()
    restored = policies["dqn"]
    _assert_same(tensors, restored.learner.get_tensor_state())
    _assert_same(original.module.state_dict(), restored.module.state_dict())
    assert restored.get_exploration_state() == exploration
    assert restored.learner.num_grad_updates == 1
    policies.close()


def test_a_policy_without_a_learner_stays_without_one(tmp_path: Path) -> None:
    policies = PolicyMap(1, tmp_path, _ppo)
    actor = _ppo()
    actor.on_global_var_update({"timestep": 77})
    weights = actor.get_weights()
    policies["actor"] = actor
    policies["other"] = _ppo()
    assert actor._learner is None  # eviction did not make one to save it
    restored = policies["actor"]
    assert restored._learner is None
    assert restored.global_timestep == 77
    for name, value in weights.items():
        np.testing.assert_array_equal(restored.get_weights()[name], value)
    policies.close()


def test_after_load_is_called_with_each_reloaded_policy(tmp_path: Path) -> None:
    policies = PolicyMap(1, tmp_path, _ppo)
    seen: list[tuple[str, TorchPolicy]] = []
    policies.after_load = lambda pid, policy: seen.append((pid, policy))
    policies["a"] = _ppo()
    policies["b"] = _ppo()
    assert seen == []  # evictions and in-memory reads are no reload
    reloaded = policies["a"]
    assert seen == [("a", reloaded)]
    policies["a"]
    assert len(seen) == 1
    policies.close()


def test_an_interrupted_eviction_leaves_no_entry_and_keeps_the_policy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    policies = PolicyMap(1, tmp_path, _ppo)
    first = _ppo()
    policies["a"] = first

    def crash(*args: Any, **kwargs: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(torch, "save", crash)
    with pytest.raises(KeyboardInterrupt):
        policies["b"] = _ppo()
    [folder] = list(tmp_path.iterdir())
    assert list(folder.iterdir()) == []  # neither an entry nor its temporary folder
    assert not policies.is_cached("a") and policies.peek("a") is first
    monkeypatch.undo()
    policies["c"] = _ppo()  # the next eviction catches up
    assert policies.in_memory() == ["c"] and len(_entries(tmp_path)) == 2
    assert policies["a"] is not first
    policies.close()


# ---------------------------------------------------------------------------- deleting, ids


def test_del_removes_a_cached_policy_and_its_files(tmp_path: Path) -> None:
    policies = PolicyMap(1, tmp_path, _ppo)
    policies["a"] = _ppo()
    policies["b"] = _ppo()
    assert len(_entries(tmp_path)) == 1
    del policies["a"]
    assert _entries(tmp_path) == []
    assert "a" not in policies and list(policies) == ["b"]
    del policies["b"]
    assert len(policies) == 0 and policies.in_memory() == []
    with pytest.raises(KeyError):
        del policies["b"]
    policies.close()


def test_replacing_a_cached_policy_drops_its_files(tmp_path: Path) -> None:
    make = Counting()
    policies = PolicyMap(1, tmp_path, make)
    policies["a"] = _ppo()
    policies["b"] = _ppo()
    fresh = _ppo()
    policies["a"] = fresh  # evicts "b", drops the old "a"
    assert policies.is_cached("b") and not policies.is_cached("a")
    assert policies["a"] is fresh and make.calls == []
    assert list(policies) == ["a", "b"]  # an id keeps its place, as in a dict
    assert len(_entries(tmp_path)) == 1
    policies.close()


def test_unknown_id_raises_a_key_error_naming_it_and_the_known_ids(tmp_path: Path) -> None:
    policies = PolicyMap(1, tmp_path, _ppo)
    policies["a"] = _ppo()
    policies["b"] = _ppo()
    with pytest.raises(KeyError, match=r"'nope'.*known ids: \['a', 'b'\]"):
        policies["nope"]
    assert policies.get("nope") is None
    policies.close()


def test_capacity_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="capacity"):
        PolicyMap(0, None, _ppo)


# ---------------------------------------------------------------------------- folders


def test_no_cache_dir_makes_a_temp_folder_at_the_first_eviction_and_close_removes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    policies = PolicyMap(1, None, _ppo)
    policies["a"] = _ppo()
    assert list(tmp_path.iterdir()) == []  # nothing evicted yet: no folder
    policies["b"] = _ppo()
    [folder] = list(tmp_path.iterdir())
    assert folder.name.startswith("rlconf-policy-cache-")
    assert len(_entries(folder)) == 1

    policies.close()
    assert list(tmp_path.iterdir()) == []
    # The evicted policy went with the folder; the one in memory stays.
    assert list(policies) == ["b"] and policies.in_memory() == ["b"]
    policies.close()  # twice is harmless


def test_a_given_cache_dir_is_made_and_only_the_maps_own_subfolder_removed(
    tmp_path: Path,
) -> None:
    cache = tmp_path / "missing" / "cache"
    with PolicyMap(1, cache, _ppo) as policies:
        assert cache.is_dir()
        (cache / "someone-else").mkdir()
        policies["a"] = _ppo()
        policies["b"] = _ppo()
        assert len(list(cache.iterdir())) == 2
    assert [p.name for p in cache.iterdir()] == ["someone-else"]


def test_two_maps_sharing_a_cache_dir_keep_their_policies_apart(tmp_path: Path) -> None:
    first, second = PolicyMap(1, tmp_path, _ppo), PolicyMap(1, tmp_path, _ppo)
    originals: dict[tuple[int, str], dict[str, torch.Tensor]] = {}
    for index, policies in enumerate((first, second)):
        for pid in ("a", "b"):
            policy = _ppo()
            originals[index, pid] = {k: v.clone() for k, v in policy.module.state_dict().items()}
            policies[pid] = policy
    assert first.is_cached("a") and second.is_cached("a")
    assert len(list(tmp_path.iterdir())) == 2  # a subfolder each
    for index, policies in enumerate((first, second)):
        _assert_same(originals[index, "a"], policies["a"].module.state_dict())

    second.close()
    assert len(list(tmp_path.iterdir())) == 1
    _assert_same(originals[0, "b"], first["b"].module.state_dict())
    first.close()
    assert list(tmp_path.iterdir()) == []


def test_policy_ids_with_any_characters_are_safe_file_names(tmp_path: Path) -> None:
    policies = PolicyMap(1, tmp_path, _ppo)
    odd = ["../up", "a/b", "a_b", ""]
    for pid in odd:
        policies[pid] = _ppo()
    policies["last"] = _ppo()
    assert all(policies.is_cached(pid) for pid in odd)
    assert len(_entries(tmp_path)) == len(odd)
    assert all(tmp_path in entry.parents for entry in _entries(tmp_path))
    for pid in odd:
        assert policies[pid] is not None
    policies.close()
