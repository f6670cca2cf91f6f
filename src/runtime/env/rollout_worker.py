"""``RolloutWorker``: envs + policy + preprocessor + filter; collects ``SampleBatch``es.

The same class runs in the driver (the local worker, which also learns) and as a Ray actor
(a remote worker, which only samples).
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import gymnasium as gym
import numpy as np
import torch

from rlconf.config_checks import DEFAULT_POLICY_ID
from runtime.callbacks import DefaultCallbacks
from runtime.core.model_catalog import ModelCatalog
from runtime.core.multi_agent_batch import MultiAgentBatch
from runtime.core.policy import PolicyBuilder, TorchPolicy
from runtime.core.sample_batch import SampleBatch
from runtime.env.env_context import EnvContext
from runtime.env.env_registry import EnvCreator
from runtime.env.env_runner import EnvRunner
from runtime.env.episode import EpisodeMetrics
from runtime.env.evaluation_runner import EvaluationRunner
from runtime.env.filters import ObservationFilter, get_filter
from runtime.env.preprocessors import Preprocessor, get_preprocessor
from runtime.offline.batch_files import BatchWriter

logger = logging.getLogger(__name__)
T = TypeVar("T")


class RolloutWorker:
    """Samples experience with one policy (``default_policy``) in ``num_envs_per_worker``
    sub-envs; the local worker also learns."""

    def __init__(
        self,
        *,
        env_creator: EnvCreator | None,
        config: Any,
        policy_class: PolicyBuilder,
        worker_index: int = 0,
        num_workers: int = 0,
        spaces: tuple[gym.Space[Any], gym.Space[Any]] | None = None,
        registered_models: dict[str, dict[str, Any]] | None = None,
        device: str | None = "cpu",
        output_dir: str | None = None,
    ) -> None:
        if registered_models:
            ModelCatalog.restore_registered(registered_models)
        self.config = config
        self.worker_index = worker_index
        self.num_workers = num_workers
        seed = config.get("seed")
        if seed is not None:
            worker_seed = int(seed) + worker_index
            random.seed(worker_seed)
            np.random.seed(worker_seed % 2**32)
            torch.manual_seed(worker_seed)
        callbacks_class = config["callbacks"] or DefaultCallbacks
        self.callbacks: DefaultCallbacks = callbacks_class()
        self.env_context = EnvContext(
            dict(config["env_config"]),
            worker_index=worker_index,
            vector_index=0,
            remote=worker_index > 0,
            num_workers=num_workers,
        )
        self.envs: list[Any] = []
        if env_creator is not None:
            for index in range(int(config["num_envs_per_worker"])):
                context = self.env_context.copy_with_overrides(vector_index=index)
                env = env_creator(context)
                _check_env(env, config.get("env"))
                self.envs.append(env)
                self.callbacks.on_environment_created(
                    worker=self, sub_environment=env, env_context=context, env_index=index
                )
        obs_space, action_space = self._spaces(spaces)
        self.observation_space = obs_space
        self.action_space = action_space
        self.preprocessor: Preprocessor = get_preprocessor(obs_space, dict(config["model"]))
        self.filters: dict[str, ObservationFilter] = {
            DEFAULT_POLICY_ID: get_filter(config["observation_filter"], self.preprocessor.shape)
        }
        self.writer: BatchWriter | None = None
        if output_dir is not None:
            self.writer = BatchWriter(
                output_dir,
                worker_index,
                compress=list(config["output_compress_columns"]),
                max_file_size=int(config["output_max_file_size"]),
            )
        if device is None:
            device = _worker_device(config, worker_index)
        policy = policy_class(
            self.preprocessor.observation_space,
            action_space,
            config,
            torch.device(device),
            worker_index=worker_index,
        )
        self.policy_map: dict[str, TorchPolicy] = {DEFAULT_POLICY_ID: policy}
        self.runner: EnvRunner | None = None
        #: With ``fake_sampler``: the first batch, returned by every later sample() call.
        self._fake_batch: SampleBatch | None = None
        if self.envs:
            runner_class = EvaluationRunner if config["in_evaluation"] else EnvRunner
            self.runner = runner_class(
                self,
                self.envs,
                policy,
                self.preprocessor,
                self.filters[DEFAULT_POLICY_ID],
                config,
                self.callbacks,
            )

    def _spaces(
        self, given: tuple[gym.Space[Any], gym.Space[Any]] | None
    ) -> tuple[gym.Space[Any], gym.Space[Any]]:
        obs_space = self.config.get("observation_space")
        action_space = self.config.get("action_space")
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

    def sample(self) -> SampleBatch:
        if self.runner is None:
            raise ValueError(
                f"worker {self.worker_index} has no env to sample from (the local worker gets "
                "one when num_workers=0 or create_env_on_driver=True)"
            )
        if self._fake_batch is not None:
            return self._fake_batch
        batch = self.runner.sample()
        if self.writer is not None:
            self.writer.write(batch)
        if self.config["fake_sampler"]:
            self._fake_batch = batch
        return batch

    def sample_with_count(self) -> tuple[SampleBatch, int]:
        batch = self.sample()
        return batch, len(batch)

    def evaluate(
        self, *, episodes: int = 0, timesteps: int = 0, reset: bool = True
    ) -> tuple[list[EpisodeMetrics], int]:
        """Run exactly ``episodes`` episodes or ``timesteps`` steps (evaluation workers only);
        returns the finished episodes and the number of steps."""
        if not isinstance(self.runner, EvaluationRunner):
            raise ValueError(
                f"worker {self.worker_index} is not an evaluation worker with an env "
                "(evaluate() runs on the evaluation WorkerSet)"
            )
        return self.runner.run(episodes=episodes, timesteps=timesteps, reset=reset)

    def get_metrics(self) -> list[EpisodeMetrics]:
        return self.runner.pop_metrics() if self.runner else []

    def get_perf_stats(self) -> dict[str, float]:
        return self.runner.pop_perf() if self.runner else {}

    # ------------------------------------------------------------------ policies

    def get_policy(self, policy_id: str = DEFAULT_POLICY_ID) -> TorchPolicy:
        try:
            return self.policy_map[policy_id]
        except KeyError:
            raise KeyError(
                f"no policy {policy_id!r}; policies: {', '.join(self.policy_map)}"
            ) from None

    def foreach_policy(self, func: Callable[..., T], **kwargs: Any) -> list[T]:
        return [func(policy, pid, **kwargs) for pid, policy in self.policy_map.items()]

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
            policy = self.get_policy(pid)
            result: dict[str, Any] = {}
            self.callbacks.on_learn_on_batch(policy=policy, train_batch=policy_batch, result=result)
            stats = policy.learn_on_batch(policy_batch)
            stats.update(result)
            info[pid] = stats
        return info

    def get_weights(self, policies: list[str] | None = None) -> dict[str, dict[str, Any]]:
        return {
            pid: policy.get_weights()
            for pid, policy in self.policy_map.items()
            if policies is None or pid in policies
        }

    def set_weights(
        self, weights: Mapping[str, Mapping[str, Any]], global_vars: Mapping[str, Any] | None = None
    ) -> None:
        for pid, policy_weights in weights.items():
            self.get_policy(pid).set_weights(policy_weights)
        if global_vars:
            self.set_global_vars(global_vars)

    def set_global_vars(self, global_vars: Mapping[str, Any]) -> None:
        for policy in self.policy_map.values():
            policy.on_global_var_update(global_vars)

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
            self.filters[pid].set_state(dict(state))

    def merge_filter_buffers(self, buffers: Sequence[Mapping[str, Mapping[str, Any]]]) -> None:
        for buffer in buffers:
            for pid, part in buffer.items():
                self.filters[pid].apply_buffer(dict(part))

    # ------------------------------------------------------------------ lifecycle

    def get_spaces(self) -> tuple[gym.Space[Any], gym.Space[Any]]:
        return self.observation_space, self.action_space

    def ping(self) -> str:
        return "ok"

    def stop(self) -> None:
        for env in self.envs:
            close = getattr(env, "close", None)
            if close is not None:
                close()


def _worker_device(config: Any, worker_index: int) -> str:
    """A remote worker with a GPU share infers on CUDA when torch sees a GPU; otherwise on CPU
    (the share may be meant for the env itself, e.g. a simulator)."""
    if float(config["num_gpus_per_worker"]) <= 0:
        return "cpu"
    if torch.cuda.is_available():
        return "cuda"
    logger.warning(
        "rollout worker %d was given num_gpus_per_worker=%s but torch sees no CUDA device; "
        "its policy runs on CPU",
        worker_index,
        config["num_gpus_per_worker"],
    )
    return "cpu"


def _check_env(env: Any, name: Any) -> None:
    if not (hasattr(env, "reset") and hasattr(env, "step") and hasattr(env, "action_space")):
        raise ValueError(
            f"the env creator for {name!r} returned {type(env).__name__}, which is not a "
            "gymnasium env (needs reset(), step(), observation_space and action_space)"
        )
