"""``WorkerSet``: one local RolloutWorker plus ``num_workers`` remote ones (Ray actors).

Remote calls go through ``foreach_worker`` / ``call_remote``, which notice dead actors: with
``ignore_worker_failures`` the failed worker is dropped and the call completes on the healthy
ones; with ``recreate_failed_workers`` a replacement actor is started in the same bundle of
the placement group (on a surviving node when the worker was lost with its node) and synced;
otherwise the error propagates.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import gymnasium as gym

from rlconf.errors import ConfigError
from runtime.cluster.placement import wait_until_placed
from runtime.core.logs import configure_logs
from runtime.core.model_catalog import ModelCatalog
from runtime.core.policy import PolicyBuilder
from runtime.core.settings import settings_of
from runtime.env.env_registry import EnvCreator, registered_envs
from runtime.env.rollout_worker import RolloutWorker

logger = logging.getLogger(__name__)
T = TypeVar("T")


class RemoteRolloutWorker(RolloutWorker):
    """A ``RolloutWorker`` as a Ray actor, logging at the config's ``log_level`` in its own
    process. A ``ConfigError`` raised while it is built is kept and raised by
    ``check_built()``, so that the driver gets it as the ``ConfigError`` it is (an actor that
    dies in its constructor reaches the driver as a bare ``ActorDiedError``)."""

    def __init__(self, **kwargs: Any) -> None:
        self._build_error: ConfigError | None = None
        try:
            # The actor's own process: its loggers follow the config's log_level too.
            configure_logs(kwargs["config"], type(self).__name__)
            super().__init__(**kwargs)
        except ConfigError as error:
            self._build_error = error

    def check_built(self) -> None:
        if self._build_error is not None:
            raise self._build_error


@dataclass(frozen=True)
class WorkerSetSettings:
    """What a ``WorkerSet`` reads of the config, built once when the set is built: where the
    local worker gets an env, the remote workers' resources, environment variables and env,
    what happens to failed ones, and whether merged filters go back to the workers."""

    create_env_on_driver: bool
    num_cpus_per_worker: float
    num_gpus_per_worker: float
    custom_resources_per_worker: Mapping[str, float]
    extra_python_environs_for_worker: Mapping[str, str]
    env: Any
    ignore_worker_failures: bool
    recreate_failed_workers: bool
    placement_timeout_s: float
    synchronize_filters: bool


class WorkerFailure(RuntimeError):
    """A remote worker died and the config asks neither to ignore nor to recreate it."""


class WorkerSet:
    def __init__(
        self,
        *,
        env_creator: EnvCreator | None,
        config: Any,
        policy_class: PolicyBuilder,
        num_workers: int,
        local_worker: bool = True,
        local_has_env: bool | None = None,
        remote_options: Callable[[int], dict[str, Any]] | None = None,
        device: str = "cpu",
        name: str = "workers",
        output_dir: str | None = None,
        video_dir: str | None = None,
    ) -> None:
        self.config = config
        self.settings = settings_of(WorkerSetSettings, config, type(self).__name__)
        self.env_creator = env_creator
        self.policy_class = policy_class
        self.name = name
        self.output_dir = output_dir
        #: Where sub-env 0 of each worker records its episodes (``record_env``), or None.
        self.video_dir = video_dir
        self._remote_options = remote_options or (lambda index: {})
        self._remote: dict[int, Any] = {}
        self._spaces: tuple[gym.Space[Any], gym.Space[Any]] | None = None
        self._policy_spaces: dict[str, tuple[gym.Space[Any], gym.Space[Any]]] | None = None
        self.num_recreated = 0
        #: Called with the indices of recreated workers (the Algorithm's callback hook).
        self.on_recreated: Callable[[list[int]], None] | None = None
        #: Where the weights and filters come from when not from this set's local worker
        #: (the evaluation set takes them from the training local worker).
        self.source_worker: RolloutWorker | None = None
        for index in range(1, num_workers + 1):
            self._remote[index] = self._start_remote(index, num_workers)
        if self._remote:
            self._check_built(list(self._remote.values()))
            logger.info(
                "%s: started %d remote rollout worker(s) (%s CPU, %s GPU each)",
                name,
                num_workers,
                f"{float(self.settings.num_cpus_per_worker):g}",
                f"{float(self.settings.num_gpus_per_worker):g}",
            )
            first = next(iter(self._remote.values()))
            self._spaces, self._policy_spaces = self._get(
                [first.get_spaces.remote(), first.get_policy_spaces.remote()]
            )
        if local_has_env is None:
            local_has_env = num_workers == 0 or bool(self.settings.create_env_on_driver)
        self._local: RolloutWorker | None = None
        if local_worker:
            self._local = RolloutWorker(
                env_creator=env_creator if local_has_env else None,
                config=config,
                policy_class=policy_class,
                worker_index=0,
                num_workers=num_workers,
                spaces=self._spaces,
                policy_spaces=self._policy_spaces,
                device=device,
                output_dir=output_dir,
                video_dir=video_dir,
            )
            logger.info(
                "%s: local worker ready on %s (%s)",
                name,
                device,
                "with its own env" if local_has_env else "no env: it learns and syncs weights",
            )
        self.num_workers = num_workers

    # ------------------------------------------------------------------ actors

    def _start_remote(self, index: int, num_workers: int) -> Any:
        import ray

        from runtime.cluster.ray_session import ensure_ray

        ensure_ray(self.config)
        settings = self.settings
        actor_class = ray.remote(RemoteRolloutWorker)
        options = {
            "num_cpus": float(settings.num_cpus_per_worker),
            "num_gpus": float(settings.num_gpus_per_worker),
            "resources": dict(settings.custom_resources_per_worker) or None,
            "max_restarts": 0,
            **self._remote_options(index),
        }
        environs = dict(settings.extra_python_environs_for_worker)
        if environs:
            # Per actor, so that they also apply on a cluster rlconf did not start (Tune's).
            options["runtime_env"] = {"env_vars": environs}
        creators = registered_envs()
        env = settings.env
        creator = creators.get(env) if isinstance(env, str) else None
        return actor_class.options(**options).remote(
            env_creator=creator or self.env_creator,
            config=self.config,
            policy_class=self.policy_class,
            worker_index=index,
            num_workers=num_workers,
            registered_models=ModelCatalog.registered(),
            device=None,
            output_dir=self.output_dir,
            video_dir=self.video_dir,
        )

    def _check_built(self, actors: list[Any]) -> None:
        """Raise the ``ConfigError`` a remote worker met while it was built (an action space
        its algorithm does not support, ...) as itself, not as a Ray actor error."""
        import ray

        try:
            ray.get([actor.check_built.remote() for actor in actors])
        except ray.exceptions.RayTaskError as error:
            if isinstance(error.cause, ConfigError):
                for actor in actors:
                    ray.kill(actor, no_restart=True)
                self._remote.clear()
                raise error.cause from None
            raise

    @staticmethod
    def _get(refs: Any) -> Any:
        import ray

        return ray.get(refs)

    # ------------------------------------------------------------------ access

    def local_worker(self) -> RolloutWorker:
        if self._local is None:
            raise ValueError(f"the {self.name} WorkerSet has no local worker")
        return self._local

    def remote_workers(self) -> list[Any]:
        return list(self._remote.values())

    def remote_worker_ids(self) -> list[int]:
        return list(self._remote)

    def remote_actor(self, index: int) -> Any:
        """The actor of remote worker ``index`` now (None when it has none)."""
        return self._remote.get(index)

    def num_healthy_workers(self) -> int:
        return len(self._remote)

    # ------------------------------------------------------------------ calls

    def call_remote(
        self, func: Callable[[RolloutWorker], T], *, indices: list[int] | None = None
    ) -> list[tuple[int, T]]:
        """Run ``func(worker)`` on remote workers; returns ``(index, result)`` of the ones that
        answered, handling failed workers as the fault-tolerance settings say."""
        targets = [i for i in (indices or list(self._remote)) if i in self._remote]
        if not targets:
            # Without remote workers (the embedded default) Ray is never imported.
            return []
        import ray

        refs = {i: self._remote[i].apply.remote(func) for i in targets}
        results: list[tuple[int, T]] = []
        failed: list[int] = []
        for index, ref in refs.items():
            try:
                results.append((index, ray.get(ref)))
            except (ray.exceptions.RayActorError, ray.exceptions.ActorDiedError) as error:
                logger.warning("%s: remote worker %d failed: %s", self.name, index, error)
                failed.append(index)
            except ray.exceptions.RayTaskError as error:
                if not self._tolerates_failures():
                    raise
                logger.warning("%s: remote worker %d failed: %s", self.name, index, error)
                failed.append(index)
        if failed:
            self._handle_failures(failed)
        return results

    def submit(self, index: int, func: Callable[[RolloutWorker], T]) -> tuple[Any, Any]:
        """Start ``func(worker)`` on remote worker ``index`` without waiting: ``(Ray future,
        actor)`` (asynchronous sampling: ``runtime.training.async_training``)."""
        actor = self._remote[index]
        return actor.apply.remote(func), actor

    def take_result(self, index: int, ref: Any, actor: Any) -> tuple[bool, Any]:
        """``(True, result)`` of a finished ``submit``; ``(False, None)`` when its worker
        failed, which is handled as the fault-tolerance settings say (the worker dropped or
        recreated; ``WorkerFailure`` when failures are not tolerated), or when ``actor`` was
        replaced meanwhile (its failure was handled already)."""
        import ray

        try:
            return True, ray.get(ref)
        except (ray.exceptions.RayActorError, ray.exceptions.ActorDiedError) as error:
            failure: Exception = error
        except ray.exceptions.RayTaskError as error:
            if not self._tolerates_failures():
                raise
            failure = error
        if self._remote.get(index) is not actor:
            return False, None
        logger.warning("%s: remote worker %d failed: %s", self.name, index, failure)
        self._handle_failures([index])
        return False, None

    def _tolerates_failures(self) -> bool:
        return bool(self.settings.ignore_worker_failures or self.settings.recreate_failed_workers)

    def _handle_failures(self, failed: list[int]) -> None:
        if not self._tolerates_failures():
            raise WorkerFailure(
                f"{self.name}: remote worker(s) {failed} failed; set "
                "fault_tolerance(ignore_worker_failures=True) to continue on the healthy "
                "workers, or recreate_failed_workers=True to replace them"
            )
        import ray

        for index in failed:
            actor = self._remote.pop(index)
            ray.kill(actor, no_restart=True)
        if self.settings.recreate_failed_workers:
            self.recreate(failed)

    def recreate(self, indices: list[int]) -> None:
        """Start new actors for ``indices`` and bring them in sync with the local worker.

        A replacement goes into its worker's bundle of the placement group. When the worker was
        lost with its node, Ray has to place that bundle again on an alive node first; that is
        waited for up to ``placement_timeout_s`` and refused with a ``ResourceError`` after
        that, as an actor in a bundle that is never placed would leave the next call waiting
        forever."""
        import ray

        logger.info("%s: recreating remote worker(s) %s", self.name, list(indices))
        timeout_s = float(self.settings.placement_timeout_s)
        for index in indices:
            wait_until_placed(
                self._remote_options(index),
                timeout_s,
                f"{self.name}: the replacement of remote worker {index}",
            )
        started = {index: self._start_remote(index, self.num_workers) for index in indices}
        for index, actor in started.items():
            try:
                ray.get(actor.__ray_ready__.remote())
            except ray.exceptions.RayActorError as error:
                # Not handled as another failure: a replacement that can't start would be
                # replaced again and again.
                for other in started.values():
                    ray.kill(other, no_restart=True)
                raise WorkerFailure(
                    f"{self.name}: the replacement of remote worker {index} failed to start: "
                    f"{error}"
                ) from error
        self._remote.update(started)
        self.num_recreated += len(indices)
        if self._source() is not None:
            self.sync_policy_setup(indices=indices)
            self.sync_weights(indices=indices)
            self.sync_filter_states(indices=indices)
        logger.info(
            "%s: remote worker(s) %s recreated and synced (%d recreated so far)",
            self.name,
            list(indices),
            self.num_recreated,
        )
        if self.on_recreated is not None:
            self.on_recreated(list(indices))

    def foreach_worker(
        self,
        func: Callable[[RolloutWorker], T],
        *,
        local: bool = True,
        local_worker: bool | None = None,
    ) -> list[T]:
        """``func(worker)`` on the local worker (``local``) and every remote one.
        ``local_worker`` is the reference's name of ``local`` (deprecated)."""
        if local_worker is not None:
            warnings.warn(
                "foreach_worker(local_worker=...) is deprecated: use local=...",
                DeprecationWarning,
                stacklevel=2,
            )
            local = local_worker
        out = [func(self._local)] if local and self._local is not None else []
        return out + [result for _, result in self.call_remote(func)]

    def foreach_worker_with_index(
        self, func: Callable[[RolloutWorker, int], T], *, local: bool = True
    ) -> list[T]:
        out = [func(self._local, 0)] if local and self._local is not None else []
        remote = self.call_remote(lambda w: func(w, w.worker_index))
        return out + [result for _, result in remote]

    def foreach_policy(self, func: Callable[..., T]) -> list[T]:
        results: list[T] = []
        for part in self.foreach_worker(lambda w: w.foreach_policy(func)):
            results.extend(part)
        return results

    def _source(self) -> RolloutWorker | None:
        return self.source_worker if self.source_worker is not None else self._local

    def sync_weights(
        self,
        global_vars: dict[str, Any] | None = None,
        indices: list[int] | None = None,
        policies: list[str] | None = None,
    ) -> None:
        """Copy the weights (of ``policies``, or all) and the global vars of the local worker,
        or of ``source_worker`` for a set without one, to the other workers of this set."""
        source = self._source()
        if source is None:
            return
        if self._remote:
            import ray

            weights: Any = ray.put(source.get_weights(policies))
            vars_ = dict(global_vars or {})

            def set_weights(worker: RolloutWorker) -> None:
                worker.set_weights(ray.get(weights), vars_)

            self.call_remote(set_weights, indices=indices)
        if self._local is not None and self._local is not source:
            self._local.set_weights(source.get_weights(policies), global_vars)
        elif global_vars and self._local is not None:
            self._local.set_global_vars(global_vars)

    def sync_policy_setup(self, indices: list[int] | None = None) -> None:
        """Give the other workers of this set the policies (added and removed ones), mapping
        function and ``policies_to_train`` of the source worker (a recreated worker starts
        from the config; a restored checkpoint may hold other policies)."""
        source = self._source()
        if source is None:
            return
        setup = source.get_policy_setup()
        if self._local is not None and self._local is not source:
            self._local.set_policy_setup(setup)
        if self._remote:
            self.call_remote(lambda w: w.set_policy_setup(setup), indices=indices)

    def sync_filters(self) -> None:
        """Merge the remote workers' filter buffers into the local filter, then - with
        ``synchronize_filters`` - send the merged state to every remote worker (without it,
        each remote worker keeps normalising with its own statistics)."""
        if not self._remote or self._local is None:
            return
        buffers = [b for _, b in self.call_remote(lambda w: w.get_filters(flush_after=True))]
        self._local.merge_filter_buffers(buffers)
        if self.settings.synchronize_filters:
            self.sync_filter_states()

    def sync_filter_states(self, indices: list[int] | None = None) -> None:
        source = self._source()
        if source is None:
            return
        states = source.get_filter_states()
        if self._local is not None and self._local is not source:
            self._local.sync_filters(states)
        self.call_remote(lambda w: w.sync_filters(states), indices=indices)

    def stop(self) -> None:
        if self._local is not None:
            self._local.stop()
        if not self._remote:
            return
        import ray

        for actor in self._remote.values():
            try:
                actor.stop.remote()
                ray.kill(actor, no_restart=True)
            except Exception:  # stopping must not fail on an already dead actor
                logger.debug("%s: could not stop a remote worker", self.name, exc_info=True)
        self._remote.clear()
