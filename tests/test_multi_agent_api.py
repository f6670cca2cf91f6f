"""The multi-agent Algorithm API in the driver (num_workers=0): adding and removing policies
while training, checkpoints that hold the policy set (``save`` / ``restore`` /
``from_checkpoint``), the policy map's capacity and disk cache, and acting with a chosen
policy. No Ray is started here."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from rlconf import PolicySpec, PPOConfig
from runtime import Algorithm, make_multi_agent
from runtime.env.multi_agent_runner import MultiAgentRunner
from tests.multi_agent_envs import (
    ScriptedEnv,
    map_1_to_p2,
    map_all_to_p0,
    map_by_index,
    map_scripted,
    obs_of,
)

MultiAgentCartPole = make_multi_agent("CartPole-v1")


def _config(num_agents: int = 2, **multi: Any) -> PPOConfig:
    """PPO on CartPole copies: agent i -> policy ``p<i>``."""
    policies = {f"p{i}": PolicySpec() for i in range(num_agents)}
    return (
        PPOConfig()
        .environment(MultiAgentCartPole, env_config={"num_agents": num_agents})
        .rollouts(num_workers=0, rollout_fragment_length=25)
        .training(
            train_batch_size=100,
            sgd_minibatch_size=50,
            num_sgd_iter=1,
            model={"fcnet_hiddens": [8]},
        )
        .multi_agent(policies=policies, policy_mapping_fn=map_by_index, **multi)
        .reporting(metrics_num_episodes_for_smoothing=1)
        .debugging(seed=0)
    )


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether two weight dicts (name -> array or tensor) are equal bit for bit."""
    return a.keys() == b.keys() and all(
        torch.equal(torch.as_tensor(np.asarray(a[k])), torch.as_tensor(np.asarray(b[k]))) for k in a
    )


def _policy_ids(algo: Algorithm) -> set[str]:
    return set(algo.workers.local_worker().policy_map)


@pytest.fixture
def algo() -> Any:
    algo = _config().build()
    algo.train()
    yield algo
    algo.stop()


# ------------------------------------------------------------------- add and remove


def test_add_policy_from_another_policys_state_trains_from_the_next_iteration(
    algo: Algorithm,
) -> None:
    state = algo.get_policy("p0").get_state()
    added = algo.add_policy(
        "p2",
        policy_state=state,
        policy_mapping_fn=map_1_to_p2,
        policies_to_train=["p0", "p1", "p2"],
    )
    assert added is algo.get_policy("p2")
    assert _same(algo.get_weights(["p2"])["p2"], algo.get_weights(["p0"])["p0"])
    assert added.global_timestep == algo.get_policy("p0").global_timestep
    assert _policy_ids(algo) == {"p0", "p1", "p2"}
    result = algo.train()
    assert "p2" in result["info"]["learner"]
    assert "p2" in result["policy_reward_mean"]
    assert "learner_stats" in result["info"]["learner"]["p2"]
    # p2 learned on its own rows: it is no longer p0.
    assert not _same(algo.get_weights(["p2"])["p2"], algo.get_weights(["p0"])["p0"])


def test_an_added_policy_not_to_train_acts_but_does_not_learn(algo: Algorithm) -> None:
    algo.add_policy("p2", policy_mapping_fn=map_1_to_p2, policies_to_train=["p0", "p1"])
    before = algo.get_weights(["p2"])["p2"]
    results = [algo.train() for _ in range(2)]
    assert all("p2" not in r["info"]["learner"] for r in results)
    assert "p2" in results[-1]["policy_reward_mean"]
    assert _same(algo.get_weights(["p2"])["p2"], before)


def test_adding_an_existing_id_fails(algo: Algorithm) -> None:
    with pytest.raises(ValueError, match=r"already a policy 'p1'"):
        algo.add_policy("p1")
    assert _policy_ids(algo) == {"p0", "p1"}


def test_remove_policy_drops_it_from_the_workers_and_the_results(algo: Algorithm) -> None:
    # Agent 1 moves to p2; after two iterations no running episode maps an agent to p1.
    algo.add_policy("p2", policy_mapping_fn=map_1_to_p2)
    for _ in range(2):
        algo.train()
    algo.remove_policy("p1", policy_mapping_fn=map_1_to_p2)
    worker = algo.workers.local_worker()
    assert "p1" not in worker.policy_map
    assert "p1" not in worker.preprocessors and "p1" not in worker.filters
    with pytest.raises(KeyError, match="p1"):
        algo.get_policy("p1")
    result = algo.train()
    assert set(result["info"]["learner"]) == {"p0", "p2"}
    assert set(result["policy_reward_mean"]) == {"p0", "p2"}
    assert set(algo.get_weights()) == {"p0", "p2"}
    with pytest.raises(KeyError, match="no policy 'p1'"):
        algo.remove_policy("p1")


def test_a_mapping_fn_that_still_returns_a_removed_policy_errors(algo: Algorithm) -> None:
    algo.add_policy("p2", policy_mapping_fn=map_1_to_p2)
    for _ in range(2):
        algo.train()
    # The mapping given with the removal still maps agent 1 to p1.
    algo.remove_policy("p1", policy_mapping_fn=map_by_index)
    with pytest.raises(ValueError, match=r"agent 1 to policy 'p1', which is not a policy"):
        for _ in range(5):
            algo.train()


def test_removing_a_policy_that_a_running_episode_uses_restarts_that_episode(
    algo: Algorithm,
) -> None:
    runner = algo.workers.local_worker().runner
    assert isinstance(runner, MultiAgentRunner)
    (episode,) = runner.episodes
    assert episode.policy_for(1) == "p1"  # the running episode maps agent 1 to p1
    algo.remove_policy("p1", policy_mapping_fn=map_all_to_p0, policies_to_train=["p0"])
    (restarted,) = runner.episodes
    assert restarted.episode_id != episode.episode_id
    assert restarted.policy_for(1) == "p0"
    result = algo.train()
    assert set(result["info"]["learner"]) == {"p0"}
    assert set(result["policy_reward_mean"]) == {"p0"}  # the cut episode is not reported
    assert set(algo.workers.local_worker().sample().policy_batches) == {"p0"}


# ------------------------------------------------------------------- checkpoints


def test_restore_brings_back_the_saved_policy_set(algo: Algorithm, tmp_path: Path) -> None:
    saved_weights = algo.get_weights()
    checkpoint = algo.save(str(tmp_path))
    algo.add_policy("p2", policy_mapping_fn=map_1_to_p2)
    algo.restore(checkpoint)
    assert _policy_ids(algo) == {"p0", "p1"}
    assert algo.workers.local_worker().policy_mapping_fn is map_by_index
    restored = algo.get_weights()
    assert set(restored) == {"p0", "p1"}
    for pid, weights in saved_weights.items():
        assert _same(restored[pid], weights), pid


def test_training_goes_on_after_restore_removed_a_policy_in_use(
    algo: Algorithm, tmp_path: Path
) -> None:
    checkpoint = algo.save(str(tmp_path))
    algo.add_policy("p2", policy_mapping_fn=map_1_to_p2)
    for _ in range(2):
        algo.train()  # every running episode now maps agent 1 to p2
    algo.restore(checkpoint)
    assert _policy_ids(algo) == {"p0", "p1"}
    result = algo.train()
    assert set(result["info"]["learner"]) == {"p0", "p1"}


def test_a_fresh_algorithm_restores_an_added_policy_with_its_weights(
    algo: Algorithm, tmp_path: Path
) -> None:
    algo.add_policy("p2", policy_mapping_fn=map_1_to_p2)
    algo.train()
    weights = algo.get_weights()
    checkpoint = algo.save(str(tmp_path))
    fresh = _config().build()
    try:
        fresh.restore(checkpoint)
        assert _policy_ids(fresh) == {"p0", "p1", "p2"}
        restored = fresh.get_weights()
        for pid in ("p0", "p1", "p2"):
            assert _same(restored[pid], weights[pid]), pid
        assert fresh.workers.local_worker().policy_mapping_fn is map_1_to_p2
        result = fresh.train()
        assert "p2" in result["info"]["learner"]
    finally:
        fresh.stop()
    # An env class made by make_multi_agent has no import path: the config is passed.
    loaded = Algorithm.from_checkpoint(checkpoint, config=_config())
    try:
        assert _policy_ids(loaded) == {"p0", "p1", "p2"}
        assert _same(loaded.get_weights(["p2"])["p2"], weights["p2"])
    finally:
        loaded.stop()


def test_from_checkpoint_with_the_saved_config_brings_back_an_added_policy(
    tmp_path: Path,
) -> None:
    config = (
        PPOConfig()
        .environment(ScriptedEnv)
        .rollouts(num_workers=0, rollout_fragment_length=12)
        .training(train_batch_size=24, sgd_minibatch_size=12, num_sgd_iter=1)
        .multi_agent(
            policies={"p0": PolicySpec(), "p1": PolicySpec()}, policy_mapping_fn=map_scripted
        )
        .debugging(seed=0)
    )
    algo = config.build()
    try:
        algo.train()
        added = algo.add_policy("extra", policy_state=algo.get_policy("p1").get_state())
        weights = added.get_weights()
        checkpoint = algo.save(str(tmp_path))
    finally:
        algo.stop()
    loaded = Algorithm.from_checkpoint(checkpoint)
    try:
        assert type(loaded).__name__ == "PPO"
        assert _policy_ids(loaded) == {"p0", "p1", "extra"}
        assert _same(loaded.get_weights(["extra"])["extra"], weights)
        assert set(loaded.train()["info"]["learner"]) == {"p0", "p1"}  # nothing maps to extra
    finally:
        loaded.stop()


# ------------------------------------------------------------------- policy map capacity


@pytest.mark.parametrize("capacity", [1, 2])
def test_a_small_policy_map_evicts_to_its_cache_and_training_works(
    capacity: int, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    algo = _config(3, policy_map_capacity=capacity, policy_map_cache=str(cache)).build()
    try:
        for _ in range(2):
            result = algo.train()
            assert set(result["info"]["learner"]) == {"p0", "p1", "p2"}
            assert set(result["policy_reward_mean"]) == {"p0", "p1", "p2"}
        policy_map = algo.workers.local_worker().policy_map
        assert len(policy_map.in_memory()) == capacity
        evicted = [pid for pid in policy_map if policy_map.is_cached(pid)]
        assert len(evicted) == 3 - capacity
        assert len(list(cache.rglob("*"))) > 0  # the evicted policies' files
        # Evicting and reloading a policy keeps its weights and learner state.
        pid = policy_map.in_memory()[-1]
        policy = policy_map[pid]
        weights, state = policy.get_weights(), policy.learner.get_state()
        for other in policy_map:
            if other != pid:
                _ = policy_map[other]  # loads it, evicting the least recently used
        assert policy_map.is_cached(pid)
        reloaded = policy_map[pid]
        assert reloaded is not policy
        assert _same(reloaded.get_weights(), weights)
        assert reloaded.learner.get_state() == state
        # A checkpoint holds every policy, evicted or not.
        saved = algo.get_weights()
        checkpoint = algo.save(str(tmp_path / "checkpoints"))
        algo.train()
        algo.restore(checkpoint)
        restored = algo.get_weights()
        assert all(_same(restored[pid], saved[pid]) for pid in ("p0", "p1", "p2"))
    finally:
        algo.stop()


def test_a_small_policy_map_learns_like_a_large_one_on_the_same_rows(tmp_path: Path) -> None:
    """The same train batch, learned on with capacity 1 and with capacity 100: the same
    weights (the sampled rows themselves differ: rebuilding an evicted policy draws from
    torch's random generator)."""
    small = _config(3, policy_map_capacity=1, policy_map_cache=str(tmp_path)).build()
    large = _config(3).build()
    try:
        large.set_weights(small.get_weights())
        batch = large.sample_train_batch()
        small.learn_on_batch(batch)
        large.learn_on_batch(batch)
        small_weights, large_weights = small.get_weights(), large.get_weights()
        for pid in ("p0", "p1", "p2"):
            assert _same(small_weights[pid], large_weights[pid]), pid
    finally:
        small.stop()
        large.stop()


# ------------------------------------------------------------------- acting


def test_compute_actions_with_a_chosen_policy_and_per_policy_weights(algo: Algorithm) -> None:
    obs0 = np.array([0.01, -0.02, 0.03, 0.04], np.float32)
    obs1 = np.array([-0.05, 0.2, -0.1, 0.3], np.float32)
    action = algo.compute_single_action(obs0, policy_id="p1")
    assert algo.get_policy("p1").action_space.contains(int(action))
    actions = algo.compute_actions({0: obs0, 1: obs1}, policy_id="p0")
    assert set(actions) == {0, 1}
    assert all(algo.get_policy("p0").action_space.contains(int(a)) for a in actions.values())

    def logits(pid: str) -> np.ndarray[Any, Any]:
        _, _, extra = algo.compute_actions(
            [obs0, obs1], policy_id=pid, explore=False, full_fetch=True
        )
        return np.asarray(extra["action_dist_inputs"])

    assert not np.array_equal(logits("p0"), logits("p1"))
    greedy = algo.compute_single_action(obs0, policy_id="p1", explore=False)
    assert greedy == algo.compute_actions({"k": obs0}, policy_id="p1", explore=False)["k"]

    only_p0 = algo.get_weights(["p0"])
    assert set(only_p0) == {"p0"}
    algo.set_weights({"p1": only_p0["p0"]})
    assert _same(algo.get_weights(["p1"])["p1"], only_p0["p0"])
    np.testing.assert_array_equal(logits("p0"), logits("p1"))
    with pytest.raises(KeyError, match="no policy 'p9'"):
        algo.compute_single_action(obs0, policy_id="p9")


def test_acting_on_a_scripted_observation_with_each_policy() -> None:
    config = (
        PPOConfig()
        .environment(ScriptedEnv)
        .rollouts(num_workers=0)
        .multi_agent(
            policies={"p0": PolicySpec(), "p1": PolicySpec()}, policy_mapping_fn=map_scripted
        )
        .debugging(seed=0)
    )
    algo = config.build()
    try:
        for pid in ("p0", "p1"):
            action = algo.compute_single_action(obs_of("a", 3), policy_id=pid)
            assert action in (0, 1)
    finally:
        algo.stop()
