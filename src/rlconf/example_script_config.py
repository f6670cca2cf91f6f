"""How ``run_rllib_example_script_experiment`` applies an example script's command line to its
config, as RLlib's does: the env runners, learners and their GPUs, evaluation, log level, output
and seed; and the flags refused here, each with its reason.

``apply_script_args`` changes the config in place (unless ``keep_config``, RLlib's switch for
scripts that set those settings themselves) and returns the notes to show; ``refused_flags``
names every flag given that can't act.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from rlconf.algorithm_config import AlgorithmConfig

#: The flags that take no effect here, and why (checked where given: ``refused_flags``).
_WANDB = "WandB logging is not available: results go to JSON, CSV and TensorBoard files"
_LOCAL_MODE = (
    "Ray's local mode is gone from Ray 2.x; to debug in one process run with --no-tune "
    "--num-env-runners=0"
)


def refused_flags(args: argparse.Namespace) -> list[str]:
    """What is wrong with ``args`` as given, one line per flag that can't act."""
    problems = []
    for flag in ("wandb_key", "wandb_project", "wandb_run_name"):
        if getattr(args, flag, None) is not None:
            problems.append(f"--{flag.replace('_', '-')}: {_WANDB}")
    if getattr(args, "local_mode", False):
        problems.append(f"--local-mode: {_LOCAL_MODE}")
    if args.no_tune:
        if args.num_samples != 1:
            problems.append(
                f"--num-samples={args.num_samples}: runs that many Tune trials; with "
                "--no-tune one run trains"
            )
        if args.max_concurrent_trials is not None:
            problems.append(
                f"--max-concurrent-trials={args.max_concurrent_trials}: limits Tune trials; "
                "with --no-tune one run trains"
            )
    if not args.old_api_stack and (args.num_gpus or 0) > 0:
        # RLlib's own refusal on its new API stack.
        problems.append(
            f"--num-gpus={args.num_gpus}: not taken on the new API stack; train on GPUs with "
            "--num-gpus-per-learner=1 and --num-learners=<GPUs> (or --old-api-stack)"
        )
    return problems


def gpus_available() -> float:
    """The GPUs of the Ray this process is connected to, else of this machine."""
    if "ray" in sys.modules:
        import ray

        if ray.is_initialized():
            return float(ray.cluster_resources().get("GPU", 0))  # type: ignore[no-untyped-call]
    import torch

    return float(torch.cuda.device_count())


def apply_script_args(config: AlgorithmConfig, args: argparse.Namespace) -> list[str]:
    """Set what ``args`` asks for on ``config``, as RLlib's runner does; returns the notes (a
    flag of the script's own that the config decides otherwise). Raises ``ValueError`` for
    GPUs asked for that the machine lacks; ``ConfigError`` for a value a setting refuses."""
    notes: list[str] = []
    config.framework(args.framework)
    if args.env is not None and config["env"] is None:
        config.environment(args.env)
    if args.algo not in ("PPO", config.algo_name):
        notes.append(
            f"--algo={args.algo}: this script's config is {type(config).__name__}, whose "
            "algorithm runs (scripts that pick their config read --algo themselves)"
        )
    # Either switch is taken as RLlib's runners take it (api_stack(), named in a note at build).
    if args.old_api_stack:
        config.api_stack(
            enable_rl_module_and_learner=False, enable_env_runner_and_connector_v2=False
        )
    elif getattr(args, "enable_new_api_stack", False):
        config.api_stack(enable_rl_module_and_learner=True, enable_env_runner_and_connector_v2=True)
    if args.num_env_runners is not None:
        config.env_runners(num_env_runners=args.num_env_runners)
    if args.num_envs_per_env_runner is not None:
        config.env_runners(num_envs_per_env_runner=args.num_envs_per_env_runner)
    if args.old_api_stack:
        if args.num_gpus is not None:
            config.resources(num_gpus=args.num_gpus)
    else:
        _apply_learners(config, args)
    if args.evaluation_interval > 0:
        config.evaluation(
            evaluation_num_env_runners=args.evaluation_num_env_runners,
            evaluation_interval=args.evaluation_interval,
            evaluation_duration=args.evaluation_duration,
            evaluation_duration_unit=args.evaluation_duration_unit,
            evaluation_parallel_to_training=args.evaluation_parallel_to_training,
        )
    if args.log_level is not None:
        config.debugging(log_level=args.log_level)
    if args.output is not None:
        config.offline_data(output=args.output)
    if getattr(args, "seed", None) is not None:
        config.debugging(seed=args.seed)
    return notes


def _apply_learners(config: AlgorithmConfig, args: argparse.Namespace) -> None:
    """RLlib's new API stack resources: ``--num-learners``, and GPUs per learner (None: one
    each where the machine has enough, else none). A local learner (no learner workers) is
    the driver's here, whose GPUs are ``num_gpus``."""
    if args.num_learners is not None:
        config.learners(num_learners=args.num_learners)
    if args.num_aggregator_actors_per_learner is not None:
        # Not a keyword of learners(): it refuses the name with the reason.
        config.learners(
            **{"num_aggregator_actors_per_learner": args.num_aggregator_actors_per_learner}
        )
    learners = int(config["num_learner_workers"])
    per_learner: Any = args.num_gpus_per_learner
    available = gpus_available()
    if per_learner is None:
        per_learner = 1 if available >= max(1, learners) else 0
    elif available < per_learner * max(1, learners):
        raise ValueError(
            f"--num-gpus-per-learner={per_learner:g} on {max(1, learners)} learner(s) asks "
            f"for {per_learner * max(1, learners):g} GPU(s), but there are {available:g}"
        )
    if learners:
        config.resources(num_gpus=0)
        config.learners(num_gpus_per_learner=per_learner)
    else:
        config.resources(num_gpus=per_learner)
    if args.num_cpus_per_learner is not None:
        config.learners(num_cpus_per_learner=args.num_cpus_per_learner)
