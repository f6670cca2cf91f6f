"""RLlib's new API stack names (Ray 2.10 and later): which rlconf key each one sets, and why the
others are refused.

Since Ray 2.10 RLlib's configs are written against its new API stack: ``.env_runners()``,
``.learners()``, ``.rl_module()``, ``.api_stack()`` and renamed keys (``num_env_runners``,
``num_epochs``, ``minibatch_size``, ``restart_failed_env_runners``, ...). A name with a twin
among rlconf's keys is that key under another name (``NEW_STACK_NAMES``; ``rlconf.key_aliases``
makes each one an alias with every input path: keywords, dicts, files, ``overrides``). The
method whose signature lists a name is the one whose section declares it (``Section.aliases``)
or lists it (``Section.keywords``).

``env_to_module_connector`` sets ``observation_filter``: a factory of
``rlconf.connectors.MeanStdFilter()`` is ``"MeanStdFilter"`` (``NEW_STACK_CONVERTED``).

A name without a twin is refused with the reason (``NEW_STACK_REFUSED``): ConnectorV2 pipelines,
custom EnvRunner / Learner classes, aggregator actors, restart limits and health probes.
(``rl_module_spec`` is a setting of its own: ``rlconf.rl_module_spec``.)

RLlib's per-learner batch sizes are each learner's share: with ``num_learners=N`` it trains on
``train_batch_size_per_learner x N`` rows (minibatches of ``minibatch_size x N``). rlconf's
``train_batch_size`` and ``sgd_minibatch_size`` are the whole batch and minibatch, which the
learner workers split, so the two agree with at most one learner; the per-learner names are
refused beside ``num_learner_workers > 1`` (``per_learner_issues``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from rlconf.connectors import observation_filter_of
from rlconf.errors import FieldIssue, short_repr

#: New-stack name -> the rlconf key it sets (one setting, two names).
NEW_STACK_NAMES: dict[str, str] = {
    # .env_runners()
    "num_env_runners": "num_workers",
    "num_envs_per_env_runner": "num_envs_per_worker",
    "num_cpus_per_env_runner": "num_cpus_per_worker",
    "num_gpus_per_env_runner": "num_gpus_per_worker",
    "custom_resources_per_env_runner": "custom_resources_per_worker",
    "create_env_on_local_worker": "create_env_on_driver",
    "max_requests_in_flight_per_env_runner": "max_sample_requests_in_flight_per_worker",
    # .learners() (and .resources())
    "num_learners": "num_learner_workers",
    "num_cpus_per_learner": "num_cpus_per_learner_worker",
    "num_gpus_per_learner": "num_gpus_per_learner_worker",
    "num_cpus_for_main_process": "num_cpus_for_driver",
    "num_cpus_for_local_worker": "num_cpus_for_driver",
    # .training()
    "num_epochs": "num_sgd_iter",
    "minibatch_size": "sgd_minibatch_size",
    "mini_batch_size_per_learner": "sgd_minibatch_size",
    "train_batch_size_per_learner": "train_batch_size",
    # IMPALA's and APPO's circular buffer of train batches: the learner thread's ring of
    # minibatch_buffer_size batches, each learned on num_sgd_iter times.
    "circular_buffer_num_batches_N": "minibatch_buffer_size",
    "circular_buffer_iterations_per_batch_K": "num_sgd_iter",
    # .rl_module(): a dict of the model keys (DefaultModelConfig's keys among them)
    "model_config": "model",
    "model_config_dict": "model",
    # .evaluation()
    "evaluation_num_env_runners": "evaluation_num_workers",
    # .fault_tolerance()
    "restart_failed_env_runners": "recreate_failed_workers",
    "recreate_failed_env_runners": "recreate_failed_workers",
    "ignore_env_runner_failures": "ignore_worker_failures",
}

#: New-stack names whose value is turned into the value of the rlconf key they set (the key,
#: and the function that does it, raising ``ValueError`` with the reason where it can't).
NEW_STACK_CONVERTED: dict[str, tuple[str, Callable[[Any], Any]]] = {
    # A factory of rlconf.connectors.MeanStdFilter() is observation_filter="MeanStdFilter".
    "env_to_module_connector": ("observation_filter", observation_filter_of),
}

#: The per-learner names, by the key each sets.
PER_LEARNER_NAMES: dict[str, str] = {
    "train_batch_size_per_learner": "train_batch_size",
    "minibatch_size": "sgd_minibatch_size",
    "mini_batch_size_per_learner": "sgd_minibatch_size",
}

_CONNECTORS = (
    "ConnectorV2 pipelines are not available: they come with the runtime's own pipeline; "
    "rlconf's rollout workers preprocess, filter (observation_filter) and clip themselves"
)
_LEARNERS = "the learner group is the algorithm's own (learner_class is set by the runtime)"
_RESTARTS = "a failed env runner is replaced at once, each time it fails, without a limit"

#: New-stack names with no twin here -> why they are refused (and what to set instead).
NEW_STACK_REFUSED: dict[str, str] = {
    "module_to_env_connector": _CONNECTORS,
    "learner_connector": _CONNECTORS,
    "add_default_connectors_to_env_to_module_pipeline": _CONNECTORS,
    "add_default_connectors_to_module_to_env_pipeline": _CONNECTORS,
    "add_default_connectors_to_learner_pipeline": _CONNECTORS,
    "episode_lookback_horizon": f"{_CONNECTORS}; models with memory see max_seq_len steps",
    "env_runner_cls": "rlconf's rollout workers are its own EnvRunner and MultiAgentRunner",
    "create_local_env_runner": "the driver always keeps a local rollout worker (it samples "
    "when num_env_runners is 0)",
    "validate_env_runners_after_construction": "every rollout worker is checked as it starts; "
    "a worker that fails to start stops the build",
    "sample_timeout_s": "sample() calls are waited for until they return; failed workers are "
    "handled by fault_tolerance()",
    "merge_env_runner_states": "the observation filters' statistics are merged on the driver "
    "every iteration; synchronize_filters says whether they go back to the workers",
    "broadcast_env_runner_states": "the observation filters' statistics are merged on the "
    "driver every iteration; synchronize_filters says whether they go back to the workers",
    "episodes_to_numpy": "rollout workers return sample batches of numpy arrays, not episodes",
    "learner_class": _LEARNERS,
    "learner_config_dict": f"{_LEARNERS}; set its hyperparameters with training()",
    "custom_resources_per_learner": "learner workers reserve only CPUs and GPUs "
    "(num_cpus_per_learner, num_gpus_per_learner)",
    "num_aggregator_actors_per_learner": "the driver concatenates the fragments into train "
    "batches (no aggregation actors)",
    "max_requests_in_flight_per_aggregator_actor": "the driver concatenates the fragments into "
    "train batches (no aggregation actors)",
    "max_requests_in_flight_per_learner": "every learner update is waited for before the next",
    "local_gpu_idx": "the driver's learner uses cuda:0 (and up, one tower per GPU of num_gpus); "
    "choose the GPU with CUDA_VISIBLE_DEVICES",
    "never_skip_update": "every learner update is waited for before the next, so none is skipped",
    "algorithm_config_overrides_per_module": "per-policy overrides are given as "
    "PolicySpec(config=Config.overrides(...)) in multi_agent(policies=...)",
    "max_num_env_runner_restarts": _RESTARTS,
    "max_num_worker_restarts": _RESTARTS,
    "delay_between_env_runner_restarts_s": _RESTARTS,
    "num_consecutive_env_runner_failures_tolerance": "a sub-env that raises is made again with "
    "restart_failed_sub_environments, every time",
    "env_runner_health_probe_timeout_s": "there are no health probes: a call that fails marks "
    "its worker failed",
    "env_runner_restore_timeout_s": "a replacement waits placement_timeout_s for its bundle of "
    "the placement group (resources())",
    "evaluation_auto_duration_min_env_steps_per_sample": "evaluation_duration='auto' evaluates "
    "whole episodes until the training step is done",
    "evaluation_auto_duration_max_env_steps_per_sample": "evaluation_duration='auto' evaluates "
    "whole episodes until the training step is done",
    "log_gradients": "the learners report their own statistics (grad_gnorm among them)",
    "custom_stats_cls_lookup": "a MetricsLogger reduces with mean, min, max, sum or None only "
    "(metrics_logger.log_value(key, value, reduce=...) in a hook)",
}


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def per_learner_issues(
    given_as: Mapping[str, str],
    values: Mapping[Any, Any],
    current: Mapping[str, Any] | None,
    prefix: str,
) -> list[FieldIssue]:
    """A per-learner name given (``given_as``: ``{key: name given}``) where the config has or is
    given ``num_learner_workers > 1``: RLlib would multiply it by the learners, rlconf splits
    it between them."""
    issues: list[FieldIssue] = []
    for key, name in given_as.items():
        if PER_LEARNER_NAMES.get(name) != key:
            continue
        learners = values.get("num_learner_workers")
        if learners is None and current is not None:
            learners = current.get("num_learner_workers")
        count = _int(learners)
        if count is None or count <= 1:
            continue
        value = values[key]
        each = _int(value)
        total = f"{key}={each * count}" if each is not None else key
        batch = "minibatch" if "mini" in name else "batch"
        issues.append(
            FieldIssue(
                prefix + name,
                f"is each learner's {batch} in RLlib's new API stack, which adds them up to "
                f"{name} x num_learners rows; rlconf's {key} is the whole {batch}, split between "
                f"the num_learner_workers={count} learner workers (RLlib 2.x's meaning)",
                value,
                allowed=f"{total} (the whole {batch}) instead of {name}={short_repr(value)}",
            )
        )
    return issues
