"""Where an ``Algorithm``'s parts run: the learners' devices, the device the driver's own
rollout worker acts on, and the placement group its rollout and evaluation actors are reserved
in (the bundles Tune reserves for a trial, see ``runtime.cluster.resources``)."""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import torch

from rlconf.algorithm_config import AlgorithmConfig
from rlconf.errors import ConfigError
from runtime.cluster.placement import Placement, local_cluster_cpus
from runtime.cluster.ray_session import ensure_ray
from runtime.cluster.resources import ResourcePlan
from runtime.core.settings import setting, settings_of

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class DeviceSettings:
    num_gpus: float
    num_learner_workers: int
    num_gpus_per_learner_worker: float
    num_cpus_per_learner_worker: float
    num_gpus_per_worker: float
    placement_timeout_s: float
    fake_gpus: bool = setting("_fake_gpus")


def device_settings(config: AlgorithmConfig) -> DeviceSettings:
    return settings_of(DeviceSettings, config, "devices")


def learner_devices(config: AlgorithmConfig, owner: str) -> list[str]:
    """The device of each learner tower in the driver: ``["cpu"]`` without GPUs; ``["cuda:0"]``
    for ``num_gpus`` up to 1 (a fraction shares the GPU); ``k`` towers ``cuda:0..k-1`` for
    ``num_gpus=k``; ``k`` CPU towers with ``_fake_gpus`` (the reference's simulated GPUs).
    A ``ConfigError`` when the GPUs asked for are not there or can't be split into towers.
    With ``num_learner_workers`` the learners are those actors (``learner_worker_device``)."""
    settings = device_settings(config)
    num_gpus = float(settings.num_gpus)
    if int(settings.num_learner_workers) > 0:
        if num_gpus > 0:
            raise ConfigError.single(
                owner,
                "num_gpus",
                "gives the driver GPUs (or fake towers), but with num_learner_workers > 0 the "
                "driver learns nowhere: give the learner workers GPUs with "
                "num_gpus_per_learner_worker",
                value=num_gpus,
                has_value=True,
                allowed="0 with num_learner_workers",
            )
        return [learner_worker_device(config)] * int(settings.num_learner_workers)
    unused = {
        "num_gpus_per_learner_worker": (float(settings.num_gpus_per_learner_worker), 0.0),
        "num_cpus_per_learner_worker": (float(settings.num_cpus_per_learner_worker), 1.0),
    }
    for key, (value, default) in unused.items():
        if value != default:
            raise ConfigError.single(
                owner,
                key,
                "sizes learner workers, but num_learner_workers is 0 (the driver learns): "
                "set num_learner_workers, or leave this at its default",
                value=value,
                has_value=True,
                allowed=repr(default),
            )
    if num_gpus > 1 and not num_gpus.is_integer():
        raise ConfigError.single(
            owner,
            "num_gpus",
            "above 1 means one learner tower per GPU, so it must be a whole number (a "
            "fraction below 1 shares one GPU)",
            value=num_gpus,
            has_value=True,
            allowed="0, a fraction in (0, 1], or 2, 3, ...",
        )
    towers = max(1, math.ceil(num_gpus))
    if settings.fake_gpus:
        return ["cpu"] * towers
    if num_gpus == 0:
        return ["cpu"]
    if not torch.cuda.is_available():
        raise ConfigError.single(
            owner,
            "num_gpus",
            "asks for a GPU but torch sees none (set num_gpus=0, or _fake_gpus=True to "
            "test GPU settings on CPU)",
            value=num_gpus,
            has_value=True,
        )
    available = torch.cuda.device_count()
    if towers > available:
        raise ConfigError.single(
            owner,
            "num_gpus",
            f"asks for {towers} learner towers but torch sees {available} GPU(s)",
            value=num_gpus,
            has_value=True,
            allowed=f"at most {available}",
        )
    return [f"cuda:{i}" for i in range(towers)]


def learner_worker_device(config: AlgorithmConfig) -> str:
    """Each learner worker's device: its GPU (the first one Ray makes visible to it) with
    ``num_gpus_per_learner_worker`` (not with ``_fake_gpus``), else the CPU."""
    settings = device_settings(config)
    if float(settings.num_gpus_per_learner_worker) > 0 and not settings.fake_gpus:
        return "cuda:0"
    return "cpu"


def acting_device(config: AlgorithmConfig) -> str:
    """The device the driver's own rollout worker acts on: the CPU, whatever the learners use,
    unless ``num_gpus_per_worker`` gives workers a GPU share and torch sees one."""
    per_worker = float(device_settings(config).num_gpus_per_worker)
    if per_worker <= 0:
        return "cpu"
    if torch.cuda.is_available():
        return "cuda"
    logger.warning(
        "num_gpus_per_worker=%s but torch sees no CUDA device: the local worker acts on CPU",
        per_worker,
    )
    return "cpu"


def reserve_placement(plan: ResourcePlan, config: AlgorithmConfig, owner: str) -> Placement | None:
    """The placement group of the plan's actors, with Ray started for it; None without actors."""
    if not plan.num_actors:
        return None
    started = ensure_ray(config, num_cpus=local_cluster_cpus(plan))
    try:
        return Placement.reserve(plan, float(device_settings(config).placement_timeout_s), owner)
    except BaseException:
        # A plan refused (or a wait given up) leaves no Ray behind that this build started:
        # the caller may go on, and a later build or ray.init() in this process starts afresh.
        if started:
            import ray

            ray.shutdown()
        raise
