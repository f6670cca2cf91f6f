"""``RolloutWorker``: envs + policy + preprocessor + filter; collects ``SampleBatch``es.

The same class runs in the driver (the local worker, which also learns) and as a Ray actor
(a remote worker, which only samples).
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import gymnasium as gym
import numpy as np
import torch

from rlconf.config_checks import DEFAULT_POLICY_ID
from rlconf.policy_spec import PolicySpec
from runtime.callbacks import DefaultCallbacks
from runtime.callbacks_setup import environment_created, make_callbacks
from runtime.core.model_catalog import ModelCatalog
from runtime.core.multi_agent_batch import MultiAgentBatch
from runtime.core.policy import PolicyBuilder
from runtime.core.policy_map import PolicyMap
from runtime.core.sample_batch import SampleBatch
from runtime.core.settings import settings_of
from runtime.env.ale_vector import vector_sub_envs
from runtime.env.env_context import EnvContext
from runtime.env.env_registry import EnvCreator
from runtime.env.env_runner import EnvRunner
from runtime.env.episode import EpisodeMetrics
from runtime.env.external_env import ExternalEnv, ExternalEnvSampler, ExternalMultiAgentEnv
from runtime.env.filters import ObservationFilter
from runtime.env.multi_agent_env import MultiAgentEnv
from runtime.env.multi_agent_runner import MultiAgentRunner
from runtime.env.policy_setup import (
    ToTrain,
    configured_policies,
    infer_spaces,
    is_multi_agent,
    mapping_fn_of,
)
from runtime.env.preprocessors import Preprocessor
from runtime.env.recording import make_recorded_env
from runtime.env.worker_policies import WorkerPolicies
from runtime.offline.estimators import ESTIMATORS, OffPolicyEstimator
from runtime.offline.input_reader import InputReader
from runtime.offline.input_setup import external_input, make_input_reader
from runtime.offline.io_context import IOContext
from runtime.offline.output_setup import make_output_writer
from runtime.results.metrics_logger import MetricsLogger
from runtime.training.unsupported import refuse_for_multi_agent, refuse_for_single_agent

logger = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass(frozen=True)
class WorkerSettings:
    """What a ``RolloutWorker`` reads of the config, built once when the worker is built (its
    runner, its policies and their preprocessors and filters read their own)."""

    seed: int | None
    env: Any
    env_config: Mapping[str, Any]
    num_envs_per_worker: int
    num_gpus_per_worker: float
    observation_space: gym.Space[Any] | None
    action_space: gym.Space[Any] | None
    policies: Mapping[str, PolicySpec]
    policy_mapping_fn: Callable[..., str] | None
    policies_to_train: ToTrain
    policy_map_capacity: int
    policy_map_cache: str | None
    output_compress_columns: Sequence[str]
    output_max_file_size: int
    input_config: Mapping[str, Any]
    input_evaluation: Sequence[str]
    gamma: float
    fake_sampler: bool
    in_evaluation: bool


class RolloutWorker(WorkerPolicies):
    """Samples experience in ``num_envs_per_worker`` sub-envs with its policies (one,
    ``default_policy``, for a single-agent env; those of ``multiagent.policies`` for a
    MultiAgentEnv); the local worker also learns."""

    def __init__(
        self,
        *,
        env_creator: EnvCreator | None,
        config: Any,
        policy_class: PolicyBuilder,
        worker_index: int = 0,
        num_workers: int = 0,
        spaces: tuple[gym.Space[Any], gym.Space[Any]] | None = None,
        policy_spaces: dict[str, tuple[gym.Space[Any], gym.Space[Any]]] | None = None,
        registered_models: dict[str, dict[str, Any]] | None = None,
        device: str | None = "cpu",
        output_dir: str | Callable[[IOContext], Any] | None = None,
        video_dir: str | None = None,
        log_dir: str = "",
    ) -> None:
        """``video_dir``: record sub-env 0's episodes there (``record_env``, resolved by the
        algorithm: ``runtime.env.recording``); ``output_dir``: where sampled batches are
        written (``output``: a folder, ``minari://<id>``, or a function making a writer);
        ``log_dir``: the run's folder, for the readers and writers ``input``/``output``
        functions make (``IOContext.log_dir``)."""
        if registered_models:
            ModelCatalog.restore_registered(registered_models)
        self.config = config
        self.settings = settings = settings_of(WorkerSettings, config, type(self).__name__)
        self.worker_index = worker_index
        self.num_workers = num_workers
        #: The learner updates behind the weights this worker acts with (asynchronous
        #: algorithms set it with each weight broadcast: their policy lag).
        self.weights_version = 0
        seed = settings.seed
        if seed is not None:
            worker_seed = int(seed) + worker_index
            random.seed(worker_seed)
            np.random.seed(worker_seed % 2**32)
            torch.manual_seed(worker_seed)
        self.callbacks: DefaultCallbacks = make_callbacks(config, type(self).__name__)
        #: RLlib's ``EnvRunner.metrics``: what hooks log here lands in the results
        #: (``env_runners/``), sent to the driver with each sample or evaluation.
        self.metrics = MetricsLogger(upstream=True)
        self.env_context = EnvContext(
            dict(settings.env_config),
            worker_index=worker_index,
            vector_index=0,
            remote=worker_index > 0,
            num_workers=num_workers,
        )
        self._env_creator = env_creator
        self._video_dir = video_dir
        #: Sub-envs made again after they failed (restart_failed_sub_environments).
        self.num_sub_env_restarts = 0
        batched = vector_sub_envs(self, config) if env_creator is not None else None
        self.envs: list[Any] = list(batched or [])
        if env_creator is not None and batched is None:
            for index in range(int(settings.num_envs_per_worker)):
                self.envs.append(self._make_sub_env(index))
                if isinstance(self.envs[0], ExternalEnv):
                    # An external env runs its own loop (and its own episodes): one is all
                    # the worker serves.
                    break
        #: An ``ExternalEnv`` the worker serves instead of stepping envs (its episodes come
        #: through an ``ExternalEnvSampler``, the worker's input).
        self.external_env: ExternalEnv | None = (
            self.envs[0] if self.envs and isinstance(self.envs[0], ExternalEnv) else None
        )
        self.policy_class = policy_class
        self.device = torch.device(
            device
            if device is not None
            else _worker_device(settings.num_gpus_per_worker, worker_index)
        )
        self.multi_agent = is_multi_agent(
            settings.policies, self.envs[0] if self.envs else None
        ) or isinstance(self.external_env, ExternalMultiAgentEnv)
        if (
            self.multi_agent
            and self.envs
            and not isinstance(self.envs[0], MultiAgentEnv | ExternalMultiAgentEnv)
        ):
            raise ValueError(
                f"policies {sorted(configured_policies(settings.policies))} need a multi-agent "
                f"env, but {settings.env!r} made a single-agent {type(self.envs[0]).__name__}; "
                "wrap it with runtime.make_multi_agent(...) or write a runtime.MultiAgentEnv"
            )
        if self.multi_agent:
            refuse_for_multi_agent(config, f"{type(self).__name__} {worker_index}")
        elif self.envs:
            refuse_for_single_agent(config, f"{type(self).__name__} {worker_index}")
        self.policy_mapping_fn: Callable[..., str] = mapping_fn_of(settings.policy_mapping_fn)
        self.policies_to_train: ToTrain = settings.policies_to_train
        self.policy_specs: dict[str, PolicySpec] = configured_policies(settings.policies)
        if policy_spaces is not None and not self.envs:
            # Inferred by a worker that has the env.
            self.policy_spaces = {pid: policy_spaces[pid] for pid in self.policy_specs}
            self.multi_agent = self.multi_agent or set(policy_spaces) != {DEFAULT_POLICY_ID}
        elif self.multi_agent:
            self.policy_spaces = infer_spaces(
                self.policy_specs,
                self.envs[0] if self.envs else None,
                self.policy_mapping_fn,
                self,
                policy_spaces,
            )
        else:
            self.policy_spaces = {DEFAULT_POLICY_ID: self._spaces(spaces)}
        self.observation_space, self.action_space = next(iter(self.policy_spaces.values()))
        self.preprocessors: dict[str, Preprocessor] = {}
        self.filters: dict[str, ObservationFilter] = {}
        self.io_context = IOContext(
            log_dir=log_dir,
            config=config,
            worker_index=worker_index,
            worker=self,
            input_config=dict(settings.input_config),
            output_config={
                "compress_columns": list(settings.output_compress_columns),
                "max_file_size": int(settings.output_max_file_size),
            },
        )
        #: Where sampled (and read) batches are written (``output``), or None.
        self.writer = make_output_writer(output_dir, self.io_context)
        self.policy_map = PolicyMap(
            int(settings.policy_map_capacity), settings.policy_map_cache, self._make_policy
        )
        self.policy_map.after_load = self._policy_reloaded
        self._global_vars: dict[str, Any] = {}
        for policy_id in self.policy_specs:
            self._add_policy_parts(policy_id)
            self.policy_map[policy_id] = self._make_policy(policy_id)
        self.preprocessor = next(iter(self.preprocessors.values()))
        self.runner: EnvRunner | MultiAgentRunner | None = None
        #: With ``fake_sampler``: the first batch, returned by every later sample() call.
        self._fake_batch: SampleBatch | MultiAgentBatch | None = None
        if self.external_env is not None:
            pass  # served by an ExternalEnvSampler (below)
        elif self.envs and self.multi_agent:
            self.runner = MultiAgentRunner(self, self.envs, config, self.callbacks)
        elif self.envs:
            self.runner = EnvRunner(
                self,
                self.envs,
                self.policy_map[DEFAULT_POLICY_ID],
                self.preprocessor,
                self.filters[DEFAULT_POLICY_ID],
                config,
                self.callbacks,
            )
        #: The training input when it is not the sampler (``input``): files, a mix of
        #: sources, a policy server, a user's reader. Evaluation workers always sample.
        self.input_reader: InputReader | None = (
            None
            if settings.in_evaluation
            else make_input_reader(self, self.io_context, self._sample_envs)
        )
        if self.external_env is not None:
            if self.input_reader is not None:
                raise ValueError(
                    f"worker {worker_index}: an ExternalEnv ({type(self.external_env).__name__}) "
                    "makes its own experience; input must be 'sampler' with it"
                )
            self.input_reader = external_input(
                self,
                ExternalEnvSampler(
                    self.external_env, self, int(config.get_rollout_fragment_length())
                ),
            )
        self._estimators: dict[str, dict[str, OffPolicyEstimator]] = {}
        self._estimates: list[dict[str, dict[str, float]]] = []
        self._simulate = self.input_reader is not None and "simulation" in tuple(
            settings.input_evaluation
        )
        if self._simulate and self.runner is None:
            raise ValueError(
                f"input_evaluation=['simulation'] on worker {worker_index}: the worker has no env "
                "to simulate the policy in (give the config an env; the local worker has one "
                "when num_workers=0 or create_env_on_driver=True)"
            )

    def _make_sub_env(self, index: int) -> Any:
        """Sub-env ``index``: made by the env creator with its context, recorded when it is
        sub-env 0 and videos are on, and handed to ``on_environment_created``."""
        assert self._env_creator is not None
        context = self.env_context.copy_with_overrides(vector_index=index)
        if index == 0 and self._video_dir is not None:
            prefix = "evaluation-worker" if self.settings.in_evaluation else "worker"
            # A sub-env made again records under a name of its own, not over the old videos.
            again = f"-restart-{self.num_sub_env_restarts}" if self.num_sub_env_restarts else ""
            env = make_recorded_env(
                self._env_creator,
                context,
                self._video_dir,
                f"{prefix}-{self.worker_index}{again}",
                f"{type(self).__name__} {self.worker_index}",
            )
        else:
            env = self._env_creator(context)
        if not isinstance(env, ExternalEnv):
            _check_env(env, self.settings.env)
        environment_created(self, env, context, index)
        return env

    def recreate_sub_environment(self, index: int) -> Any:
        """Sub-env ``index`` made anew, in the place of one that failed (its runner closed the
        old one): ``restart_failed_sub_environments``."""
        self.num_sub_env_restarts += 1
        env = self._make_sub_env(index)
        self.envs[index] = env
        return env

    def _spaces(
        self, given: tuple[gym.Space[Any], gym.Space[Any]] | None
    ) -> tuple[gym.Space[Any], gym.Space[Any]]:
        obs_space = self.settings.observation_space
        action_space = self.settings.action_space
        if self.envs:
            obs_space = obs_space or self.envs[0].observation_space
            action_space = action_space or self.envs[0].action_space
        elif given is not None:
            obs_space = obs_space or given[0]
            action_space = action_space or given[1]
        if obs_space is None or action_space is None:
            raise ValueError(
                "the worker has no env to take the spaces from: set observation_space and "
                "action_space with config.environment(...), or give it an env"
            )
        return obs_space, action_space

    # ------------------------------------------------------------------ sampling

    def sample(self) -> Any:
        """A fragment: a ``SampleBatch`` (single-agent env) or a ``MultiAgentBatch``; with an
        ``input`` other than the sampler, the next batch of that input (estimated by the
        ``input_evaluation`` estimators, and with ``"simulation"`` a fragment of the envs is
        sampled beside it for its episode metrics only)."""
        if self._fake_batch is not None:
            return self._fake_batch
        if self.input_reader is not None:
            batch = self.input_reader.next()
            self._estimate(batch)
            if self._simulate:
                self._sample_envs()
        else:
            batch = self._sample_envs()
        if self.writer is not None:
            self.writer.write(batch)
        if self.settings.fake_sampler:
            self._fake_batch = batch
        return batch

    def _sample_envs(self) -> Any:
        if self.runner is None:
            raise ValueError(
                f"worker {self.worker_index} has no env to sample from (the local worker gets "
                "one when num_workers=0 or create_env_on_driver=True)"
            )
        return self.runner.sample()

    def _estimate(self, batch: SampleBatch | MultiAgentBatch) -> None:
        """Run the ``input_evaluation`` estimators on the rows of each policy read."""
        names = [name for name in self.settings.input_evaluation if name in ESTIMATORS]
        if not names:
            return
        estimates: dict[str, dict[str, float]] = {}
        for pid, rows in MultiAgentBatch.wrap(batch).items():
            if pid not in self.policy_map or not len(rows):
                continue
            estimators = self._estimators.setdefault(pid, {})
            for name in names:
                if name not in estimators:
                    estimators[name] = ESTIMATORS[name](
                        self.policy_map[pid], float(self.settings.gamma)
                    )
                key = name if pid == DEFAULT_POLICY_ID else f"{name}/{pid}"
                estimates[key] = estimators[name].estimate(rows)
        self._estimates.append(estimates)

    def pop_off_policy_estimates(self) -> list[dict[str, dict[str, float]]]:
        """The estimates of each batch read since the last call: estimator -> values."""
        out, self._estimates = self._estimates, []
        return out

    def sample_with_count(self) -> tuple[Any, int]:
        batch = self.sample()
        return batch, len(batch)

    def evaluate(
        self, *, episodes: int = 0, timesteps: int = 0, reset: bool = True
    ) -> tuple[list[EpisodeMetrics], int]:
        """Run exactly ``episodes`` episodes or ``timesteps`` steps (evaluation workers only);
        returns the finished episodes and the number of steps."""
        if self.runner is None or not self.settings.in_evaluation:
            raise ValueError(
                f"worker {self.worker_index} is not an evaluation worker with an env "
                "(evaluate() runs on the evaluation WorkerSet)"
            )
        return self.runner.run(episodes=episodes, timesteps=timesteps, reset=reset)

    def get_metrics(self) -> list[EpisodeMetrics]:
        """The episodes finished since the last call: the envs' and those an input saw whole
        (a policy server's)."""
        metrics = self.runner.pop_metrics() if self.runner else []
        if self.input_reader is not None:
            metrics += self.input_reader.pop_metrics()
        return metrics

    def get_perf_stats(self) -> dict[str, float]:
        return self.runner.pop_perf() if self.runner else {}

    # ------------------------------------------------------------------ policies

    @property
    def env(self) -> Any:
        """The worker's first sub-env (``envs[0]``), as RLlib's ``worker.env``: what user code
        reads spaces or state from; None on a worker without envs (reading from input)."""
        return self.envs[0] if self.envs else None

    def foreach_env(self, func: Callable[[Any], T]) -> list[T]:
        return [func(env) for env in self.envs]

    def foreach_env_with_context(self, func: Callable[[Any, EnvContext], T]) -> list[T]:
        return [
            func(env, self.env_context.copy_with_overrides(vector_index=i))
            for i, env in enumerate(self.envs)
        ]

    def apply(self, func: Callable[..., T], *args: Any) -> T:
        return func(self, *args)

    def learn_on_batch(self, batch: SampleBatch | MultiAgentBatch) -> dict[str, Any]:
        """Update the learner of each policy in ``batch`` (a SampleBatch is the default
        policy's); returns the learner info per policy id."""
        info: dict[str, Any] = {}
        for pid, policy_batch in MultiAgentBatch.wrap(batch).items():
            if not self.is_policy_to_train(pid, policy_batch):
                continue
            policy = self.get_policy(pid)
            result: dict[str, Any] = {}
            self.callbacks.on_learn_on_batch(policy=policy, train_batch=policy_batch, result=result)
            stats = policy.learn_on_batch(policy_batch)
            stats.update(result)
            info[pid] = stats
        return info

    # ------------------------------------------------------------------ filters

    def get_filters(self, flush_after: bool = False) -> dict[str, dict[str, Any]]:
        """Each filter's buffer since the last flush (for the driver to merge)."""
        if flush_after:
            return {pid: f.pop_buffer() for pid, f in self.filters.items()}
        return {pid: f.get_state() for pid, f in self.filters.items()}

    def get_filter_states(self) -> dict[str, dict[str, Any]]:
        return {pid: f.get_state() for pid, f in self.filters.items()}

    def sync_filters(self, states: Mapping[str, Mapping[str, Any]]) -> None:
        for pid, state in states.items():
            if pid in self.filters:  # a policy removed meanwhile has none
                self.filters[pid].set_state(dict(state))

    def merge_filter_buffers(self, buffers: Sequence[Mapping[str, Mapping[str, Any]]]) -> None:
        for buffer in buffers:
            for pid, part in buffer.items():
                if pid in self.filters:
                    self.filters[pid].apply_buffer(dict(part))

    # ------------------------------------------------------------------ lifecycle

    def get_spaces(self) -> tuple[gym.Space[Any], gym.Space[Any]]:
        return self.observation_space, self.action_space

    def ping(self) -> str:
        return "ok"

    def stop(self) -> None:
        for part in (self.input_reader, self.writer):
            close = getattr(part, "close", None)
            if close is not None:
                close()
        self.policy_map.close()
        for env in self.envs:
            close = getattr(env, "close", None)
            if close is not None:
                close()


def _worker_device(num_gpus_per_worker: float, worker_index: int) -> str:
    """A remote worker with a GPU share infers on CUDA when torch sees a GPU; otherwise on CPU
    (the share may be meant for the env itself, e.g. a simulator)."""
    if float(num_gpus_per_worker) <= 0:
        return "cpu"
    if torch.cuda.is_available():
        return "cuda"
    logger.warning(
        "rollout worker %d was given num_gpus_per_worker=%s but torch sees no CUDA device; "
        "its policy runs on CPU",
        worker_index,
        num_gpus_per_worker,
    )
    return "cpu"


def _check_env(env: Any, name: Any) -> None:
    if not (hasattr(env, "reset") and hasattr(env, "step") and hasattr(env, "action_space")):
        raise ValueError(
            f"the env creator for {name!r} returned {type(env).__name__}, which is not a "
            "gymnasium env (needs reset(), step(), observation_space and action_space)"
        )
