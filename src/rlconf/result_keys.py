"""What a training result holds, known without running anything: the keys of the dict
``Algorithm.train()`` returns, flattened with ``/`` (``evaluation/episode_reward_mean``).

Most keys are fixed. Some sub-trees have keys that depend on the run: a pattern stands for
them, with ``<name>`` for one path part (``custom_metrics/<metric>_mean``) and a trailing
``/...`` for any deeper path (``info/learner/<policy id>/...``). The sampler metrics (episode
metrics and ``sampler_perf``) are also under ``sampler_results/``, where RLlib 2.x has them
(``sampler_results/episode_reward_mean``). RLlib's new API stack layout is there too
(``NEW_STACK_KEYS``): ``env_runners/episode_return_mean``, ``learners/<module id>/...``,
``evaluation/env_runners/...``, the ``*_lifetime`` counters (``rlconf.metrics`` names them).
``rlconf train`` checks stop criteria against this description before anything heavy is
imported.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from rlconf.config_checks import DEFAULT_POLICY_ID

Kind = Literal["number", "list", "text", "flag", "config"]

#: How each kind reads in a message ("a list", not a number).
KIND_NAMES: dict[Kind, str] = {
    "number": "a number",
    "list": "a list of per-episode values",
    "text": "text",
    "flag": "a true/false flag",
    "config": "the run's config",
}


@dataclass(frozen=True)
class ResultKey:
    """One key of the result, or a pattern for a family of keys."""

    pattern: str
    kind: Kind
    doc: str
    #: Concrete keys of a pattern that most runs have (offered as did-you-mean candidates).
    examples: tuple[str, ...] = ()
    #: The key appears only once an episode has finished (its metrics come from episodes).
    needs_episodes: bool = False
    _regex: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_regex", _compile(self.pattern))

    @property
    def dynamic(self) -> bool:
        """Whether the pattern stands for keys that depend on the run."""
        return "<" in self.pattern or self.pattern.endswith("/...")

    def matches(self, key: str) -> bool:
        return self._regex.fullmatch(key) is not None

    def under(self, prefix: str) -> ResultKey:
        return ResultKey(
            prefix + self.pattern,
            self.kind,
            self.doc,
            tuple(prefix + e for e in self.examples),
            self.needs_episodes,
        )


def _compile(pattern: str) -> re.Pattern[str]:
    deeper = pattern.endswith("/...")
    head = pattern[: -len("/...")] if deeper else pattern
    parts = re.split(r"(<[^>]+>)", head)
    regex = "".join("[^/]+" if p.startswith("<") else re.escape(p) for p in parts)
    return re.compile(regex + ("/.+" if deeper else ""))


def _numbers(doc_by_key: dict[str, str]) -> tuple[ResultKey, ...]:
    return tuple(ResultKey(key, "number", doc) for key, doc in doc_by_key.items())


#: The episode metrics, at the top level (training) and under ``evaluation/``.
EPISODE_KEYS: tuple[ResultKey, ...] = (
    *_numbers(
        {
            "episode_reward_mean": "mean return of the recent episodes",
            "episode_reward_min": "lowest return of the recent episodes",
            "episode_reward_max": "highest return of the recent episodes",
            "episode_len_mean": "mean length of the recent episodes",
            "episodes_this_iter": "episodes finished in this iteration",
            "num_faulty_episodes": "episodes cut off in this iteration by a sub-env that "
            "raised (restart_failed_sub_environments); not in the other episode metrics",
        }
    ),
    *(
        ResultKey(
            f"custom_metrics/<metric>_{stat}",
            "number",
            f"{stat} of a metric the callbacks put in episode.custom_metrics",
            needs_episodes=True,
        )
        for stat in ("mean", "min", "max")
    ),
    *(
        ResultKey(
            f"policy_reward_{stat}/<policy id>",
            "number",
            f"{stat} return of one policy's agents",
            needs_episodes=True,
        )
        for stat in ("mean", "min", "max")
    ),
    ResultKey(
        "hist_stats/<name>",
        "list",
        "per-episode values: episode_reward, episode_lengths and each episode.hist_data name",
        examples=("hist_stats/episode_reward", "hist_stats/episode_lengths"),
        needs_episodes=True,
    ),
)

#: Keys of an evaluation's metrics besides the episode metrics.
EVALUATION_ONLY_KEYS: tuple[ResultKey, ...] = _numbers(
    {
        "timesteps_this_iter": "env steps the evaluation ran",
        "num_healthy_workers": "evaluation workers alive",
        "num_recreated_workers": "evaluation workers recreated after a failure",
        "weights_version": "the training iteration whose weights were evaluated",
    }
)

_LEARNER_STATS = ("total_loss", "policy_loss", "vf_loss", "entropy", "kl", "cur_lr", "cur_epsilon")

#: Keys of a training result outside the episode metrics and ``evaluation``.
TRAINING_KEYS: tuple[ResultKey, ...] = (
    *_numbers(
        {
            "training_iteration": "iterations so far",
            "timesteps_total": "env steps sampled so far",
            "timesteps_this_iter": "env steps sampled in this iteration",
            "episodes_total": "episodes finished so far",
            "agent_timesteps_total": "agent steps sampled so far",
            "num_env_steps_sampled": "env steps sampled so far",
            "num_env_steps_trained": "env steps trained on so far",
            "num_agent_steps_sampled": "agent steps sampled so far",
            "num_agent_steps_trained": "agent steps trained on so far",
            "num_healthy_workers": "rollout workers alive",
            "num_recreated_workers": "rollout workers recreated after a failure",
            "time_this_iter_s": "seconds this iteration took",
            "time_total_s": "seconds of training so far",
            "time_since_restore": "seconds of training since the last restore",
            "timesteps_since_restore": "env steps sampled since the last restore",
            "iterations_since_restore": "iterations since the last restore",
            "timestamp": "UNIX time the result was made",
            "pid": "the training process's id",
        }
    ),
    *(
        ResultKey(key, "text", doc)
        for key, doc in {
            "date": "local time the result was made",
            "hostname": "the training machine",
            "node_ip": "the training machine's address",
            "trial_id": "the Tune trial ('default' outside Tune)",
            "experiment_id": "the Tune experiment",
            "experiment_tag": "the Tune trial's tag",
            "checkpoint_dir_name": "the checkpoint Tune saved with this result",
        }.items()
    ),
    ResultKey("done", "flag", "whether the trial is finished"),
    ResultKey("should_checkpoint", "flag", "whether Tune should save a checkpoint now"),
    ResultKey("config", "config", "the config the algorithm runs with"),
    ResultKey("config/...", "config", "the config the algorithm runs with"),
    ResultKey(
        "info/learner/<policy id>/...",
        "number",
        "a policy's learner statistics (learner_stats/<stat>, num_grad_updates)",
        examples=(
            *(f"info/learner/{DEFAULT_POLICY_ID}/learner_stats/{s}" for s in _LEARNER_STATS),
            f"info/learner/{DEFAULT_POLICY_ID}/num_grad_updates",
        ),
    ),
    ResultKey(
        "info/<counter>",
        "number",
        "the algorithm's step counters",
        examples=("info/num_env_steps_sampled", "info/num_env_steps_trained"),
    ),
    ResultKey(
        "sampler_perf/<timer>",
        "number",
        "mean milliseconds per sampler phase",
        examples=("sampler_perf/mean_env_wait_ms", "sampler_perf/mean_inference_ms"),
    ),
    ResultKey(
        "perf/<resource>",
        "number",
        "CPU and memory use (with log_sys_usage)",
        examples=("perf/cpu_util_percent", "perf/ram_util_percent"),
    ),
)

#: The episode keys of ``env_runners/``, in training and evaluation results alike.
ENV_RUNNER_EPISODE_KEYS: tuple[ResultKey, ...] = (
    *_numbers(
        {
            "episode_return_mean": "mean return of the recent episodes (episode_reward_mean)",
            "episode_return_min": "lowest return of the recent episodes",
            "episode_return_max": "highest return of the recent episodes",
            "episode_len_mean": "mean length of the recent episodes",
            "episode_len_min": "shortest of the recent episodes",
            "episode_len_max": "longest of the recent episodes",
            "num_episodes": "episodes finished in this iteration (episodes_this_iter)",
            "num_env_steps_sampled": "env steps sampled in this iteration",
        }
    ),
    ResultKey(
        "agent_episode_returns_mean/<agent id>",
        "number",
        "mean return of one agent ('default_agent' in a single-agent env)",
        examples=("agent_episode_returns_mean/default_agent",),
        needs_episodes=True,
    ),
    ResultKey(
        "module_episode_returns_mean/<module id>",
        "number",
        "mean return per episode of the agents one module (policy) acted for",
        examples=(f"module_episode_returns_mean/{DEFAULT_POLICY_ID}",),
        needs_episodes=True,
    ),
)

#: The keys of a training result's ``env_runners/`` besides the episode keys.
ENV_RUNNER_COUNTER_KEYS: tuple[ResultKey, ...] = (
    *_numbers(
        {
            "num_episodes_lifetime": "episodes finished so far",
            "num_env_steps_sampled_lifetime": "env steps sampled so far",
            "num_agent_steps_sampled": "agent steps sampled in this iteration (all agents)",
            "num_agent_steps_sampled_lifetime": "agent steps sampled so far (all agents)",
        }
    ),
    *(
        ResultKey(
            f"num_module_steps_sampled{span}/<module id>",
            "number",
            f"one module's (policy's) rows sampled {doc}",
            examples=(f"num_module_steps_sampled{span}/{DEFAULT_POLICY_ID}",),
        )
        for span, doc in (("", "in this iteration"), ("_lifetime", "so far"))
    ),
)

_NEW_LEARNER_STATS = (
    "total_loss",
    "policy_loss",
    "vf_loss",
    "entropy",
    "mean_kl_loss",
    "default_optimizer_learning_rate",
    "num_module_steps_trained",
    "num_module_steps_trained_lifetime",
    "num_grad_updates_lifetime",
)

#: The keys of RLlib's new API stack at the top level and under ``env_runners/`` and
#: ``learners/`` (``evaluation/env_runners/`` has the episode keys).
NEW_STACK_KEYS: tuple[ResultKey, ...] = (
    *_numbers(
        {
            "num_env_steps_sampled_lifetime": "env steps sampled so far",
            "num_agent_steps_sampled_lifetime": "agent steps sampled so far (all agents)",
            "num_env_steps_trained_lifetime": "env steps trained on so far",
            "num_episodes_lifetime": "episodes finished so far",
            "learners/__all_modules__/num_env_steps_trained": "env steps trained on in this "
            "iteration",
            "learners/__all_modules__/num_env_steps_trained_lifetime": "env steps trained on "
            "so far",
            "learners/__all_modules__/num_module_steps_trained": "rows trained on in this "
            "iteration, all modules",
            "learners/__all_modules__/num_module_steps_trained_lifetime": "rows trained on so "
            "far, all modules",
        }
    ),
    ResultKey(
        "learners/<module id>/...",
        "number",
        "a module's (policy's) learner statistics under RLlib's new-stack names "
        "(mean_kl_loss, curr_kl_coeff, default_optimizer_learning_rate, qf_mean, ...) and its "
        "rows trained (num_module_steps_trained, ..._lifetime)",
        examples=tuple(f"learners/{DEFAULT_POLICY_ID}/{s}" for s in _NEW_LEARNER_STATS),
    ),
    ResultKey(
        "timers/<timer>",
        "number",
        "seconds: training_iteration, the training steps of this iteration",
        examples=("timers/training_iteration",),
    ),
    *(k.under("env_runners/") for k in (*ENV_RUNNER_EPISODE_KEYS, *ENV_RUNNER_COUNTER_KEYS)),
)

EVALUATION_PREFIX = "evaluation/"
#: Where RLlib 2.x nests the sampler metrics; a result has them there too (same values).
SAMPLER_RESULTS_PREFIX = "sampler_results/"

#: The keys under ``sampler_results/``: the episode metrics and the sampler's perf stats.
SAMPLER_RESULT_KEYS: tuple[ResultKey, ...] = (
    *EPISODE_KEYS,
    *(k for k in TRAINING_KEYS if k.pattern == "sampler_perf/<timer>"),
)

#: The whole description: every key a training result can hold.
RESULT_KEYS: tuple[ResultKey, ...] = (
    *TRAINING_KEYS,
    *EPISODE_KEYS,
    *NEW_STACK_KEYS,
    *(k.under(EVALUATION_PREFIX) for k in (*EPISODE_KEYS, *EVALUATION_ONLY_KEYS)),
    *(k.under(EVALUATION_PREFIX + "env_runners/") for k in ENV_RUNNER_EPISODE_KEYS),
    *(k.under(SAMPLER_RESULTS_PREFIX) for k in SAMPLER_RESULT_KEYS),
)


#: A key of RLlib's new API stack -> the 2.x key that holds the same value in every result.
TWINS: dict[str, str] = {
    **{
        f"{prefix}env_runners/{new}": f"{prefix}{old}"
        for prefix in ("", EVALUATION_PREFIX)
        for new, old in {
            "episode_return_mean": "episode_reward_mean",
            "episode_return_min": "episode_reward_min",
            "episode_return_max": "episode_reward_max",
            "episode_len_mean": "episode_len_mean",
            "num_episodes": "episodes_this_iter",
        }.items()
    },
    "env_runners/num_episodes_lifetime": "episodes_total",
    "num_episodes_lifetime": "episodes_total",
    "env_runners/num_env_steps_sampled_lifetime": "num_env_steps_sampled",
    "num_env_steps_sampled_lifetime": "num_env_steps_sampled",
    "env_runners/num_agent_steps_sampled_lifetime": "num_agent_steps_sampled",
    "num_agent_steps_sampled_lifetime": "num_agent_steps_sampled",
    "num_env_steps_trained_lifetime": "num_env_steps_trained",
    "learners/__all_modules__/num_env_steps_trained_lifetime": "num_env_steps_trained",
}


def twins(key: str) -> list[str]:
    """The other names of ``key``'s value: its 2.x twin, or the new-stack keys it is the
    twin of (``[]`` for a key without one)."""
    old = TWINS.get(key)
    if old is not None:
        return [old, *(new for new, o in TWINS.items() if o == old and new != key)]
    return [new for new, o in TWINS.items() if o == key]


def describe(key: str) -> ResultKey | None:
    """The entry of ``key`` (a fixed key before a pattern), or None when no result has it."""
    for entry in RESULT_KEYS:
        if not entry.dynamic and entry.pattern == key:
            return entry
    for entry in RESULT_KEYS:
        if entry.dynamic and entry.matches(key):
            return entry
    return None


def known_names() -> list[str]:
    """Concrete keys: the fixed ones and the usual members of each pattern."""
    names: list[str] = []
    for entry in RESULT_KEYS:
        names.extend(entry.examples if entry.dynamic else (entry.pattern,))
    return names
