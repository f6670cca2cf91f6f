"""``Algorithm``: a Ray Tune ``Trainable`` that owns the rollout WorkerSet, trains, reports
metrics and saves checkpoints. PPO, PG and A2C subclass it."""

from __future__ import annotations

import logging
import os
import time
from collections import defaultdict
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch

from rlconf.algorithm_config import AlgorithmConfig
from rlconf.errors import ConfigError
from rlconf.registry import get_algorithm_class
from runtime.callbacks import DefaultCallbacks
from runtime.cluster.cpu_threads import set_learner_threads
from runtime.cluster.driver_environment import set_driver_environs
from runtime.cluster.placement import Placement, local_cluster_cpus
from runtime.cluster.ray_session import ensure_ray
from runtime.cluster.resources import ResourcePlan, Role, resource_plan
from runtime.core.policy import TorchPolicy
from runtime.core.sample_batch import SampleBatch
from runtime.env.env_registry import EnvCreator, env_creator_for
from runtime.env.env_runner import action_processor
from runtime.env.episode import EpisodeMetrics
from runtime.env.rollout_worker import DEFAULT_POLICY_ID, RolloutWorker
from runtime.env.worker_set import WorkerSet
from runtime.offline.input_reader import input_reader
from runtime.results.metrics import EpisodeHistory, summarize_episodes
from runtime.results.result_logger import ResultLogger, claim_logdir, planned_logdir
from runtime.results.system_usage import SystemUsage
from runtime.training import checkpoint_files as checkpoints
from runtime.training.evaluation import (
    DurationFn,
    accepts_train_future,
    duration_fn_for,
    evaluation_metrics,
    finished_future,
    placeholder_metrics,
    run_evaluation,
)
from runtime.training.evaluation_config import evaluation_config, evaluation_configured
from runtime.training.trainable import Trainable
from runtime.training.unsupported import refuse_unsupported

logger = logging.getLogger(__name__)

#: Keys Tune adds to a trial's config dict; they are not config keys.
_TUNE_KEYS = ("__trial_info__", "__stdout_file__", "__stderr_file__")


class Algorithm(Trainable):
    """Base of all algorithms: ``Algorithm(config=..., env=...)``, ``train()``, ``save()``."""

    config_class: ClassVar[type[AlgorithmConfig]] = AlgorithmConfig
    policy_class: ClassVar[type[TorchPolicy]]

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
        self._lazy_logdir = lazy_logdir
        self._logdir_claimed = False
        self._result_logger: ResultLogger | None = None
        tune_keys: dict[str, Any] = {}
        if isinstance(config, Mapping):
            config = dict(config)
            tune_keys = {k: config.pop(k) for k in _TUNE_KEYS if k in config}
        self._algo_config = self._resolve_config(config, env)
        refuse_unsupported(self._algo_config, type(self).__name__)
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
        if isinstance(config, Mapping):
            config = {k: v for k, v in config.items() if k not in _TUNE_KEYS}
        return resource_plan(cls._resolve_config(config, None)).placement_group_factory()

    @classmethod
    def _resolve_config(
        cls, config: AlgorithmConfig | Mapping[str, Any] | None, env: Any
    ) -> AlgorithmConfig:
        where = f"{cls.__name__}(config=...)"
        if config is None:
            resolved = cls.get_default_config()
        elif isinstance(config, AlgorithmConfig):
            if not isinstance(config, cls.config_class):
                raise ConfigError.single(
                    where,
                    "config",
                    f"is a {type(config).__name__}; {cls.__name__} needs a "
                    f"{cls.config_class.__name__}",
                    value=type(config).__name__,
                    has_value=True,
                )
            resolved = config.copy()
        elif isinstance(config, Mapping):
            resolved = cls.config_class.from_dict(config)
        else:
            raise ConfigError.single(
                where,
                "config",
                "is not a config",
                value=config,
                has_value=True,
                allowed=f"a {cls.config_class.__name__}, a dict of its keys, or None",
            )
        if env is not None:
            resolved.environment(env)
        return resolved.freeze()

    # ------------------------------------------------------------------ setup

    def _setup_logdir(self) -> None:
        """Outside Tune the results go to ``logger_config["logdir"]`` when given, otherwise to a
        new ``<local_dir>/<ALGO>_<ENV>_<timestamp>`` folder (``local_dir`` from
        ``logger_config``, ``$RLCONF_RESULTS_DIR`` or ``~/rlconf_results``). Under Tune the
        trial's folder is used."""
        if self._storage is not None:
            super()._setup_logdir()
            return
        settings = dict(self._algo_config["logger_config"] or {})
        self._logdir_fixed = bool(settings.get("logdir"))
        if self._logdir_fixed:
            path = Path(str(settings["logdir"])).expanduser()
        else:
            path = planned_logdir(
                type(self).__name__, self._algo_config["env"], settings.get("local_dir")
            )
        self._logdir = str(path)

    def _claim_logdir(self) -> Path:
        """Create the results folder (outside Tune) if it is not there yet."""
        path = Path(self.logdir)
        if self._storage is None and not self._logdir_claimed:
            if self._logdir_fixed:
                path.mkdir(parents=True, exist_ok=True)
            else:
                path = claim_logdir(path)
                self._logdir = str(path)
            self._logdir_claimed = True
        return path

    def _open_results(self) -> ResultLogger:
        """The results directory's writer (params.json first), made on first use."""
        if self._result_logger is None:
            self._result_logger = ResultLogger(self._claim_logdir(), self.config)
        return self._result_logger

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
                _remove_if_unused(Path(self.logdir))
            raise
        # Under Tune, Tune's own loggers write the same files into the trial folder.
        if self._storage is None and not self._lazy_logdir:
            self._open_results()

    def _build(self) -> None:
        config = self.config
        logging.getLogger("runtime").setLevel(config["log_level"])
        set_learner_threads(float(config["num_cpus_for_driver"]))
        self.callbacks: DefaultCallbacks = (config.callbacks_class or DefaultCallbacks)()
        env = config["env"]
        self.env_creator: EnvCreator | None = env_creator_for(env) if env is not None else None
        self.device = self._learner_device()
        self._counters: dict[str, int] = defaultdict(int)
        self._num_episodes = 0
        self._history = EpisodeHistory(int(config["metrics_num_episodes_for_smoothing"]))
        self._pending_episodes: list[EpisodeMetrics] = []
        self._perf: list[dict[str, float]] = []
        self._system_usage = SystemUsage() if config["log_sys_usage"] else None
        self.resource_plan: ResourcePlan = resource_plan(config)
        self.placement: Placement | None = None
        if self.resource_plan.num_actors:
            ensure_ray(config, num_cpus=local_cluster_cpus(self.resource_plan))
            self.placement = Placement.reserve(
                self.resource_plan, float(config["placement_timeout_s"]), type(self).__name__
            )
        self.workers = WorkerSet(
            env_creator=self.env_creator,
            config=config,
            policy_class=self.policy_class,
            num_workers=int(config["num_workers"]),
            remote_options=self._actor_options("rollout"),
            device=self.device,
            output_dir=(
                str(self._claim_logdir()) if config["output"] == "logdir" else config["output"]
            ),
        )
        self.workers.on_recreated = self._workers_recreated
        self._reader = input_reader(config, self.workers.local_worker().action_space)
        self.workers.sync_weights()
        self.evaluation_workers: WorkerSet | None = None
        self.evaluation_metrics: dict[str, Any] = {}
        if evaluation_configured(config):
            self.evaluation_workers = self._make_evaluation_workers()
        self.callbacks.on_algorithm_init(algorithm=self)

    def _actor_options(self, role: Role) -> Callable[[int], dict[str, Any]]:
        def options(index: int) -> dict[str, Any]:
            return self.placement.actor_options(role, index) if self.placement else {}

        return options

    def _make_evaluation_workers(self) -> WorkerSet:
        """The evaluation WorkerSet: its local worker when evaluation_num_workers=0, otherwise
        that many remote workers, all running the evaluation config."""
        num_workers = int(self.config["evaluation_num_workers"])
        workers = WorkerSet(
            env_creator=self.env_creator,
            config=evaluation_config(self.config),
            policy_class=self.policy_class,
            num_workers=num_workers,
            local_worker=num_workers == 0,
            local_has_env=True,
            remote_options=self._actor_options("evaluation"),
            device=self.device,
            name="evaluation_workers",
        )
        workers.source_worker = self.workers.local_worker()

        def recreated(indices: list[int]) -> None:
            self.callbacks.on_workers_recreated(
                algorithm=self, worker_set=workers, worker_ids=indices, is_evaluation_workers=True
            )

        workers.on_recreated = recreated
        return workers

    def _learner_device(self) -> str:
        num_gpus = float(self.config["num_gpus"])
        if num_gpus == 0 or self.config["_fake_gpus"]:
            return "cpu"
        if not torch.cuda.is_available():
            raise ConfigError.single(
                f"{type(self).__name__}",
                "num_gpus",
                "asks for a GPU but torch sees none (set num_gpus=0, or _fake_gpus=True to "
                "test GPU settings on CPU)",
                value=num_gpus,
                has_value=True,
            )
        return "cuda"

    def _workers_recreated(self, indices: list[int]) -> None:
        self.callbacks.on_workers_recreated(
            algorithm=self,
            worker_set=self.workers,
            worker_ids=indices,
            is_evaluation_workers=False,
        )

    # ------------------------------------------------------------------ training

    def step(self) -> dict[str, Any]:
        """One training iteration, and an evaluation when one is due: after the training step,
        or beside it (``evaluation_parallel_to_training``) on the weights from before it."""
        config = self.config
        interval = config["evaluation_interval"]
        evaluate_now = bool(interval) and (self._iteration + 1) % int(interval) == 0
        if evaluate_now and config["evaluation_parallel_to_training"]:
            self._sync_evaluation_workers()
            with ThreadPoolExecutor(max_workers=1, thread_name_prefix="rlconf-train") as pool:
                train_future = pool.submit(self._train_step)
                try:
                    self._evaluate(train_future, self._iteration, sync=False)
                finally:
                    step_results, sampled = train_future.result()
        else:
            step_results, sampled = self._train_step()
            if evaluate_now:
                self._evaluate(finished_future(), self._iteration + 1, sync=True)
        self.workers.sync_filters()
        result = self._compile_results(step_results, sampled)
        if evaluate_now:
            result.update(self.evaluation_metrics)
        elif config["always_attach_evaluation_results"] and self.evaluation_workers is not None:
            result.update(self.evaluation_metrics or {"evaluation": placeholder_metrics()})
        if config["env_task_fn"] is not None:
            self._update_env_tasks(result)
        return result

    def _train_step(self) -> tuple[dict[str, Any], int]:
        """``training_iteration()`` until the min_*_per_reporting settings are met."""
        config = self.config
        min_time = float(config["min_time_s_per_reporting"] or 0)
        min_sample = int(config["min_sample_timesteps_per_reporting"] or 0)
        min_train = int(config["min_train_timesteps_per_reporting"] or 0)
        start = time.perf_counter()
        sampled0 = self._counters["num_env_steps_sampled"]
        trained0 = self._counters["num_env_steps_trained"]
        while True:
            step_results = self.training_iteration()
            if (
                time.perf_counter() - start >= min_time
                and self._counters["num_env_steps_sampled"] - sampled0 >= min_sample
                and self._counters["num_env_steps_trained"] - trained0 >= min_train
            ):
                break
        return step_results, self._counters["num_env_steps_sampled"] - sampled0

    # ------------------------------------------------------------------ evaluation

    def evaluate(self, duration_fn: DurationFn | None = None) -> dict[str, Any]:
        """Evaluate the current weights now; returns ``{"evaluation": metrics}``.

        ``duration_fn(units_done) -> units_left`` overrides ``evaluation_duration``. Without
        evaluation configured, a local evaluation worker is made on the first call.
        """
        return self._evaluate(
            finished_future(), self._iteration, sync=True, duration_fn=duration_fn
        )

    def _sync_evaluation_workers(self) -> None:
        if self.evaluation_workers is None:
            self.evaluation_workers = self._make_evaluation_workers()
        timestep = {"timestep": self._counters["num_env_steps_sampled"]}
        self.evaluation_workers.sync_weights(global_vars=timestep)
        self.evaluation_workers.sync_filter_states()

    def _evaluate(
        self,
        train_future: Future[Any],
        weights_version: int,
        *,
        sync: bool,
        duration_fn: DurationFn | None = None,
    ) -> dict[str, Any]:
        self.callbacks.on_evaluate_start(algorithm=self)
        if sync or self.evaluation_workers is None:
            self._sync_evaluation_workers()
        workers = self.evaluation_workers
        assert workers is not None
        custom = self.config["custom_eval_function"]
        if custom is not None:
            args: tuple[Any, ...] = (self, workers)
            if accepts_train_future(custom):
                args += (train_future,)
            metrics = custom(*args)
            if not isinstance(metrics, Mapping):
                raise TypeError(
                    f"custom_eval_function {getattr(custom, '__qualname__', custom)!r} returned "
                    f"{type(metrics).__name__} {metrics!r:.100}; it must return a dict of metrics"
                )
            metrics = dict(metrics)
            metrics.setdefault("weights_version", weights_version)
        else:
            eval_config = workers.config
            by_episodes = eval_config["evaluation_duration_unit"] == "episodes"
            duration_fn = duration_fn or duration_fn_for(
                eval_config, workers.num_workers, train_future
            )
            episodes, steps = run_evaluation(workers, by_episodes, duration_fn)
            metrics = evaluation_metrics(episodes, steps, workers, weights_version)
        self.evaluation_metrics = {"evaluation": metrics}
        self.callbacks.on_evaluate_end(algorithm=self, evaluation_metrics=self.evaluation_metrics)
        return self.evaluation_metrics

    def train(self) -> dict[str, Any]:
        """One training iteration (and an evaluation when due); returns the result dict."""
        return super().train()

    def log_result(self, result: dict[str, Any]) -> None:
        """Called by ``train()`` with each result: the ``on_train_result`` callback (which may
        add to it), then the results directory."""
        self.callbacks.on_train_result(algorithm=self, result=result)
        if self._storage is None:
            self._open_results().on_result(result)

    def training_iteration(self) -> dict[str, Any]:
        """Sample ``train_batch_size`` steps, learn on them, send the new weights out."""
        batch = self.sample_train_batch()
        learner = self.learn_on_batch(batch)
        self._counters["num_env_steps_trained"] += len(batch)
        self._counters["num_agent_steps_trained"] += len(batch)
        self.workers.sync_weights(global_vars={"timestep": self._counters["num_env_steps_sampled"]})
        return {"info": {"learner": learner}}

    def sample_train_batch(self) -> SampleBatch:
        target = int(self.config["train_batch_size"])
        batches: list[SampleBatch] = []
        count = 0
        self.workers.local_worker().set_global_vars(
            {"timestep": self._counters["num_env_steps_sampled"]}
        )
        while count < target:
            for batch in self._sample_round():
                batches.append(batch)
                count += len(batch)
        self._counters["num_env_steps_sampled"] += count
        self._counters["num_agent_steps_sampled"] += count
        return SampleBatch.concat_samples(batches)

    def _sample_round(self) -> list[SampleBatch]:
        """One ``sample()`` from every rollout worker (the local one when there are none)."""
        if self._reader is not None:
            return [self._reader.next()]
        workers = self.workers
        if workers.num_workers == 0:
            local = workers.local_worker()
            batch = local.sample()
            self._pending_episodes.extend(local.get_metrics())
            return [batch]
        results = workers.call_remote(_sample_remote)
        if not results:
            raise RuntimeError(
                "all remote rollout workers have failed; none is left to sample from"
            )
        out = []
        for _, (batch, episodes, perf) in results:
            out.append(batch)
            self._pending_episodes.extend(episodes)
            self._perf.append(perf)
        return out

    def learn_on_batch(self, batch: SampleBatch) -> dict[str, Any]:
        """Learn on the local worker; returns the learner info per policy."""
        return self.workers.local_worker().learn_on_batch(batch)

    def _compile_results(self, step_results: dict[str, Any], sampled: int) -> dict[str, Any]:
        new = self._pending_episodes
        self._pending_episodes = []
        self._num_episodes += len(new)
        result = summarize_episodes(self._history.smoothed(new), new_episodes=len(new))
        counters = dict(self._counters)
        info = dict(step_results.get("info", {}))
        info.update(counters)
        if self.workers.num_workers == 0:
            perf = self.workers.local_worker().get_perf_stats()
        else:
            perf = _mean_dicts(self._perf)
            self._perf = []
        result.update(
            {
                "episodes_total": self._num_episodes,
                "timesteps_total": counters.get("num_env_steps_sampled", 0),
                "timesteps_this_iter": sampled,
                "agent_timesteps_total": counters.get("num_agent_steps_sampled", 0),
                "num_env_steps_sampled": counters.get("num_env_steps_sampled", 0),
                "num_env_steps_trained": counters.get("num_env_steps_trained", 0),
                "num_agent_steps_sampled": counters.get("num_agent_steps_sampled", 0),
                "num_agent_steps_trained": counters.get("num_agent_steps_trained", 0),
                "num_healthy_workers": self.workers.num_healthy_workers(),
                "num_recreated_workers": self.workers.num_recreated,
                "sampler_perf": perf,
                "info": info,
            }
        )
        if self._system_usage is not None:
            result["perf"] = self._system_usage.sample()
        for key, value in step_results.items():
            if key != "info":
                result[key] = value
        return result

    def _update_env_tasks(self, result: dict[str, Any]) -> None:
        task_fn = self.config["env_task_fn"]

        def set_tasks(worker: RolloutWorker) -> None:
            def update(env: Any, ctx: Any) -> None:
                new_task = task_fn(result, env, ctx)
                if env.get_task() != new_task:
                    env.set_task(new_task)

            worker.foreach_env_with_context(update)

        self.workers.foreach_worker(set_tasks)

    # ------------------------------------------------------------------ acting

    def get_policy(self, policy_id: str = DEFAULT_POLICY_ID) -> TorchPolicy:
        return self.workers.local_worker().get_policy(policy_id)

    def get_weights(self, policies: list[str] | None = None) -> dict[str, dict[str, Any]]:
        return self.workers.local_worker().get_weights(policies)

    def set_weights(self, weights: Mapping[str, Mapping[str, Any]]) -> None:
        self.workers.local_worker().set_weights(weights)
        self.workers.sync_weights()

    def compute_single_action(
        self,
        observation: Any,
        state: list[Any] | None = None,
        *,
        policy_id: str = DEFAULT_POLICY_ID,
        explore: bool | None = None,
        full_fetch: bool = False,
        unsquash_action: bool | None = None,
        clip_action: bool | None = None,
        **kwargs: Any,
    ) -> Any:
        """The action for one raw observation (preprocessed and filtered as in training).

        Returns the action, or ``(action, state, extra)`` with ``full_fetch`` or a ``state``.
        """
        actions, states, extra = self._compute(
            [observation], policy_id, explore, unsquash_action, clip_action
        )
        action = actions[0]
        if full_fetch or state:
            return action, states, {k: v[0] for k, v in extra.items()}
        return action

    def compute_actions(
        self,
        observations: Mapping[Any, Any] | Any,
        *,
        policy_id: str = DEFAULT_POLICY_ID,
        explore: bool | None = None,
        full_fetch: bool = False,
        unsquash_action: bool | None = None,
        clip_action: bool | None = None,
        **kwargs: Any,
    ) -> Any:
        """Actions for a dict ``{key: obs}`` (returns ``{key: action}``) or a list of
        observations (returns a list of actions)."""
        if isinstance(observations, Mapping):
            keys = list(observations)
            actions, states, extra = self._compute(
                [observations[k] for k in keys], policy_id, explore, unsquash_action, clip_action
            )
            out: Any = dict(zip(keys, actions, strict=True))
        else:
            actions, states, extra = self._compute(
                list(observations), policy_id, explore, unsquash_action, clip_action
            )
            out = list(actions)
        if full_fetch:
            return out, states, extra
        return out

    def _compute(
        self,
        observations: list[Any],
        policy_id: str,
        explore: bool | None,
        unsquash_action: bool | None,
        clip_action: bool | None,
    ) -> tuple[Any, list[Any], dict[str, Any]]:
        worker = self.workers.local_worker()
        policy = worker.get_policy(policy_id)
        obs = worker.filters[policy_id](
            worker.preprocessor.transform_many(observations), update=False
        )
        actions, states, extra = policy.compute_actions(obs, explore=explore)
        unsquash = self.config["normalize_actions"] if unsquash_action is None else unsquash_action
        clip = self.config["clip_actions"] if clip_action is None else clip_action
        processed = action_processor(policy.action_space, bool(unsquash), bool(clip))(actions)
        return processed, states, extra

    # ------------------------------------------------------------------ checkpoints

    def _state(self) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
        worker = self.workers.local_worker()
        try:
            config_json: str | None = self.config.to_json(indent=None)
            config_problem = None
        except ConfigError as error:
            config_json, config_problem = None, str(error)
        state = {
            "algorithm": type(self).__name__,
            "algo_name": self.config.algo_name,
            "config": config_json,
            "config_problem": config_problem,
            "iteration": self._iteration,
            "time_total": self._time_total,
            "timesteps_total": self._counters.get("num_env_steps_sampled", 0),
            "episodes_total": self._num_episodes,
            "counters": dict(self._counters),
            "episode_history": self._history.to_state(),
            "filters": worker.get_filter_states(),
            "policies": {pid: p.extra_state() for pid, p in worker.policy_map.items()},
        }
        tensors: dict[str, dict[str, Any]] = {}
        for pid, policy in worker.policy_map.items():
            tensors[f"policies/{pid}/model"] = policy.model.state_dict()
            tensors[f"policies/{pid}/optimizer"] = policy.optimizer.state_dict()
        return state, tensors

    def save_checkpoint(self, checkpoint_dir: str) -> None:
        """Tune's hook: write this algorithm's state into ``checkpoint_dir``."""
        state, tensors = self._state()
        checkpoints.write_files(Path(checkpoint_dir), state, tensors)

    def load_checkpoint(self, checkpoint: Any) -> None:
        """Tune's hook: restore from a checkpoint folder."""
        path = checkpoint if isinstance(checkpoint, str | os.PathLike) else str(checkpoint)
        self._load_state(str(path))

    def save(self, checkpoint_dir: str | None = None) -> Any:
        """Write a checkpoint and return its path: ``<checkpoint_dir or logdir>/
        checkpoint_<iteration>``. Under Tune, Tune's own checkpointing is used."""
        if self._storage is not None and checkpoint_dir is None:
            return super().save()  # type: ignore[misc]
        parent = Path(checkpoint_dir) if checkpoint_dir else self._open_results().logdir
        state, tensors = self._state()
        return checkpoints.write_checkpoint(
            parent / f"checkpoint_{self._iteration:06d}", state, tensors
        )

    def restore(self, checkpoint_path: Any) -> None:
        """Load weights, optimizer state, filters, counters and the iteration from a
        checkpoint written by ``save()``."""
        if self._storage is not None and not isinstance(checkpoint_path, str | os.PathLike):
            super().restore(checkpoint_path)  # type: ignore[misc]
            return
        # A Tune Checkpoint of a local folder restores like its path.
        self._load_state(os.fspath(getattr(checkpoint_path, "path", checkpoint_path)))

    def _load_state(self, path: str) -> None:
        state = checkpoints.decode_floats(checkpoints.read_state(path))
        worker = self.workers.local_worker()
        for pid, policy in worker.policy_map.items():
            model = checkpoints.read_tensors(path, f"policies/{pid}/model", policy.device)
            policy.model.load_state_dict(model)
            optimizer = checkpoints.read_tensors(path, f"policies/{pid}/optimizer", policy.device)
            policy.optimizer.load_state_dict(optimizer)
            policy.set_extra_state(state["policies"].get(pid, {}))
        worker.sync_filters(state.get("filters", {}))
        self._counters = defaultdict(int, {k: int(v) for k, v in state["counters"].items()})
        self._num_episodes = int(state["episodes_total"])
        self._history.set_state(state["episode_history"])
        self._iteration = int(state["iteration"])
        self._time_total = float(state["time_total"])
        self._timesteps_total = int(state["timesteps_total"])
        self.workers.sync_weights(global_vars={"timestep": self._counters["num_env_steps_sampled"]})
        self.workers.sync_filter_states()
        self.callbacks.on_checkpoint_loaded(algorithm=self)

    @classmethod
    def from_checkpoint(
        cls, checkpoint: str | os.PathLike[str], config: AlgorithmConfig | None = None
    ) -> Algorithm:
        """A new algorithm built from the config in ``checkpoint``, with its state restored.

        Pass ``config`` when the saved config could not be written as JSON (a lambda in it).
        """
        path = os.fspath(checkpoint)
        if config is None:
            config = checkpoints.saved_config(path)
        algo_class: type[Algorithm] = cls
        if (cls is Algorithm or not isinstance(config, cls.config_class)) and config.algo_name:
            algo_class = get_algorithm_class(config.algo_name)
        algo = algo_class(config=config, lazy_logdir=True)
        algo.restore(path)
        return algo

    # ------------------------------------------------------------------ lifecycle

    def stop(self) -> None:
        """Stop the workers (remote actors included) and release the algorithm."""
        super().stop()

    def cleanup(self) -> None:
        for workers in (getattr(self, "workers", None), getattr(self, "evaluation_workers", None)):
            if workers is not None:
                workers.stop()
        placement = getattr(self, "placement", None)
        if placement is not None:
            placement.release()
        result_logger = getattr(self, "_result_logger", None)
        if result_logger is not None:
            result_logger.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(env={self.config['env']!r})"


def _remove_if_unused(logdir: Path) -> None:
    """Remove a results folder that holds nothing but its params.json."""
    if logdir.is_dir() and {p.name for p in logdir.iterdir()} <= {"params.json"}:
        for file in logdir.iterdir():
            file.unlink()
        logdir.rmdir()


def _sample_remote(worker: RolloutWorker) -> tuple[SampleBatch, list[EpisodeMetrics], Any]:
    batch = worker.sample()
    return batch, worker.get_metrics(), worker.get_perf_stats()


def _mean_dicts(dicts: list[dict[str, float]]) -> dict[str, float]:
    keys = {k for d in dicts for k in d}
    return {k: float(np.mean([d[k] for d in dicts if k in d])) for k in sorted(keys)}
