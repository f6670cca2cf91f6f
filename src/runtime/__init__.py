"""The trainer runtime of rlconf (torch, gymnasium, ray): algorithms, workers, policies.

Where things live is described in ARCHITECTURE.md: ``core/`` (modules, learners, exploration,
policies, batches), ``env/`` (workers and sampling), ``training/`` (the parts of an Algorithm),
``cluster/`` (resources, placement, Ray and Tune), ``results/``, ``offline/``, ``algorithms/``.
"""

from runtime.algorithm import Algorithm
from runtime.algorithms.a2c import A2C
from runtime.algorithms.appo import APPO
from runtime.algorithms.bc import BC
from runtime.algorithms.ddpg import DDPG, TD3
from runtime.algorithms.dqn import DQN
from runtime.algorithms.impala import IMPALA
from runtime.algorithms.marwil import MARWIL
from runtime.algorithms.pg import PG
from runtime.algorithms.ppo import PPO
from runtime.algorithms.sac import SAC
from runtime.buffers import PrioritizedReplayBuffer, ReplayBuffer
from runtime.callbacks import DefaultCallbacks, MultiCallbacks, RLlibCallback, make_multi_callbacks
from runtime.cluster.placement import ResourceError
from runtime.cluster.tune_support import install as _install_tune_support
from runtime.core.exploration import (
    EpsilonGreedy,
    Exploration,
    GaussianNoise,
    OrnsteinUhlenbeckNoise,
    ParameterNoise,
    PerWorkerEpsilonGreedy,
    PerWorkerGaussianNoise,
    PerWorkerOrnsteinUhlenbeckNoise,
    Random,
    SoftQ,
    StochasticSampling,
)
from runtime.core.learner import Learner
from runtime.core.model_catalog import ModelCatalog
from runtime.core.models import TorchModel
from runtime.core.module import ActorCriticModule, RLModule
from runtime.core.multi_agent_batch import MultiAgentBatch
from runtime.core.policy import PolicyBuilder, TorchPolicy
from runtime.core.rl_module import QNetAPI, TorchRLModule, ValueFunctionAPI
from runtime.core.sample_batch import SampleBatch
from runtime.env.env_context import EnvContext
from runtime.env.env_registry import register_env
from runtime.env.episode import Episode, MultiAgentEpisode
from runtime.env.external_env import ExternalEnv, ExternalMultiAgentEnv
from runtime.env.multi_agent_checks import MultiAgentEnvError
from runtime.env.multi_agent_env import MultiAgentEnv, make_multi_agent
from runtime.env.pettingzoo_env import ParallelPettingZooEnv, PettingZooEnv
from runtime.env.policy_client import PolicyClient
from runtime.env.policy_server_input import PolicyServerInput
from runtime.env.rollout_worker import RolloutWorker
from runtime.env.task_settable_env import TaskSettableEnv
from runtime.env.worker_set import WorkerFailure, WorkerSet
from runtime.offline import (
    InputReader,
    IOContext,
    JsonReader,
    JsonWriter,
    OutputWriter,
    SampleBatchBuilder,
)
from runtime.results.metrics_logger import MetricsLogger
from runtime.training.off_policy import OffPolicyAlgorithm
from runtime.training.on_policy import OnPolicyAlgorithm

_install_tune_support()

__all__ = [
    "A2C",
    "APPO",
    "IMPALA",
    "BC",
    "DDPG",
    "DQN",
    "MARWIL",
    "PG",
    "PPO",
    "SAC",
    "TD3",
    "ActorCriticModule",
    "Algorithm",
    "DefaultCallbacks",
    "EnvContext",
    "IOContext",
    "InputReader",
    "JsonReader",
    "JsonWriter",
    "OutputWriter",
    "SampleBatchBuilder",
    "Episode",
    "EpsilonGreedy",
    "ExternalEnv",
    "ExternalMultiAgentEnv",
    "Exploration",
    "GaussianNoise",
    "OrnsteinUhlenbeckNoise",
    "PerWorkerGaussianNoise",
    "PerWorkerOrnsteinUhlenbeckNoise",
    "Learner",
    "MetricsLogger",
    "ModelCatalog",
    "MultiAgentBatch",
    "MultiAgentEnv",
    "MultiAgentEnvError",
    "MultiAgentEpisode",
    "MultiCallbacks",
    "OffPolicyAlgorithm",
    "OnPolicyAlgorithm",
    "ParallelPettingZooEnv",
    "PerWorkerEpsilonGreedy",
    "PettingZooEnv",
    "PolicyClient",
    "PolicyServerInput",
    "PolicyBuilder",
    "PrioritizedReplayBuffer",
    "QNetAPI",
    "RLModule",
    "RLlibCallback",
    "Random",
    "ReplayBuffer",
    "ResourceError",
    "RolloutWorker",
    "SampleBatch",
    "ParameterNoise",
    "SoftQ",
    "StochasticSampling",
    "TaskSettableEnv",
    "TorchModel",
    "TorchPolicy",
    "TorchRLModule",
    "ValueFunctionAPI",
    "WorkerFailure",
    "WorkerSet",
    "make_multi_agent",
    "make_multi_callbacks",
    "register_env",
]
