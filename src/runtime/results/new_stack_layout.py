"""RLlib's new API stack result layout, added to each result beside the 2.x keys (which stay as
they are): ``env_runners/`` (the episodes and sampling counters), ``learners/<module id>/`` and
``learners/__all_modules__/`` (the learner statistics and training counters),
``evaluation/env_runners/`` and the ``*_lifetime`` counters at the top level, under the names of
``rlconf.metrics``.

A policy is RLlib's module: a module id is a policy id (``default_policy``); a single-agent env's
agent is ``default_agent``. Where this runtime counts less finely than RLlib, the layout says so
rather than guess: the agent step counts are totals over all agents (RLlib keys them by agent
id; the per-module counts are keyed by module id as in RLlib), and an evaluation reports its
episodes and env steps, without lifetime counts. Offline algorithms sample no episodes: their
episode metrics are NaN and their agent and module returns empty, as the 2.x keys are.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from rlconf.config_checks import DEFAULT_POLICY_ID
from rlconf.metrics import (
    ALL_MODULES,
    ENV_RUNNER_RESULTS,
    EPISODE_AGENT_RETURN_MEAN,
    EPISODE_LEN_MAX,
    EPISODE_LEN_MEAN,
    EPISODE_LEN_MIN,
    EPISODE_MODULE_RETURN_MEAN,
    EPISODE_RETURN_MAX,
    EPISODE_RETURN_MEAN,
    EPISODE_RETURN_MIN,
    LEARNER_RESULTS,
    LEARNER_STATS_KEY,
    NUM_AGENT_STEPS_SAMPLED,
    NUM_AGENT_STEPS_SAMPLED_LIFETIME,
    NUM_ENV_STEPS_SAMPLED,
    NUM_ENV_STEPS_SAMPLED_LIFETIME,
    NUM_ENV_STEPS_TRAINED,
    NUM_ENV_STEPS_TRAINED_LIFETIME,
    NUM_EPISODES,
    NUM_EPISODES_LIFETIME,
    NUM_GRAD_UPDATES_LIFETIME,
    NUM_MODULE_STEPS_SAMPLED,
    NUM_MODULE_STEPS_SAMPLED_LIFETIME,
    NUM_MODULE_STEPS_TRAINED,
    NUM_MODULE_STEPS_TRAINED_LIFETIME,
)
from runtime.env.episode import EpisodeMetrics
from runtime.training.counters import Counters

#: RLlib's id of the one agent of a single-agent env.
DEFAULT_AGENT_ID = "default_agent"

#: A learner statistic's 2.x name -> RLlib's new-stack name for it; the others keep theirs.
LEARNER_STAT_NAMES: dict[str, str] = {
    "cur_lr": "default_optimizer_learning_rate",
    "kl": "mean_kl_loss",
    "kl_coeff": "curr_kl_coeff",
    "cur_kl_coeff": "curr_kl_coeff",
    "entropy_coeff": "curr_entropy_coeff",
    "grad_gnorm": "gradients_default_optimizer_global_norm",
    "mean_q": "qf_mean",
    "min_q": "qf_min",
    "max_q": "qf_max",
    "mean_td_error": "td_error_mean",
    "actor_loss": "policy_loss",
    "critic_loss": "qf_loss",
}
#: Statistics of learners with an optimizer each for actor, critic (and entropy): their
#: ``cur_lr`` is the actor's, not a default optimizer's, so it keeps its name.
_ACTOR_CRITIC_STATS = ("actor_loss", "critic_loss")
_NUM_GRAD_UPDATES = "num_grad_updates"


def episode_results(episodes: Sequence[EpisodeMetrics]) -> dict[str, Any]:
    """The episode metrics of ``env_runners`` over ``episodes`` (the smoothing window of
    finished, non-faulty episodes): NaN and empty mappings without episodes."""
    returns = [e.total_reward for e in episodes]
    lengths = [e.length for e in episodes]
    agents: dict[str, list[float]] = defaultdict(list)
    modules: dict[str, list[float]] = defaultdict(list)
    for episode in episodes:
        if not episode.agent_rewards:
            agents[DEFAULT_AGENT_ID].append(episode.total_reward)
            modules[DEFAULT_POLICY_ID].append(episode.total_reward)
            continue
        per_agent: dict[str, float] = defaultdict(float)
        per_module: dict[str, float] = defaultdict(float)
        for (agent_id, policy_id), reward in episode.agent_rewards.items():
            per_agent[str(agent_id)] += reward
            per_module[str(policy_id)] += reward
        for agent_id, total in per_agent.items():
            agents[agent_id].append(total)
        for module_id, total in per_module.items():
            modules[module_id].append(total)
    return {
        EPISODE_RETURN_MEAN: _stat(np.mean, returns),
        EPISODE_RETURN_MIN: _stat(np.min, returns),
        EPISODE_RETURN_MAX: _stat(np.max, returns),
        EPISODE_LEN_MEAN: _stat(np.mean, lengths),
        EPISODE_LEN_MIN: _stat(np.min, lengths),
        EPISODE_LEN_MAX: _stat(np.max, lengths),
        EPISODE_AGENT_RETURN_MEAN: {a: float(np.mean(r)) for a, r in agents.items()},
        EPISODE_MODULE_RETURN_MEAN: {m: float(np.mean(r)) for m, r in modules.items()},
    }


def _stat(reduce: Any, values: Sequence[float]) -> float:
    return float(reduce(values)) if values else float("nan")


def add_training_layout(
    result: dict[str, Any], window: Sequence[EpisodeMetrics], counters: Counters
) -> None:
    """Add ``env_runners``, ``learners`` and the top-level lifetime counters to the training
    ``result`` (its 2.x keys compiled already: ``episodes_this_iter``, ``episodes_total``,
    ``info/learner``), from the smoothing ``window`` and the algorithm's ``counters``."""
    episodes_total = int(result.get("episodes_total", 0))
    env_runners = episode_results(window)
    env_runners.update(
        {
            NUM_EPISODES: int(result.get("episodes_this_iter", 0)),
            NUM_EPISODES_LIFETIME: episodes_total,
            NUM_ENV_STEPS_SAMPLED: counters.since_result(NUM_ENV_STEPS_SAMPLED),
            NUM_ENV_STEPS_SAMPLED_LIFETIME: counters[NUM_ENV_STEPS_SAMPLED],
            NUM_AGENT_STEPS_SAMPLED: counters.since_result(NUM_AGENT_STEPS_SAMPLED),
            NUM_AGENT_STEPS_SAMPLED_LIFETIME: counters[NUM_AGENT_STEPS_SAMPLED],
            NUM_MODULE_STEPS_SAMPLED: counters.module_since_result(NUM_MODULE_STEPS_SAMPLED),
            NUM_MODULE_STEPS_SAMPLED_LIFETIME: counters.per_module(NUM_MODULE_STEPS_SAMPLED),
        }
    )
    learners = learner_results(result.get("info", {}).get("learner", {}), counters)
    # A custom training step's own keys of these blocks win over the compiled ones.
    for key, block in ((ENV_RUNNER_RESULTS, env_runners), (LEARNER_RESULTS, learners)):
        own = result.get(key)
        result[key] = {**block, **own} if isinstance(own, Mapping) else block
    result.setdefault(NUM_ENV_STEPS_SAMPLED_LIFETIME, counters[NUM_ENV_STEPS_SAMPLED])
    result.setdefault(NUM_AGENT_STEPS_SAMPLED_LIFETIME, counters[NUM_AGENT_STEPS_SAMPLED])
    result.setdefault(NUM_ENV_STEPS_TRAINED_LIFETIME, counters[NUM_ENV_STEPS_TRAINED])
    result.setdefault(NUM_EPISODES_LIFETIME, episodes_total)


def learner_results(learner_info: Mapping[str, Any], counters: Counters) -> dict[str, Any]:
    """``learners``: per trained policy its statistics (``info/learner/<policy id>``, renamed
    as ``LEARNER_STAT_NAMES`` says) and step counts, and ``__all_modules__``'s counts."""
    trained = counters.module_since_result(NUM_MODULE_STEPS_TRAINED)
    trained_lifetime = counters.per_module(NUM_MODULE_STEPS_TRAINED)
    learners: dict[str, Any] = {}
    for module_id in sorted({*learner_info, *trained_lifetime}):
        block = module_stats(learner_info.get(module_id, {}))
        block[NUM_MODULE_STEPS_TRAINED] = trained.get(module_id, 0)
        block[NUM_MODULE_STEPS_TRAINED_LIFETIME] = trained_lifetime.get(module_id, 0)
        learners[module_id] = block
    learners[ALL_MODULES] = {
        NUM_ENV_STEPS_TRAINED: counters.since_result(NUM_ENV_STEPS_TRAINED),
        NUM_ENV_STEPS_TRAINED_LIFETIME: counters[NUM_ENV_STEPS_TRAINED],
        NUM_MODULE_STEPS_TRAINED: sum(trained.values()),
        NUM_MODULE_STEPS_TRAINED_LIFETIME: sum(trained_lifetime.values()),
    }
    return learners


def module_stats(policy_info: Mapping[str, Any]) -> dict[str, Any]:
    """One policy's learner info (``{"learner_stats": ..., "num_grad_updates": n, ...}``) as
    its ``learners/<module id>`` block: the statistics under their new-stack names (one whose
    new name the learner reports itself keeps its own), the other entries as they are."""
    stats: dict[str, Any] = {str(k): v for k, v in policy_info.get(LEARNER_STATS_KEY, {}).items()}
    renames = dict(LEARNER_STAT_NAMES)
    if any(name in stats for name in _ACTOR_CRITIC_STATS):
        del renames["cur_lr"]
    block: dict[str, Any] = {}
    for name, value in stats.items():
        new = renames.get(name, name)
        block[name if new != name and new in stats else new] = value
    for name, value in policy_info.items():
        if name == _NUM_GRAD_UPDATES:
            block[NUM_GRAD_UPDATES_LIFETIME] = value
        elif name != LEARNER_STATS_KEY:
            block[name] = value
    return block


def evaluation_env_runners(
    metrics: Mapping[str, Any], episodes: Sequence[EpisodeMetrics] | None
) -> dict[str, Any]:
    """``evaluation/env_runners`` of an evaluation's 2.x ``metrics``: from its ``episodes``
    where known, else (a custom evaluation function's metrics) from the 2.x episode keys it
    returned; ``{}`` where it returned none."""
    if episodes is not None:
        block = episode_results(episodes)
    else:
        block = {
            new: metrics[old] for new, old in _EPISODE_TWINS.items() if _is_number(metrics.get(old))
        }
    if "episodes_this_iter" in metrics:
        block[NUM_EPISODES] = metrics["episodes_this_iter"]
    if "timesteps_this_iter" in metrics:
        block[NUM_ENV_STEPS_SAMPLED] = metrics["timesteps_this_iter"]
    return block


#: The ``env_runners`` episode keys and their 2.x twins.
_EPISODE_TWINS = {
    EPISODE_RETURN_MEAN: "episode_reward_mean",
    EPISODE_RETURN_MIN: "episode_reward_min",
    EPISODE_RETURN_MAX: "episode_reward_max",
    EPISODE_LEN_MEAN: "episode_len_mean",
}


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
