"""The one resource calculation: a config -> the bundles its learner and workers need.

The same ``ResourcePlan`` answers Tune's ``default_resource_request`` and places the actors
(``runtime.cluster.placement``), so what Tune reserves is where the actors run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from rlconf.algorithm_config import AlgorithmConfig
from rlconf.sections.resources import DEFAULT_DRIVER_CPUS
from runtime.core.settings import setting, settings_of
from runtime.training.evaluation_config import evaluation_config, evaluation_configured

Role = Literal["rollout", "evaluation", "learner"]
Bundle = dict[str, float]


@dataclass(frozen=True)
class ResourcePlan:
    """Bundles for the driver (learner), each rollout worker, each evaluation worker and each
    learner worker (``num_learner_workers``; the driver then learns nowhere).

    The driver's bundle is reserved only inside a Tune trial, where the algorithm itself is an
    actor of the trial's placement group. Outside Tune the driver is the user's own process,
    which holds no Ray resources, so the algorithm's placement group has the workers' bundles
    only (``driver=False``): two workers fit a user's ``ray.init(num_cpus=2)``.
    """

    driver: Bundle
    rollout: tuple[Bundle, ...]
    evaluation: tuple[Bundle, ...]
    strategy: str
    learner: tuple[Bundle, ...] = ()

    @property
    def num_actors(self) -> int:
        return len(self.rollout) + len(self.evaluation) + len(self.learner)

    @property
    def _workers(self) -> list[Bundle]:
        return [*self.rollout, *self.evaluation, *self.learner]

    def tune_bundles(self) -> list[Bundle]:
        """What Tune is asked for: the driver bundle first (Tune drops it when it is empty),
        then every worker bundle that asks for something."""
        return [self.driver] + [b for b in self._workers if b]

    def placement_bundles(self, *, driver: bool) -> list[Bundle]:
        """The bundles of the placement group: the driver's first when ``driver``, then every
        worker bundle; empty ones hold nothing and are left out, as Tune does."""
        workers = [b for b in self._workers if b]
        return ([self.driver] if driver and self.driver else []) + workers

    def bundle_index(self, role: Role, worker_index: int, *, driver: bool) -> int | None:
        """Index in ``placement_bundles(driver=driver)`` of worker ``worker_index`` (1-based) of
        ``role``; None for a worker that asks for no resources."""
        workers = self._workers
        before = {
            "rollout": 0,
            "evaluation": len(self.rollout),
            "learner": len(self.rollout) + len(self.evaluation),
        }
        position = worker_index - 1 + before[role]
        if not workers[position]:
            return None
        index = 1 if driver and self.driver else 0
        return index + sum(1 for b in workers[:position] if b)

    def totals(self, *, driver: bool) -> Bundle:
        out: Bundle = {}
        for bundle in self.placement_bundles(driver=driver):
            for name, amount in bundle.items():
                out[name] = out.get(name, 0.0) + amount
        return out

    def describe(self, *, driver: bool) -> str:
        """``driver {CPU: 1} + 2 rollout workers x {CPU: 1}`` for error messages."""
        parts = [f"driver {format_bundle(self.driver)}"] if driver else []
        roles = (("rollout", self.rollout), ("evaluation", self.evaluation))
        for label, bundles in (*roles, ("learner", self.learner)):
            if bundles:
                parts.append(f"{len(bundles)} {label} worker(s) x {format_bundle(bundles[0])}")
        return " + ".join(parts) or "no actors"

    def placement_group_factory(self) -> Any:
        from ray.tune import PlacementGroupFactory

        return PlacementGroupFactory(self.tune_bundles(), strategy=self.strategy)


@dataclass(frozen=True)
class ResourceSettings:
    """What the resource plan reads (of the algorithm's config; ``evaluation_num_workers`` and
    the worker keys of the evaluation config for the evaluation workers)."""

    num_cpus_for_driver: float | None
    num_gpus: float
    num_workers: int
    num_cpus_per_worker: float
    num_gpus_per_worker: float
    custom_resources_per_worker: Mapping[str, float]
    evaluation_num_workers: int
    num_learner_workers: int
    num_cpus_per_learner_worker: float
    num_gpus_per_learner_worker: float
    placement_strategy: str
    fake_gpus: bool = setting("_fake_gpus")


def driver_cpus(num_cpus_for_driver: float | None) -> float:
    """The driver's CPU bundle: ``num_cpus_for_driver``, or 1 where it is not set."""
    return DEFAULT_DRIVER_CPUS if num_cpus_for_driver is None else float(num_cpus_for_driver)


def resource_plan(config: AlgorithmConfig) -> ResourcePlan:
    """The bundles ``config`` needs: ``{CPU: num_cpus_for_driver, GPU: num_gpus}`` for the driver
    (no GPU with ``_fake_gpus``), one per rollout worker, when evaluation is configured one
    per evaluation worker from the evaluation config, and one per learner worker
    (``{CPU: num_cpus_per_learner_worker, GPU: num_gpus_per_learner_worker}``, no GPU with
    ``_fake_gpus``). Fractions are kept as given."""
    settings = settings_of(ResourceSettings, config, "resources")
    fake = bool(settings.fake_gpus)
    driver = _bundle(
        {
            "CPU": driver_cpus(settings.num_cpus_for_driver),
            "GPU": 0.0 if fake else settings.num_gpus,
        }
    )
    rollout = tuple(_worker_bundle(settings) for _ in range(int(settings.num_workers)))
    evaluation: tuple[Bundle, ...] = ()
    if evaluation_configured(config):
        eval_settings = settings_of(ResourceSettings, evaluation_config(config), "resources")
        evaluation = tuple(
            _worker_bundle(eval_settings) for _ in range(int(settings.evaluation_num_workers))
        )
    learner = tuple(
        _bundle(
            {
                "CPU": settings.num_cpus_per_learner_worker,
                "GPU": 0.0 if fake else settings.num_gpus_per_learner_worker,
            }
        )
        for _ in range(int(settings.num_learner_workers))
    )
    return ResourcePlan(driver, rollout, evaluation, settings.placement_strategy, learner=learner)


def _worker_bundle(settings: ResourceSettings) -> Bundle:
    return _bundle(
        {
            "CPU": settings.num_cpus_per_worker,
            "GPU": settings.num_gpus_per_worker,
            **dict(settings.custom_resources_per_worker),
        }
    )


def _bundle(amounts: dict[str, Any]) -> Bundle:
    return {name: float(amount) for name, amount in amounts.items() if float(amount) > 0}


def format_bundle(bundle: Bundle) -> str:
    if not bundle:
        return "{}"
    return "{" + ", ".join(f"{k}: {v:g}" for k, v in bundle.items()) + "}"
