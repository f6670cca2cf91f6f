"""``Algorithm.add_policy`` positionally, in the order RLlib users write it
(``add_policy(policy_id, policy_cls, observation_space, action_space, config)``), beside the
keyword forms; an argument of the wrong kind (another RLlib version's order, a policy
instance) is a TypeError naming it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from rlconf import PolicySpec, PPOConfig
from runtime import Algorithm, TorchPolicy, make_multi_agent
from tests.multi_agent_envs import map_1_to_p2, map_by_index

MultiAgentCartPole = make_multi_agent("CartPole-v1")
OBS_SPACE = gym.spaces.Box(-np.inf, np.inf, (4,), np.float32)
ACT_SPACE = gym.spaces.Discrete(2)


class CountingPolicy(TorchPolicy):
    """A user's policy class."""


@pytest.fixture
def algo() -> Iterator[Algorithm]:
    algorithm = (
        PPOConfig()
        .environment(MultiAgentCartPole, env_config={"num_agents": 2})
        .rollouts(num_workers=0, rollout_fragment_length=25)
        .training(
            train_batch_size=50, sgd_minibatch_size=50, num_sgd_iter=1, model={"fcnet_hiddens": [8]}
        )
        .multi_agent(
            policies={"p0": PolicySpec(), "p1": PolicySpec()}, policy_mapping_fn=map_by_index
        )
        .debugging(seed=0)
        .build()
    )
    yield algorithm
    algorithm.stop()


def test_add_policy_takes_rllibs_positional_order(algo: Algorithm) -> None:
    added = algo.add_policy(
        "p2",
        CountingPolicy,
        OBS_SPACE,
        ACT_SPACE,
        {"lr": 1e-3},
        policy_mapping_fn=map_1_to_p2,
        policies_to_train=["p0", "p2"],
    )
    assert isinstance(added, CountingPolicy) and added is algo.get_policy("p2")
    assert added.observation_space == OBS_SPACE and added.action_space == ACT_SPACE
    assert added.config["lr"] == 1e-3 and algo.get_policy("p0").config["lr"] != 1e-3
    result = algo.train()
    assert "p2" in result["info"]["learner"] and "p1" not in result["info"]["learner"]
    # The algorithm's own policy class, positionally, with the spaces inferred.
    assert type(algo.add_policy("p3", TorchPolicy)) is TorchPolicy
    # The keyword form RLlib 2.x writes.
    keyword = algo.add_policy(
        "p4", policy_cls=None, observation_space=OBS_SPACE, action_space=ACT_SPACE, config=None
    )
    assert type(keyword) is TorchPolicy


@pytest.mark.parametrize(
    "args, match",
    [
        ((OBS_SPACE, ACT_SPACE), r"add_policy\(policy_cls=Box.*not a policy class"),
        ((None, OBS_SPACE, "Discrete(2)"), r"add_policy\(action_space='Discrete.*not a gymnasium"),
        ((None, OBS_SPACE, ACT_SPACE, "lr"), r"add_policy\(config='lr'\).*not a dict"),
    ],
)
def test_an_argument_of_the_wrong_kind_is_a_type_error_naming_it(
    algo: Algorithm, args: tuple[Any, ...], match: str
) -> None:
    with pytest.raises(TypeError, match=match):
        algo.add_policy("p2", *args)
    assert "p2" not in algo.workers.local_worker().policy_map


def test_a_policy_instance_is_refused_with_what_to_give_instead(algo: Algorithm) -> None:
    instance = algo.get_policy("p0")
    refused = r"policy=TorchPolicy instance.*policy_state="
    with pytest.raises(TypeError, match=refused):
        algo.add_policy("p2", None, instance)  # type: ignore[arg-type]  # RLlib 2.x's order
    with pytest.raises(TypeError, match=refused):
        algo.add_policy("p2", policy=instance)
    assert "p2" not in algo.workers.local_worker().policy_map
