"""rlconf: typed, validated, builder-style configs for reinforcement learning.

``import rlconf`` loads pydantic and typing-extensions only; the runtime (torch, ray) is
imported when an algorithm is built.
"""

from rlconf import sweep
from rlconf.algorithm_config import AlgorithmConfig
from rlconf.algorithms.a2c import A2CConfig
from rlconf.algorithms.appo import APPOConfig
from rlconf.algorithms.bc import BCConfig
from rlconf.algorithms.ddpg import DDPGConfig
from rlconf.algorithms.dqn import DQNConfig
from rlconf.algorithms.impala import IMPALAConfig
from rlconf.algorithms.marwil import MARWILConfig
from rlconf.algorithms.pg import PGConfig
from rlconf.algorithms.ppo import PPOConfig
from rlconf.algorithms.sac import SACConfig
from rlconf.algorithms.td3 import TD3Config
from rlconf.columns import Columns
from rlconf.default_model_config import DefaultModelConfig
from rlconf.errors import ConfigError, FieldIssue
from rlconf.fluent import NOT_SET
from rlconf.policy_spec import PolicySpec
from rlconf.registry import (
    algorithm_class_path,
    get_algorithm_class,
    get_config_class,
    list_algorithms,
    register_algorithm,
)
from rlconf.rl_module_spec import MultiRLModuleSpec, RLModuleSpec

__all__ = [
    "NOT_SET",
    "A2CConfig",
    "APPOConfig",
    "AlgorithmConfig",
    "BCConfig",
    "Columns",
    "ConfigError",
    "DDPGConfig",
    "DQNConfig",
    "DefaultModelConfig",
    "FieldIssue",
    "IMPALAConfig",
    "MARWILConfig",
    "MultiRLModuleSpec",
    "PGConfig",
    "PPOConfig",
    "SACConfig",
    "TD3Config",
    "PolicySpec",
    "RLModuleSpec",
    "algorithm_class_path",
    "get_algorithm_class",
    "get_config_class",
    "list_algorithms",
    "register_algorithm",
    "sweep",
]

__version__ = "0.1.0"
