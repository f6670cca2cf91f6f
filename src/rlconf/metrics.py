"""RLlib's metric constants (``ray.rllib.utils.metrics``, Ray 2.10 to 2.60), with RLlib's names
and values, for the result layout of its new API stack that ``Algorithm.train()`` returns beside
the 2.x keys.

Code written against RLlib reads and stops on results through these constants::

    from rlconf.metrics import ENV_RUNNER_RESULTS, EPISODE_RETURN_MEAN

    stop = {f"{ENV_RUNNER_RESULTS}/{EPISODE_RETURN_MEAN}": 150}
    result[ENV_RUNNER_RESULTS][EPISODE_RETURN_MEAN]

Where each key sits in a result:

- ``env_runners/``: the sampled episodes (``episode_return_mean``/``_min``/``_max``,
  ``episode_len_mean``/``_min``/``_max``, ``num_episodes``, ``agent_episode_returns_mean`` and
  ``module_episode_returns_mean`` keyed by agent and module id) and the sampling counters
  (``num_env_steps_sampled`` this iteration and ``..._lifetime``, the same for agent steps,
  and ``num_module_steps_sampled``/``..._lifetime`` keyed by module id).
- ``evaluation/env_runners/``: the episode metrics of the last evaluation.
- ``learners/<module id>/``: each trained policy's learner statistics (under RLlib's new-stack
  names where it has one: ``mean_kl_loss``, ``curr_kl_coeff``, ``curr_entropy_coeff``,
  ``default_optimizer_learning_rate``, ``qf_mean``, ...), ``num_module_steps_trained`` (this
  iteration), ``..._lifetime`` and ``num_grad_updates_lifetime``;
  ``learners/__all_modules__/``: the env and module steps trained, this iteration and in all.
- the top level: ``num_env_steps_sampled_lifetime``, ``num_agent_steps_sampled_lifetime``,
  ``num_env_steps_trained_lifetime``, ``num_episodes_lifetime``; ``timers/``.

Importing this module imports neither torch nor Ray.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "ALL_MODULES",
    "ENV_RUNNER_RESULTS",
    "EPISODE_AGENT_RETURN_MEAN",
    "EPISODE_LEN_MAX",
    "EPISODE_LEN_MEAN",
    "EPISODE_LEN_MIN",
    "EPISODE_MODULE_RETURN_MEAN",
    "EPISODE_RETURN_MAX",
    "EPISODE_RETURN_MEAN",
    "EPISODE_RETURN_MIN",
    "EVALUATION_RESULTS",
    "LEARNER_RESULTS",
    "LEARNER_STATS_KEY",
    "NUM_AGENT_STEPS_SAMPLED",
    "NUM_AGENT_STEPS_SAMPLED_LIFETIME",
    "NUM_AGENT_STEPS_TRAINED",
    "NUM_ENV_STEPS_SAMPLED",
    "NUM_ENV_STEPS_SAMPLED_LIFETIME",
    "NUM_ENV_STEPS_TRAINED",
    "NUM_ENV_STEPS_TRAINED_LIFETIME",
    "NUM_EPISODES",
    "NUM_EPISODES_LIFETIME",
    "NUM_GRAD_UPDATES_LIFETIME",
    "NUM_MODULE_STEPS_SAMPLED",
    "NUM_MODULE_STEPS_SAMPLED_LIFETIME",
    "NUM_MODULE_STEPS_TRAINED",
    "NUM_MODULE_STEPS_TRAINED_LIFETIME",
    "TIMERS",
    "TRAINING_ITERATION_TIMER",
]

# The blocks of a result.
ENV_RUNNER_RESULTS: Final = "env_runners"
EVALUATION_RESULTS: Final = "evaluation"
LEARNER_RESULTS: Final = "learners"
TIMERS: Final = "timers"
#: The block of ``learners`` that holds the counts over all modules.
ALL_MODULES: Final = "__all_modules__"

# Episodes (under ``env_runners`` and ``evaluation/env_runners``).
EPISODE_RETURN_MEAN: Final = "episode_return_mean"
EPISODE_RETURN_MAX: Final = "episode_return_max"
EPISODE_RETURN_MIN: Final = "episode_return_min"
EPISODE_LEN_MEAN: Final = "episode_len_mean"
EPISODE_LEN_MAX: Final = "episode_len_max"
EPISODE_LEN_MIN: Final = "episode_len_min"
#: ``{agent id: mean return}`` (``"default_agent"`` in a single-agent env).
EPISODE_AGENT_RETURN_MEAN: Final = "agent_episode_returns_mean"
#: ``{module id: mean return}``: per episode the returns of the agents the module acted for.
EPISODE_MODULE_RETURN_MEAN: Final = "module_episode_returns_mean"
NUM_EPISODES: Final = "num_episodes"
NUM_EPISODES_LIFETIME: Final = "num_episodes_lifetime"

# Sampling counters.
NUM_ENV_STEPS_SAMPLED: Final = "num_env_steps_sampled"
NUM_ENV_STEPS_SAMPLED_LIFETIME: Final = "num_env_steps_sampled_lifetime"
NUM_AGENT_STEPS_SAMPLED: Final = "num_agent_steps_sampled"
NUM_AGENT_STEPS_SAMPLED_LIFETIME: Final = "num_agent_steps_sampled_lifetime"
NUM_MODULE_STEPS_SAMPLED: Final = "num_module_steps_sampled"
NUM_MODULE_STEPS_SAMPLED_LIFETIME: Final = "num_module_steps_sampled_lifetime"

# Training counters.
NUM_ENV_STEPS_TRAINED: Final = "num_env_steps_trained"
NUM_ENV_STEPS_TRAINED_LIFETIME: Final = "num_env_steps_trained_lifetime"
NUM_AGENT_STEPS_TRAINED: Final = "num_agent_steps_trained"
NUM_MODULE_STEPS_TRAINED: Final = "num_module_steps_trained"
NUM_MODULE_STEPS_TRAINED_LIFETIME: Final = "num_module_steps_trained_lifetime"
NUM_GRAD_UPDATES_LIFETIME: Final = "num_grad_updates_lifetime"

# Timers (under ``timers``): seconds.
TRAINING_ITERATION_TIMER: Final = "training_iteration"

#: Where the 2.x stack keeps a policy's learner statistics: ``info/learner/<policy id>/``.
LEARNER_STATS_KEY: Final = "learner_stats"
