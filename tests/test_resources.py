"""The one resource calculation: config -> bundles -> Tune's PlacementGroupFactory."""

from __future__ import annotations

import pytest
from ray.tune import PlacementGroupFactory

from rlconf import ConfigError, PPOConfig
from runtime import PPO
from runtime.cluster.resources import resource_plan


def _config() -> PPOConfig:
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .rollouts(num_workers=2)
        .resources(
            num_gpus=0.5,
            num_cpus_for_driver=2,
            num_cpus_per_worker=1,
            num_gpus_per_worker=0.25,
            custom_resources_per_worker={"sim": 1},
            placement_strategy="SPREAD",
        )
    )


def test_bundles_are_driver_then_rollout_workers_with_fractions_as_given() -> None:
    plan = resource_plan(_config())
    assert plan.tune_bundles() == [
        {"CPU": 2.0, "GPU": 0.5},
        {"CPU": 1.0, "GPU": 0.25, "sim": 1.0},
        {"CPU": 1.0, "GPU": 0.25, "sim": 1.0},
    ]
    assert plan.totals(driver=True) == {"CPU": 4.0, "GPU": 1.0, "sim": 2.0}
    # Outside Tune the driver is the user's process: only the workers reserve anything.
    assert plan.totals(driver=False) == {"CPU": 2.0, "GPU": 0.5, "sim": 2.0}
    assert plan.placement_bundles(driver=False) == plan.tune_bundles()[1:]


def test_evaluation_workers_get_bundles_from_the_evaluation_config() -> None:
    config = _config().evaluation(
        evaluation_interval=1,
        evaluation_num_workers=3,
        evaluation_config=PPOConfig.overrides(num_cpus_per_worker=0.5, num_gpus_per_worker=0),
    )
    plan = resource_plan(config)
    assert plan.tune_bundles()[3:] == [{"CPU": 0.5, "sim": 1.0}] * 3
    assert plan.bundle_index("rollout", 1, driver=True) == 1
    assert plan.bundle_index("evaluation", 1, driver=True) == 3
    assert plan.bundle_index("evaluation", 3, driver=True) == 5
    assert plan.bundle_index("evaluation", 3, driver=False) == 4


def test_evaluation_workers_count_only_when_evaluation_is_configured() -> None:
    plan = resource_plan(_config().evaluation(evaluation_num_workers=0))
    assert len(plan.tune_bundles()) == 3
    plan = resource_plan(_config().evaluation(evaluation_num_workers=2))
    assert len(plan.tune_bundles()) == 5


def test_fake_gpus_reserve_no_gpu_for_the_learner() -> None:
    plan = resource_plan(_config().resources(_fake_gpus=True))
    assert plan.driver == {"CPU": 2.0}


def test_empty_bundles_are_left_out_of_the_placement_group_and_indices_follow() -> None:
    config = _config().resources(
        num_cpus_for_driver=0, num_gpus=0, num_gpus_per_worker=0, custom_resources_per_worker={}
    )
    plan = resource_plan(config)
    assert plan.tune_bundles() == [{}, {"CPU": 1.0}, {"CPU": 1.0}]
    assert plan.placement_bundles(driver=True) == [{"CPU": 1.0}, {"CPU": 1.0}]
    assert plan.bundle_index("rollout", 1, driver=True) == 0
    free_workers = config.copy().resources(num_cpus_per_worker=0)
    assert resource_plan(free_workers).bundle_index("rollout", 2, driver=False) is None


@pytest.mark.parametrize("as_dict", [False, True])
def test_default_resource_request_is_the_plan_as_a_placement_group_factory(as_dict: bool) -> None:
    config = _config().evaluation(evaluation_interval=2, evaluation_num_workers=1)
    factory = PPO.default_resource_request(config.to_dict() if as_dict else config)
    assert isinstance(factory, PlacementGroupFactory)
    assert factory.bundles == resource_plan(config).placement_bundles(driver=True)
    assert factory.strategy == "SPREAD"
    assert factory.required_resources == {"CPU": 5.0, "GPU": 1.25, "sim": 3.0}


def test_default_resource_request_drops_an_empty_driver_bundle_as_tune_does() -> None:
    config = _config().resources(num_cpus_for_driver=0, num_gpus=0)
    factory = PPO.default_resource_request(config)
    assert factory.head_bundle_is_empty
    assert factory.bundles == resource_plan(config).placement_bundles(driver=True)


def test_negative_or_wrong_resources_fail_at_the_setter() -> None:
    with pytest.raises(ConfigError, match="num_gpus_per_worker"):
        PPOConfig().resources(num_gpus_per_worker=-0.25)
    with pytest.raises(ConfigError, match="placement_strategy"):
        PPOConfig().resources(placement_strategy="CLUSTER")  # type: ignore[arg-type]
