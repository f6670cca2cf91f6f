"""The trainer runtime of rlconf (torch, gymnasium, ray): algorithms, workers, policies."""

from runtime.algorithm import Algorithm
from runtime.algorithms.a2c import A2C
from runtime.algorithms.pg import PG
from runtime.algorithms.ppo import PPO
from runtime.callbacks import DefaultCallbacks, make_multi_callbacks
from runtime.cluster.tune_support import install as _install_tune_support
from runtime.core.model_catalog import ModelCatalog
from runtime.core.models import TorchModel
from runtime.core.policy import TorchPolicy
from runtime.core.sample_batch import SampleBatch
from runtime.env.env_context import EnvContext
from runtime.env.env_registry import register_env
from runtime.env.episode import Episode
from runtime.env.rollout_worker import RolloutWorker
from runtime.env.task_settable_env import TaskSettableEnv
from runtime.env.worker_set import WorkerSet

_install_tune_support()

__all__ = [
    "A2C",
    "PG",
    "PPO",
    "Algorithm",
    "DefaultCallbacks",
    "EnvContext",
    "Episode",
    "ModelCatalog",
    "RolloutWorker",
    "SampleBatch",
    "TaskSettableEnv",
    "TorchModel",
    "TorchPolicy",
    "WorkerSet",
    "make_multi_callbacks",
    "register_env",
]
