"""``add_rllib_example_script_args``: the command line of RLlib's example scripts.

RLlib's example and tuned-example scripts (Ray 2.10 and later) build their parser with
``ray.rllib.utils.test_utils.add_rllib_example_script_args`` and hand the parsed ``args`` with
their config to ``run_rllib_example_script_experiment`` (``rlconf.example_script_run``). This is
the same parser, flag for flag, under ``rlconf.testing``: a script written against RLlib runs
with only its imports changed. What each flag does here is the business of the runner and of
the config (``rlconf.example_script_config``): every flag acts, or is refused with its reason
when given. Two are rlconf's own: ``--seed`` (RLlib's examples have none; it sets
``debugging(seed=...)``, for learning tests over fixed seeds) and ``--old-api-stack`` /
``--enable-new-api-stack`` are both accepted (rlconf has one learning path; see
``AlgorithmConfig.api_stack()``).

Importing this module imports neither torch nor Ray.
"""

from __future__ import annotations

import argparse


def _duration(value: str) -> int | str:
    return value if value == "auto" else int(value)


def add_rllib_example_script_args(
    parser: argparse.ArgumentParser | None = None,
    default_reward: float = 100.0,
    default_iters: int = 200,
    default_timesteps: int = 100000,
) -> argparse.ArgumentParser:
    """RLlib's example-script flags added to ``parser`` (a new one when None), with the given
    defaults of ``--stop-reward``, ``--stop-iters`` and ``--stop-timesteps``; returns the
    parser."""
    if parser is None:
        parser = argparse.ArgumentParser()
    _algorithm_args(parser)
    _evaluation_args(parser)
    _run_args(parser)
    _stop_args(parser, default_reward, default_iters, default_timesteps)
    _resource_args(parser)
    return parser


def _algorithm_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--algo",
        type=str,
        default="PPO",
        help="The algorithm, for scripts that pick their config by it (a script's own config "
        "decides otherwise).",
    )
    parser.add_argument(
        "--enable-new-api-stack",
        action="store_true",
        help="RLlib's switch to its new API stack (the default since Ray 2.40); accepted, "
        "rlconf has one learning path.",
    )
    parser.add_argument(
        "--old-api-stack",
        action="store_true",
        help="RLlib's switch back to its old API stack: api_stack(False, False), accepted with "
        "a note at build; --num-gpus is then taken.",
    )
    parser.add_argument(
        "--framework",
        choices=["tf", "tf2", "torch"],
        default="torch",
        help="The deep-learning framework: torch (tf and tf2 are refused by framework()).",
    )
    parser.add_argument(
        "--env", type=str, default=None, help="The env, where the config sets none."
    )
    parser.add_argument("--num-env-runners", type=int, default=None, help="Remote rollout workers.")
    parser.add_argument(
        "--num-envs-per-env-runner", type=int, default=None, help="Sub-envs per rollout worker."
    )
    parser.add_argument(
        "--num-agents",
        type=int,
        default=0,
        help="Agents of the multi-agent scripts (0: single-agent); the progress lines then "
        "show each module's return.",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=None,
        help="rlconf's: debugging(seed=...) (None: the config's seed).",
    )


def _evaluation_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--evaluation-num-env-runners", type=int, default=0, help="Remote evaluation workers."
    )
    parser.add_argument(
        "--evaluation-interval",
        type=int,
        default=0,
        help="Evaluate every this many iterations; 0: no evaluation settings are applied.",
    )
    parser.add_argument(
        "--evaluation-duration",
        type=_duration,
        default=10,
        help="Episodes or timesteps of each evaluation, or 'auto'.",
    )
    parser.add_argument(
        "--evaluation-duration-unit",
        type=str,
        default="episodes",
        choices=["episodes", "timesteps"],
        help="What --evaluation-duration counts.",
    )
    parser.add_argument(
        "--evaluation-parallel-to-training",
        action="store_true",
        help="Evaluate beside the training step.",
    )


def _run_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--output", type=str, default=None, help="offline_data(output=...): write the samples."
    )
    parser.add_argument(
        "--log-level",
        type=str,
        default=None,
        choices=["INFO", "DEBUG", "WARN", "ERROR"],
        help="debugging(log_level=...).",
    )
    parser.add_argument(
        "--no-tune",
        action="store_true",
        help="Train in this process with algo.train() until a stop criterion is met, instead "
        "of as a Tune trial (rlconf.sweep.run).",
    )
    parser.add_argument(
        "--num-samples", type=int, default=1, help="Tune trials of the config (Tune only)."
    )
    parser.add_argument(
        "--max-concurrent-trials",
        type=int,
        default=None,
        help="Tune trials running at once (Tune only).",
    )
    parser.add_argument(
        "--verbose",
        type=int,
        default=2,
        help="0: no progress lines (or trial table); more: one per iteration.",
    )
    parser.add_argument(
        "--checkpoint-freq",
        type=int,
        default=0,
        help="Save a checkpoint every this many iterations (0: none).",
    )
    parser.add_argument(
        "--checkpoint-at-end", action="store_true", help="Save a checkpoint at the end."
    )
    for name in ("key", "project", "run-name"):
        parser.add_argument(
            f"--wandb-{name}",
            type=str,
            default=None,
            help="WandB logging: refused (results go to JSON, CSV and TensorBoard files).",
        )


def _stop_args(parser: argparse.ArgumentParser, reward: float, iters: int, timesteps: int) -> None:
    parser.add_argument(
        "--stop-reward",
        type=float,
        default=reward,
        help="Stop once env_runners/episode_return_mean reaches this.",
    )
    parser.add_argument(
        "--stop-iters", type=int, default=iters, help="Stop after this many iterations."
    )
    parser.add_argument(
        "--stop-timesteps",
        type=int,
        default=timesteps,
        help="Stop once this many env steps were sampled.",
    )
    parser.add_argument(
        "--as-test",
        action="store_true",
        help="Raise at the end unless the success metric (--stop-reward by default) was reached.",
    )
    parser.add_argument(
        "--as-release-test",
        action="store_true",
        help="--as-test, and write a JSON summary to $TEST_OUTPUT_JSON (/tmp/learning_test.json).",
    )


def _resource_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--num-learners",
        type=int,
        default=None,
        help="Learner workers (None: the config's).",
    )
    parser.add_argument(
        "--num-cpus-per-learner", type=float, default=None, help="CPUs per learner worker."
    )
    parser.add_argument(
        "--num-gpus-per-learner",
        type=float,
        default=None,
        help="GPUs per learner (None: 1 where the machine has one for each learner, else 0).",
    )
    parser.add_argument(
        "--num-aggregator-actors-per-learner",
        type=int,
        default=None,
        help="Aggregator actors: refused by learners() (the driver concatenates the fragments).",
    )
    parser.add_argument(
        "--num-cpus",
        type=int,
        default=0,
        help="CPUs of the Ray this script starts (0: the machine's; Ray starts when needed).",
    )
    parser.add_argument(
        "--local-mode",
        action="store_true",
        help="Ray's local mode: refused (debug with --no-tune --num-env-runners=0 instead).",
    )
    parser.add_argument(
        "--num-gpus",
        type=int,
        default=None,
        help="The learner's GPUs with --old-api-stack (refused otherwise, as RLlib).",
    )
