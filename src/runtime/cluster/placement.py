"""Reserving a ``ResourcePlan`` as a Ray placement group and placing actors in its bundles.

Inside a Tune trial the trial's own group (made from the same plan by
``Algorithm.default_resource_request``) is used; outside Tune the algorithm reserves the group
itself, after checking that the cluster can hold it at all.
"""

from __future__ import annotations

import logging
import math
from typing import Any

from runtime.cluster.resources import ResourcePlan, Role, format_bundle

logger = logging.getLogger(__name__)


class ResourceError(RuntimeError):
    """The resources a config asks for can't be had (too large, or held by others)."""


class Placement:
    """The placement group an algorithm's actors run in."""

    def __init__(
        self, plan: ResourcePlan, group: Any, *, owned: bool, exact: bool, driver: bool
    ) -> None:
        self.plan = plan
        self.group = group
        self.owned = owned
        self._exact = exact
        #: Whether the group holds the driver's bundle (a Tune trial's group does).
        self.driver = driver

    @classmethod
    def reserve(cls, plan: ResourcePlan, timeout_s: float, owner: str) -> Placement:
        """The trial's placement group under Tune; otherwise a new group of the workers'
        bundles (the driver is this process, not an actor), ready."""
        import ray
        from ray.util import get_current_placement_group, placement_group, remove_placement_group

        current = get_current_placement_group()
        if current is not None:
            needed = plan.placement_bundles(driver=True)
            exact = len(current.bundle_specs) == len(needed)
            if not exact:
                logger.warning(
                    "%s: the trial's placement group has %d bundles but the config needs %d "
                    "(%s); actors are placed in any bundle of the group",
                    owner,
                    len(current.bundle_specs),
                    len(needed),
                    plan.describe(driver=True),
                )
            return cls(plan, current, owned=False, exact=exact, driver=True)
        bundles = plan.placement_bundles(driver=False)
        if not bundles:  # no worker asks for resources: nothing to reserve
            return cls(plan, None, owned=False, exact=True, driver=False)
        _refuse_oversized(plan, owner)
        group = placement_group(bundles, strategy=plan.strategy)
        try:
            ray.get(group.ready(), timeout=timeout_s)
        except ray.exceptions.GetTimeoutError:
            remove_placement_group(group)
            free = ray.available_resources()  # type: ignore[no-untyped-call]
            totals = plan.totals(driver=False)
            available = {k: v for k, v in free.items() if k in totals}
            raise ResourceError(
                f"{owner}: waited {timeout_s:g} s (placement_timeout_s) for a placement group "
                f"of {plan.describe(driver=False)} = {format_bundle(totals)} (strategy "
                f"{plan.strategy}); the cluster has {format_bundle(available)} free now, the "
                "rest is held by other placement groups or actors"
            ) from None
        return cls(plan, group, owned=True, exact=True, driver=False)

    def actor_options(self, role: Role, worker_index: int) -> dict[str, Any]:
        """``.options()`` that put worker ``worker_index`` of ``role`` into its bundle."""
        from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

        if self.group is None:
            return {}
        index = (
            self.plan.bundle_index(role, worker_index, driver=self.driver) if self._exact else -1
        )
        if index is None:
            return {}
        strategy = PlacementGroupSchedulingStrategy(
            placement_group=self.group,
            placement_group_bundle_index=index,
            placement_group_capture_child_tasks=False,
        )
        return {"scheduling_strategy": strategy}

    def release(self) -> None:
        if self.owned:
            from ray.util import remove_placement_group

            try:
                remove_placement_group(self.group)
            except Exception:  # Ray may already be shut down; nothing is left to free then
                logger.debug("could not remove the placement group", exc_info=True)
            self.owned = False


def _refuse_oversized(plan: ResourcePlan, owner: str) -> None:
    import ray

    cluster = ray.cluster_resources()  # type: ignore[no-untyped-call]
    totals = plan.totals(driver=False)
    short = {
        name: (amount, float(cluster.get(name, 0.0)))
        for name, amount in totals.items()
        if amount > float(cluster.get(name, 0.0)) + 1e-9
    }
    if short:
        wanted = ", ".join(
            f"{name} {need:g} (cluster total {have:g})" for name, (need, have) in short.items()
        )
        raise ResourceError(
            f"{owner}: the config asks for more than the Ray cluster has: {wanted}. Requested "
            f"{plan.describe(driver=False)} = {format_bundle(totals)} (the driver is this "
            "process and reserves nothing outside Tune). Lower num_workers, "
            "num_cpus_per_worker or num_gpus_per_worker (or the evaluation workers'), or start "
            "Ray with more resources"
        )


def local_cluster_cpus(plan: ResourcePlan) -> int:
    """CPUs for a Ray instance rlconf starts itself: the machine's, or the workers' if more
    (then the workers share the cores, as the user asked for that many)."""
    import os

    return max(os.cpu_count() or 1, math.ceil(plan.totals(driver=False).get("CPU", 0.0)))
