"""Where an ``Algorithm``'s parts run: the learner's device, and the placement group its
rollout and evaluation actors are reserved in (the bundles Tune reserves for a trial, see
``runtime.cluster.resources``)."""

from __future__ import annotations

import torch

from rlconf.algorithm_config import AlgorithmConfig
from rlconf.errors import ConfigError
from runtime.cluster.placement import Placement, local_cluster_cpus
from runtime.cluster.ray_session import ensure_ray
from runtime.cluster.resources import ResourcePlan


def learner_device(config: AlgorithmConfig, owner: str) -> str:
    """``"cuda"`` when ``num_gpus`` asks for a GPU (and not ``_fake_gpus``), else ``"cpu"``;
    a ``ConfigError`` when torch sees no GPU."""
    num_gpus = float(config["num_gpus"])
    if num_gpus == 0 or config["_fake_gpus"]:
        return "cpu"
    if not torch.cuda.is_available():
        raise ConfigError.single(
            owner,
            "num_gpus",
            "asks for a GPU but torch sees none (set num_gpus=0, or _fake_gpus=True to "
            "test GPU settings on CPU)",
            value=num_gpus,
            has_value=True,
        )
    return "cuda"


def reserve_placement(plan: ResourcePlan, config: AlgorithmConfig, owner: str) -> Placement | None:
    """The placement group of the plan's actors, with Ray started for it; None without actors."""
    if not plan.num_actors:
        return None
    ensure_ray(config, num_cpus=local_cluster_cpus(plan))
    return Placement.reserve(plan, float(config["placement_timeout_s"]), owner)
