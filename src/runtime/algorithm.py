"""``Algorithm``: a Ray Tune ``Trainable`` that owns the rollout WorkerSet, trains, reports
metrics and saves checkpoints. PPO, PG and A2C subclass it.

Here: the Trainable protocol, building the algorithm, and the training iteration. The other
parts are mixed in from ``runtime.training``: the results folder (``results_folder``),
evaluation scheduling (``evaluation_schedule``), counters and result compilation
(``results``), policies and acting (``acting``), checkpoints (``checkpointing``), taking a new
config in place (``config_reset``). The config is resolved by ``config_resolution``; the learner
device and placement group come from ``placement_setup``."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar

from rlconf.algorithm_config import AlgorithmConfig
from rlconf.metrics import TIMERS, TRAINING_ITERATION_TIMER
from runtime.buffers.multi_agent_replay_buffer import MultiAgentReplayBuffer
from runtime.callbacks import DefaultCallbacks
from runtime.callbacks_setup import make_callbacks, workers_recreated
from runtime.cluster.cpu_threads import set_learner_threads
from runtime.cluster.driver_environment import set_driver_environs
from runtime.cluster.placement import Placement
from runtime.cluster.resources import ResourcePlan, Role, resource_plan
from runtime.core.exploration import check_exploration
from runtime.core.learner import Learner
from runtime.core.learner_group import LearnerGroup
from runtime.core.learner_workers import RemoteLearnerGroup
from runtime.core.module import ActorCriticModule, RLModule
from runtime.core.policy import SAMPLING_EXPLORATIONS, PolicyBuilder, Postprocessor
from runtime.core.settings import settings_of
from runtime.core.space_support import SpaceTypes
from runtime.env.atari import ensure_env_id
from runtime.env.env_preparation import prepared_creator
from runtime.env.env_registry import EnvCreator, env_creator_for
from runtime.env.recording import video_folder
from runtime.env.rollout_worker import RolloutWorker
from runtime.env.worker_set import WorkerSet
from runtime.hook_calls import call_hook
from runtime.results.result_logger import ResultLogger
from runtime.training.acting import Acting
from runtime.training.algorithm_settings import AlgorithmSettings
from runtime.training.checkpointing import Checkpointing, algorithm_from_checkpoint
from runtime.training.config_reset import ConfigReset, accepted_config
from runtime.training.config_resolution import resolve_config, split_tune_keys
from runtime.training.evaluation_schedule import EvaluationSchedule
from runtime.training.memory_models import refuse_memory_modules
from runtime.training.placement_setup import (
    acting_device,
    learner_devices,
    reserve_placement,
)
from runtime.training.policy_management import PolicyManagement
from runtime.training.results import ResultBookkeeping
from runtime.training.results_folder import ResultsFolder, remove_if_unused
from runtime.training.stages import TrainingStages

logger = logging.getLogger(__name__)


class Algorithm(
    TrainingStages,
    EvaluationSchedule,
    ResultBookkeeping,
    Acting,
    PolicyManagement,
    Checkpointing,
    ConfigReset,
    ResultsFolder,
):
    """Base of all algorithms: ``Algorithm(config=..., env=...)``, ``train()``, ``save()``.

    A subclass names its config class and the parts of its policies (``learner_class``,
    ``module_class``, ``postprocessing``, ``explorations``); ``policy_class`` is made from
    them. It inherits ``training_step()`` from an on- or off-policy base or writes its own.
    """

    config_class: ClassVar[type[AlgorithmConfig]] = AlgorithmConfig
    #: The learner of each policy (its losses, optimizers and target networks).
    learner_class: ClassVar[type[Learner] | None] = None
    #: The networks and forward passes of each policy.
    module_class: ClassVar[type[RLModule]] = ActorCriticModule
    #: Postprocessing steps the workers run on each sampled fragment, in order.
    postprocessing: ClassVar[tuple[Postprocessor, ...]] = ()
    #: The built-in exploration strategies this algorithm's policies can use.
    explorations: ClassVar[tuple[str, ...]] = SAMPLING_EXPLORATIONS
    #: The observation and action space classes its policies support (empty: any); checked
    #: where each policy is made.
    observation_spaces: ClassVar[SpaceTypes] = ()
    action_spaces: ClassVar[SpaceTypes] = ()
    #: Makes the policies of the workers (from the parts above).
    policy_class: ClassVar[PolicyBuilder] = PolicyBuilder(None)
    #: The replay buffers of an off-policy algorithm as one object (RLlib's name); None for
    #: the algorithms that replay nothing.
    local_replay_buffer: MultiAgentReplayBuffer | None = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.policy_class = PolicyBuilder(
            cls.learner_class,
            cls.module_class,
            tuple(cls.postprocessing),
            tuple(cls.explorations),
            cls.__name__,
            observation_spaces=tuple(cls.observation_spaces),
            action_spaces=tuple(cls.action_spaces),
        )

    def __init__(
        self,
        config: AlgorithmConfig | Mapping[str, Any] | None = None,
        env: Any = None,
        *,
        lazy_logdir: bool = False,
        **kwargs: Any,
    ) -> None:
        """``lazy_logdir``: create the results folder only when the first result or checkpoint
        is written into it (``from_checkpoint`` builds this way, so restoring a policy to act
        with leaves no empty run behind)."""
        # Tune's system monitor warns on every start when GPUtil is missing; not our concern.
        logging.getLogger("ray.tune.utils.util").setLevel(logging.ERROR)
        # In a trial actor Tune logs every checkpoint saved and restored to the sweep's
        # console, between the trial tables; the trials' folders hold the checkpoints.
        for name in ("ray.train._internal.storage", "ray.tune.trainable.trainable"):
            logging.getLogger(name).setLevel(logging.WARNING)
        self._lazy_logdir = lazy_logdir
        self._logdir_claimed = False
        self._result_logger: ResultLogger | None = None
        self._algo_config, tune_keys = accepted_config(type(self), config, env)
        set_driver_environs(self._algo_config)
        super().__init__(config=tune_keys, **kwargs)

    @classmethod
    def get_default_config(cls) -> AlgorithmConfig:
        return cls.config_class()

    @classmethod
    def default_resource_request(cls, config: AlgorithmConfig | Mapping[str, Any]) -> Any:
        """The resources Tune reserves for a trial: a ``PlacementGroupFactory`` with the driver
        bundle, one bundle per rollout worker and one per evaluation worker. The algorithm
        places its actors in exactly these bundles (``runtime.cluster.resources``)."""
        resolved = resolve_config(cls, split_tune_keys(config)[0], None)
        return resource_plan(resolved).placement_group_factory()

    # ------------------------------------------------------------------ setup

    def setup(self, _tune_config: dict[str, Any]) -> None:
        # Trainable declares a dict; the runtime reads the frozen config object instead.
        self.config: AlgorithmConfig = self._algo_config
        try:
            self._build()
        except BaseException:
            # Nothing half-built stays behind: actors, the placement group, an empty results
            # folder.
            self.cleanup()
            if self._logdir_claimed:
                remove_if_unused(Path(self.logdir))
            raise
        # Under Tune, Tune's own loggers write the same files into the trial folder.
        if self._storage is None and not self._lazy_logdir:
            self._open_results()

    def _build(self) -> None:
        config = self.config
        #: What the algorithm reads of its config, built once (``AlgorithmSettings``).
        self.settings = settings = settings_of(AlgorithmSettings, config, type(self).__name__)
        self.callbacks: DefaultCallbacks = make_callbacks(config, type(self).__name__)
        env = settings.env
        self.env_creator: EnvCreator | None = None
        if env is not None:
            ensure_env_id(env, f"{type(self).__name__}(config=...)")
            self.env_creator = prepared_creator(env_creator_for(env), config, type(self).__name__)
        devices = learner_devices(config, type(self).__name__)
        #: Where the driver's own rollout (and evaluation) worker acts.
        self.device = acting_device(config)
        check_exploration(config, self.explorations, type(self).__name__)
        self._start_bookkeeping()
        self._start_checkpoint_scores()
        self.resource_plan: ResourcePlan = resource_plan(config)
        self.placement: Placement | None = reserve_placement(
            self.resource_plan, config, type(self).__name__
        )
        self.workers = WorkerSet(
            env_creator=self.env_creator,
            config=config,
            policy_class=self.policy_class,
            num_workers=int(settings.num_workers),
            remote_options=self._actor_options("rollout"),
            device=self.device,
            output_dir=(
                str(self._claim_logdir()) if settings.output == "logdir" else settings.output
            ),
            video_dir=video_folder(config, self._claim_logdir, type(self).__name__),
        )
        self.workers.on_recreated = self._workers_recreated
        # Torch's threads fit the networks the learner trains (``runtime.cluster.cpu_threads``).
        local = self.workers.local_worker()
        modules = [p.module for p in map(local.policy_map.peek, local.policy_map.in_memory()) if p]
        refuse_memory_modules(modules, type(self))
        set_learner_threads(settings.num_cpus_for_driver, modules)
        #: The learners of the policies to train, on their own devices.
        self.learner_group = self._make_learner_group(devices)
        self.workers.local_worker().attach_learner_group(self.learner_group)
        self.workers.sync_weights()
        self._start_evaluation()
        logger.info(
            "%s: built for env %r: %d remote rollout worker(s), learners on %s",
            type(self).__name__,
            env,
            int(settings.num_workers),
            ", ".join(devices),
        )
        call_hook(self.callbacks, "on_algorithm_init", algorithm=self, metrics_logger=self.metrics)

    def _make_learner_group(self, devices: list[str]) -> LearnerGroup:
        settings = self.settings
        num_learner_workers = int(settings.num_learner_workers)
        if not num_learner_workers:
            return LearnerGroup(devices)
        return RemoteLearnerGroup(
            num_workers=num_learner_workers,
            device=devices[0],
            num_cpus=float(settings.num_cpus_per_learner_worker),
            num_gpus=0.0 if settings.fake_gpus else float(settings.num_gpus_per_learner_worker),
            actor_options=self._actor_options("learner"),
        )

    def _actor_options(self, role: Role) -> Callable[[int], dict[str, Any]]:
        def options(index: int) -> dict[str, Any]:
            return self.placement.actor_options(role, index) if self.placement else {}

        return options

    def _workers_recreated(self, indices: list[int]) -> None:
        workers_recreated(self, self.workers, indices, is_evaluation=False)

    # ------------------------------------------------------------------ training

    def step(self) -> dict[str, Any]:
        """One training iteration, and an evaluation when one is due: after the training step,
        or beside it (``evaluation_parallel_to_training``) on the weights from before it."""
        started = time.perf_counter()
        (step_results, sampled), evaluated = self._train_and_evaluate(self._train_until_reporting)
        self.workers.sync_filters()
        result = self._compile_results(step_results, sampled)
        self._attach_evaluation_results(result, evaluated)
        if self.settings.env_task_fn is not None:
            self._update_env_tasks(result)
        logger.debug(
            "%s: iteration %d took %.3f s: %d env steps sampled%s",
            type(self).__name__,
            self._iteration + 1,
            time.perf_counter() - started,
            sampled,
            ", evaluated" if evaluated else "",
        )
        return result

    def _train_until_reporting(self) -> tuple[dict[str, Any], int]:
        """``training_step()`` until the min_*_per_reporting settings are met."""
        settings = self.settings
        min_time = float(settings.min_time_s_per_reporting or 0)
        min_sample = int(settings.min_sample_timesteps_per_reporting or 0)
        min_train = int(settings.min_train_timesteps_per_reporting or 0)
        start = time.perf_counter()
        sampled0 = self._counters["num_env_steps_sampled"]
        trained0 = self._counters["num_env_steps_trained"]
        while True:
            step_results = self.training_step()
            if (
                time.perf_counter() - start >= min_time
                and self._counters["num_env_steps_sampled"] - sampled0 >= min_sample
                and self._counters["num_env_steps_trained"] - trained0 >= min_train
            ):
                break
        # RLlib's new stack times the training steps of an iteration under timers/.
        timers = {TRAINING_ITERATION_TIMER: time.perf_counter() - start}
        timers.update(step_results.get(TIMERS) or {})
        step_results = {**step_results, TIMERS: timers}
        return step_results, self._counters["num_env_steps_sampled"] - sampled0

    def train(self) -> dict[str, Any]:
        """One training iteration (and an evaluation when due); returns the result dict."""
        return super().train()

    def log_result(self, result: dict[str, Any]) -> None:
        """Called by ``train()`` with each result: the ``on_train_result`` callback (which may
        add to it), what the algorithm's hooks logged (``self.metrics``), then the results
        directory."""
        call_hook(
            self.callbacks,
            "on_train_result",
            algorithm=self,
            metrics_logger=self.metrics,
            result=result,
        )
        self._add_logged_metrics(result)
        self._observe_checkpoint_score(result)  # after the callbacks: they may add the key
        if self._storage is None:
            self._open_results().on_result(result)
        else:
            self.log_to_trial_tracker(result)

    def training_step(self) -> dict[str, Any]:
        """One training step, composed of the stages in ``runtime.training.stages``; returns
        ``{"info": {"learner": <info per policy>}}`` and any other result keys. The on- and
        off-policy bases (``runtime.training.on_policy`` / ``off_policy``) implement it."""
        raise NotImplementedError(
            f"{type(self).__name__} has no training_step(): subclass OnPolicyAlgorithm or "
            "OffPolicyAlgorithm, or implement training_step()"
        )

    def _update_env_tasks(self, result: dict[str, Any]) -> None:
        task_fn = self.settings.env_task_fn

        def set_tasks(worker: RolloutWorker) -> None:
            def update(env: Any, ctx: Any) -> None:
                new_task = task_fn(result, env, ctx)
                if env.get_task() != new_task:
                    env.set_task(new_task)

            worker.foreach_env_with_context(update)

        self.workers.foreach_worker(set_tasks)

    # ------------------------------------------------------------------ checkpoints

    @classmethod
    def from_checkpoint(
        cls, checkpoint: str | os.PathLike[str], config: AlgorithmConfig | None = None
    ) -> Algorithm:
        """A new algorithm built from the config in ``checkpoint``, with its state restored.

        Pass ``config`` when the saved config could not be written as JSON (a lambda in it).
        """
        return algorithm_from_checkpoint(cls, checkpoint, config, generic=cls is Algorithm)

    # ------------------------------------------------------------------ lifecycle

    def stop(self) -> None:
        """Stop the workers (remote actors included) and release the algorithm."""
        super().stop()

    def cleanup(self) -> None:
        for workers in (getattr(self, "workers", None), getattr(self, "evaluation_workers", None)):
            if workers is not None:
                workers.stop()
        learner_group = getattr(self, "learner_group", None)
        if learner_group is not None:
            learner_group.stop()
        placement = getattr(self, "placement", None)
        if placement is not None:
            placement.release()
        result_logger = getattr(self, "_result_logger", None)
        if result_logger is not None:
            result_logger.close()
        self._close_trial_tracker()

    def __repr__(self) -> str:
        settings = getattr(self, "settings", None)
        return f"{type(self).__name__}(env={getattr(settings, 'env', None)!r})"
