"""Reserving a ``ResourcePlan`` as a Ray placement group and placing actors in its bundles.

Inside a Tune trial the trial's own group (made from the same plan by
``Algorithm.default_resource_request``) is used; outside Tune the algorithm reserves the group
itself, after checking that the alive nodes can hold it at all (``check_plan_fits``). A worker
recreated after its node was lost waits, boundedly, for Ray to place its bundle again
(``wait_until_placed``).
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from collections.abc import Mapping
from typing import Any

from runtime.cluster.fitting_values import fitting_values
from runtime.cluster.resources import Bundle, ResourcePlan, Role, format_bundle

logger = logging.getLogger(__name__)
_EPSILON = 1e-9


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
            else:
                logger.info(
                    "%s: placing actors in the trial's placement group: %s",
                    owner,
                    plan.describe(driver=True),
                )
            return cls(plan, current, owned=False, exact=exact, driver=True)
        bundles = plan.placement_bundles(driver=False)
        if not bundles:  # no worker asks for resources: nothing to reserve
            logger.info("%s: no placement group: no worker asks for resources", owner)
            return cls(plan, None, owned=False, exact=True, driver=False)
        check_plan_fits(plan, owner, driver=False)
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
        logger.info(
            "%s: reserved a placement group of %s = %s (strategy %s)",
            owner,
            plan.describe(driver=False),
            format_bundle(plan.totals(driver=False)),
            plan.strategy,
        )
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


def check_plan_fits(plan: ResourcePlan, owner: str, *, driver: bool) -> None:
    """Refuse at once a plan the alive nodes can never hold, rather than wait
    ``placement_timeout_s`` for a placement group Ray would leave pending: more than the
    cluster's totals, a bundle no single node can hold, STRICT_PACK bundles that together fit no
    node, or STRICT_SPREAD bundles that can't each get a node of their own. PACK and SPREAD may
    span nodes, so for them the totals and each bundle on its own are all that matter.

    ``driver``: whether the driver's bundle is part of the group (it is first, as in
    ``plan.placement_bundles(driver=True)``; a Tune trial reserves it)."""
    labelled = _labelled_bundles(plan, driver=driver)
    if not labelled:
        return
    nodes = alive_node_resources()
    names = {name for _, bundle in labelled for name in bundle}
    _refuse_over_totals(plan, owner, driver=driver, nodes=nodes)
    described = f"{plan.describe(driver=driver)} = {format_bundle(plan.totals(driver=driver))}"
    lower = f"{'num_cpus_for_driver, ' if driver else ''}num_workers or num_cpus_per_worker"
    node_text = describe_nodes(nodes, names)
    for label, bundle in labelled:
        if not any(_fits(bundle, node) for node in nodes):
            raise ResourceError(
                f"{owner}: no alive node can hold the {label}'s bundle {format_bundle(bundle)} "
                f"(a bundle is placed on one node); the nodes have {node_text}. "
                f"{_lower_hint(label)}, or add a node that large"
            )
    if plan.strategy == "STRICT_PACK":
        totals = plan.totals(driver=driver)
        if not any(_fits(totals, node) for node in nodes):
            raise ResourceError(
                f"{owner}: placement_strategy STRICT_PACK puts all {len(labelled)} bundles "
                f"({described}) on one node, but the nodes have {node_text}. Use PACK (as few "
                f"nodes as possible, spanning several when needed), lower {lower}, or add a "
                "node that large"
            )
    elif plan.strategy == "STRICT_SPREAD":
        bundles = [bundle for _, bundle in labelled]
        placeable = _distinct_nodes(bundles, nodes)
        if placeable < len(bundles):
            raise ResourceError(
                f"{owner}: placement_strategy STRICT_SPREAD puts each of the {len(bundles)} "
                f"bundles ({described}) on a node of its own, but the alive nodes can hold "
                f"only {placeable} that way; the nodes have {node_text}. Use SPREAD (shares "
                "a node where it must), lower num_workers or evaluation_num_workers (or the "
                "resources per bundle), or add nodes"
            )


def wait_until_placed(options: Mapping[str, Any], timeout_s: float, owner: str) -> None:
    """Wait up to ``timeout_s`` for the placement group that actor ``options`` schedule into to
    be fully placed; a ``ResourceError`` when it is not.

    After a node is lost Ray places the group's bundles from that node again on the alive
    nodes when they have room; an actor started into a bundle that is never placed again would
    stay pending, and whoever waits for it would wait forever."""
    from ray.util import placement_group_table
    from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

    strategy = options.get("scheduling_strategy")
    if not isinstance(strategy, PlacementGroupSchedulingStrategy):
        return
    group = strategy.placement_group
    if group is None or group.wait(timeout_s):
        return
    table = placement_group_table(group)
    index = int(strategy.placement_group_bundle_index)
    specs = group.bundle_specs
    asked = _bundle_of(specs[index]) if 0 <= index < len(specs) else None
    names = {name for spec in specs for name in _bundle_of(spec)}
    what = f"its bundle {format_bundle(asked)}" if asked is not None else "its bundles"
    raise ResourceError(
        f"{owner}: waited {timeout_s:g} s (placement_timeout_s) for the placement group "
        f"({len(specs)} bundles, strategy {table.get('strategy')}, state {table.get('state')}) "
        f"to place {what} again on the alive nodes, which have "
        f"{describe_nodes(alive_node_resources(), names)}. Add a node with room for it, use "
        "PACK or SPREAD (a STRICT_ strategy may leave no node allowed), or set "
        "ignore_worker_failures=True instead of recreate_failed_workers to go on without the "
        "lost workers"
    )


def alive_node_resources() -> list[Bundle]:
    """The total resources of each alive node of the cluster Ray is connected to."""
    import ray

    return [
        {name: float(amount) for name, amount in node.get("Resources", {}).items()}
        for node in ray.nodes()  # type: ignore[no-untyped-call]
        if node.get("Alive")
    ]


def describe_nodes(nodes: list[Bundle], names: set[str]) -> str:
    """``2 nodes x {CPU: 2}, 1 node x {CPU: 1}``: the nodes' amounts of ``names``."""
    if not nodes:
        return "no alive nodes"
    counts = Counter(
        format_bundle({name: node.get(name, 0.0) for name in sorted(names)}) for node in nodes
    )
    return ", ".join(
        f"{count} {'node' if count == 1 else 'nodes'} x {text}"
        for text, count in counts.most_common()
    )


def _refuse_over_totals(
    plan: ResourcePlan, owner: str, *, driver: bool, nodes: list[Bundle]
) -> None:
    cluster: Bundle = {}
    for node in nodes:
        for name, amount in node.items():
            cluster[name] = cluster.get(name, 0.0) + amount
    totals = plan.totals(driver=driver)
    short = {
        name: (amount, cluster.get(name, 0.0))
        for name, amount in totals.items()
        if amount > cluster.get(name, 0.0) + _EPSILON
    }
    if not short:
        return
    wanted = ", ".join(
        f"{name} {need:g} (cluster total {have:g})" for name, (need, have) in short.items()
    )
    where = (
        "the driver's bundle included, as a Tune trial reserves it"
        if driver
        else "the driver is this process and reserves nothing outside Tune"
    )
    driver_fields = "num_cpus_for_driver, num_gpus, " if driver else ""
    workers_want_gpus = any("GPU" in b for b in (*plan.rollout, *plan.evaluation))
    no_gpus = (
        " (this cluster has no GPU: num_gpus_per_worker asks Ray for real GPUs, also with "
        "_fake_gpus, which fakes only the learner's towers)"
        if "GPU" in short and short["GPU"][1] == 0 and workers_want_gpus
        else ""
    )
    fits = fitting_values(plan, totals, cluster, driver=driver)
    raise ResourceError(
        f"{owner}: the config asks for more than the Ray cluster has: {wanted}. Requested "
        f"{plan.describe(driver=driver)} = {format_bundle(totals)} ({where}). "
        + (f"What fits: {fits}. " if fits else "")
        + f"Lower {driver_fields}num_workers, num_cpus_per_worker or num_gpus_per_worker (or "
        f"the evaluation workers'), or start Ray with more resources{no_gpus}"
    )


def _labelled_bundles(plan: ResourcePlan, *, driver: bool) -> list[tuple[str, Bundle]]:
    """``plan.placement_bundles(driver=driver)`` with whose bundle each is, in that order."""
    labelled = [("driver", plan.driver)] if driver and plan.driver else []
    labelled += [(f"rollout worker {i}", b) for i, b in enumerate(plan.rollout, 1) if b]
    labelled += [(f"evaluation worker {i}", b) for i, b in enumerate(plan.evaluation, 1) if b]
    return labelled


def _lower_hint(label: str) -> str:
    if label == "driver":
        return "Lower num_cpus_for_driver or num_gpus"
    per_worker = "num_cpus_per_worker, num_gpus_per_worker or custom_resources_per_worker"
    if label.startswith("evaluation"):
        return f"Lower {per_worker} (evaluation_config can set them for evaluation workers alone)"
    return f"Lower {per_worker}"


def _fits(bundle: Bundle, node: Bundle) -> bool:
    return all(amount <= node.get(name, 0.0) + _EPSILON for name, amount in bundle.items())


def _distinct_nodes(bundles: list[Bundle], nodes: list[Bundle]) -> int:
    """How many of ``bundles`` can each get a different node that holds it (a maximum
    bipartite matching: bundles may differ, so counting nodes is not enough)."""
    holder: dict[int, int] = {}  # node index -> bundle index

    def assign(b: int, seen: set[int]) -> bool:
        for n, node in enumerate(nodes):
            if n in seen or not _fits(bundles[b], node):
                continue
            seen.add(n)
            if n not in holder or assign(holder[n], seen):
                holder[n] = b
                return True
        return False

    return sum(1 for b in range(len(bundles)) if assign(b, set()))


def _bundle_of(spec: Mapping[str, Any]) -> Bundle:
    return {name: float(amount) for name, amount in spec.items() if float(amount) > 0}


def local_cluster_cpus(plan: ResourcePlan) -> int:
    """CPUs for a Ray instance rlconf starts itself: the machine's, or the workers' if more
    (then the workers share the cores, as the user asked for that many)."""
    import os

    return max(os.cpu_count() or 1, math.ceil(plan.totals(driver=False).get("CPU", 0.0)))
