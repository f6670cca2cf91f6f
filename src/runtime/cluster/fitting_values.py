"""The values of the resource settings that fit a cluster, for the refusal of a plan that asks
for more than its totals: ``num_gpus=1 asks for 1 GPU: num_gpus=0 fits`` rather than a list of
every setting there is.

Each role's bundles come from a pair of settings (how many actors, how much each): the driver
from ``num_cpus_for_driver`` / ``num_gpus`` alone, the rollout workers from ``num_workers`` and
``num_cpus_per_worker`` / ``num_gpus_per_worker``, and so on. For each resource the plan asks
too much of, each role that asks for some is named with its settings, and with the largest
value that fits once the other roles have what they ask for. Where no role's value alone
fits, each is named as not enough on its own.
"""

from __future__ import annotations

import math

from runtime.cluster.resources import Bundle, ResourcePlan

_EPSILON = 1e-9

#: Per role: the setting counting its actors (None: the driver, one), and per resource the
#: setting sizing each actor's bundle.
_SETTINGS: dict[str, tuple[str | None, dict[str, str]]] = {
    "driver": (None, {"CPU": "num_cpus_for_driver", "GPU": "num_gpus"}),
    "rollout": ("num_workers", {"CPU": "num_cpus_per_worker", "GPU": "num_gpus_per_worker"}),
    "evaluation": (
        "evaluation_num_workers",
        {"CPU": "num_cpus_per_worker", "GPU": "num_gpus_per_worker"},
    ),
    "learner": (
        "num_learner_workers",
        {"CPU": "num_cpus_per_learner_worker", "GPU": "num_gpus_per_learner_worker"},
    ),
}


def _roles(plan: ResourcePlan, *, driver: bool) -> list[tuple[str, tuple[Bundle, ...]]]:
    workers = [
        ("rollout", plan.rollout),
        ("evaluation", plan.evaluation),
        ("learner", plan.learner),
    ]
    return [("driver", (plan.driver,)), *workers] if driver else workers


def _fitting(role: str, count_key: str | None, size_key: str, each: float, room: float) -> str:
    """What fits ``room`` of a resource for a role whose actors ask ``each``."""
    if count_key is None:
        # The driver's share: a fraction below 1 shares a GPU, above 1 it is whole GPUs.
        fit = max(0.0, room) if room < 1 else float(math.floor(room + _EPSILON))
        text = f"{size_key}={fit:g} fits"
        if size_key == "num_gpus" and fit == 0:
            text += " (the learner then trains on CPU)"
        return text
    count = math.floor(room / each + _EPSILON)
    text = f"{count_key}={count} fits"
    if role == "rollout" and count == 0:
        text += " (the driver's own worker then samples)"
    return text


def fitting_values(plan: ResourcePlan, totals: Bundle, cluster: Bundle, *, driver: bool) -> str:
    """For each of CPU and GPU that ``plan`` (its ``totals``) asks more of than ``cluster``
    has: the settings that ask for it, and the value of each that fits; a role whose lowering
    alone can't fit is left out where another's can. ``""`` when nothing is short."""
    parts = []
    for name in ("CPU", "GPU"):
        need, have = totals.get(name, 0.0), cluster.get(name, 0.0)
        if need <= have + _EPSILON:
            continue
        fitting, short = [], []
        for role, bundles in _roles(plan, driver=driver):
            each = bundles[0].get(name, 0.0) if bundles else 0.0
            if each <= 0:
                continue
            count_key, sizes = _SETTINGS[role]
            size_key = sizes[name]
            asked = each * len(bundles)
            room = have - (need - asked)
            given = f"{size_key}={each:g}"
            if count_key is not None:
                given = f"{count_key}={len(bundles)} x {given}"
            given += f" asks for {asked:g} {name}"
            if room >= -_EPSILON:
                fitting.append(f"{given}: {_fitting(role, count_key, size_key, each, room)}")
            else:
                short.append(f"{given}: lowering it alone is not enough")
        parts += fitting or short
    return "; ".join(parts)
