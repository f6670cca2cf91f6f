"""The trainer runtime of rlconf (torch, gymnasium, ray): algorithms, workers, policies.

Built up by the runtime issue; what exists so far is exported here.
"""

from runtime.env_context import EnvContext
from runtime.env_registry import register_env
from runtime.sample_batch import SampleBatch
from runtime.task_settable_env import TaskSettableEnv

__all__ = ["EnvContext", "SampleBatch", "TaskSettableEnv", "register_env"]
