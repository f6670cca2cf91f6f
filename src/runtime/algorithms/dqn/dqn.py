"""``DQN``: deep Q-learning on the off-policy training step (sample, store, replay, learn,
update the target network, sync)."""

from __future__ import annotations

from typing import Any, ClassVar

import gymnasium as gym

from rlconf.algorithm_config import AlgorithmConfig
from rlconf.algorithms.dqn import DQNConfig
from runtime.algorithms.dqn.learner import DQNLearner
from runtime.algorithms.dqn.module import QModule, require_discrete_action_space
from runtime.core.learner import Learner
from runtime.core.module import RLModule
from runtime.core.policy import Postprocessor
from runtime.core.postprocessing import add_n_step_returns
from runtime.env.env_context import EnvContext
from runtime.env.env_registry import env_creator_for
from runtime.training.off_policy import OffPolicyAlgorithm


class DQN(OffPolicyAlgorithm):
    config_class: ClassVar[type[AlgorithmConfig]] = DQNConfig
    learner_class: ClassVar[type[Learner]] = DQNLearner
    module_class: ClassVar[type[RLModule]] = QModule
    postprocessing: ClassVar[tuple[Postprocessor, ...]] = (add_n_step_returns,)
    explorations: ClassVar[tuple[str, ...]] = (
        "EpsilonGreedy",
        "PerWorkerEpsilonGreedy",
        "SoftQ",
        "StochasticSampling",
        "Random",
    )

    def _build(self) -> None:
        # QModule refuses a non-Discrete action space, but with remote workers it is first built
        # inside their Ray actors, whose ConfigError then reaches the driver as an
        # ActorDiedError. Check the action space here first, so the user gets the ConfigError
        # (at the cost of one env made and closed in the driver, unless action_space is set).
        if int(self.config["num_workers"]) > 0:
            action_space = _action_space(self.config)
            if action_space is not None:
                require_discrete_action_space(action_space)
        super()._build()


def _action_space(config: AlgorithmConfig) -> gym.Space[Any] | None:
    """The config's ``action_space``, or that of one env made as worker 0 would make it (and
    closed again); None without an env."""
    given: gym.Space[Any] | None = config.get("action_space")
    if given is not None or config["env"] is None:
        return given
    context = EnvContext(
        dict(config["env_config"]), worker_index=0, num_workers=int(config["num_workers"])
    )
    env = env_creator_for(config["env"])(context)
    try:
        space: gym.Space[Any] = env.action_space
        return space
    finally:
        env.close()
