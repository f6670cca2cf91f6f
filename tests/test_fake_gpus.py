"""``_fake_gpus`` fakes the learner's GPU towers only, as in the reference: the driver's bundle
asks Ray for no GPU, while ``num_gpus_per_worker`` stays a real GPU request for each rollout and
evaluation worker (RLlib's ``default_resource_request`` zeroes the driver's GPU alone). On a
cluster without GPUs such a plan is refused at once, saying so."""

from __future__ import annotations

import pytest

from rlconf import PPOConfig
from runtime import ResourceError
from runtime.cluster import placement
from runtime.cluster.placement import check_plan_fits
from runtime.cluster.resources import resource_plan


def _config() -> PPOConfig:
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .rollouts(num_workers=2)
        .resources(num_gpus=0.5, num_gpus_per_worker=0.25, _fake_gpus=True)
        .evaluation(evaluation_interval=1, evaluation_num_workers=2)
    )


def test_fake_gpus_keep_the_workers_gpu_requests() -> None:
    plan = resource_plan(_config())
    assert plan.driver == {"CPU": 1.0}
    assert plan.rollout == plan.evaluation == ({"CPU": 1.0, "GPU": 0.25},) * 2


def test_a_gpu_less_cluster_refuses_worker_gpus_naming_fake_gpus(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(placement, "alive_node_resources", lambda: [{"CPU": 8.0}])
    with pytest.raises(ResourceError) as error:
        check_plan_fits(resource_plan(_config()), "PPO", driver=False)
    message = str(error.value)
    assert "GPU 1 (cluster total 0)" in message
    assert "also with _fake_gpus, which fakes only the learner's towers" in message
    # Where the cluster has some GPUs, there is no such note.
    monkeypatch.setattr(placement, "alive_node_resources", lambda: [{"CPU": 8.0, "GPU": 0.5}])
    with pytest.raises(ResourceError, match=r"GPU 1 \(cluster total 0\.5\)") as error:
        check_plan_fits(resource_plan(_config()), "PPO", driver=False)
    assert "_fake_gpus" not in str(error.value)
