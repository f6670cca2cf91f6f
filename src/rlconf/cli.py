"""The ``rlconf`` command line: train, evaluate checkpoints, and inspect algorithms, configs
and their JSON Schema.

Config errors print the ConfigError message and exit with code 2, before anything heavy is
imported.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from rlconf.errors import ConfigError
from rlconf.registry import get_config_class, list_algorithms


def _parse_json(text: str, flag: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError.single("rlconf", flag, f"is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise ConfigError.single(
            "rlconf",
            flag,
            "must be a JSON object",
            value=value,
            has_value=True,
            allowed="e.g. '{\"lr\": 0.001}'",
        )
    return value


def _cmd_config(args: argparse.Namespace) -> int:
    config_class = get_config_class(args.algorithm)
    overrides = _parse_json(args.config, "--config") if args.config else {}
    if args.env is not None:
        overrides["env"] = args.env
    config = config_class.from_dict(overrides).validate()
    print(config.to_json())
    return 0


def _cmd_train(args: argparse.Namespace) -> int:
    from rlconf.experiment import load_experiments, make_experiment
    from rlconf.train_command import run_train

    if args.file is not None:
        if args.run is not None:
            raise ConfigError.single(
                "rlconf train", "--run", "can't be combined with -f (the file names the algorithm)"
            )
        experiments = load_experiments(args.file)
    elif args.run is None:
        raise ConfigError.single(
            "rlconf train", "--run", "is missing", allowed="--run ALGO, or -f experiment.yaml"
        )
    else:
        overrides = _parse_json(args.config, "--config") if args.config else {}
        stop = _parse_json(args.stop, "--stop") if args.stop else {}
        experiments = [
            make_experiment(
                args.run,
                args.run,
                overrides,
                stop,
                env=args.env,
                checkpoint_freq=args.checkpoint_freq,
                checkpoint_at_end=args.checkpoint_at_end,
                local_dir=args.local_dir,
                where="rlconf train",
                stop_prefix="--stop.",
            )
        ]
    log_level = {0: None, 1: "INFO"}.get(args.verbose, "DEBUG")
    for experiment in experiments:
        code = run_train(experiment, quiet=args.quiet, log_level=log_level)
        if code != 0:
            return code
    return 0


def _cmd_evaluate(args: argparse.Namespace) -> int:
    from rlconf.evaluate_command import run_evaluate

    return run_evaluate(
        args.checkpoint,
        env=args.env,
        episodes=args.episodes,
        steps=args.steps,
        explore=args.explore,
        out=args.out,
        quiet=args.quiet,
    )


def _cmd_schema(args: argparse.Namespace) -> int:
    print(json.dumps(get_config_class(args.algorithm).json_schema(), indent=2))
    return 0


def _cmd_list(_args: argparse.Namespace) -> int:
    for name in list_algorithms():
        print(f"{name}\t{get_config_class(name).__name__}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rlconf", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    train = commands.add_parser("train", help="train an algorithm until a stop criterion")
    train.add_argument("-f", "--file", help="YAML file of experiments (tuned-example format)")
    train.add_argument("--run", help="a registered algorithm, e.g. PPO")
    train.add_argument("--env", help="environment id, e.g. CartPole-v1")
    train.add_argument("--config", help="JSON object of config keys to set")
    train.add_argument(
        "--stop",
        help="JSON object: stop once any result key reaches its value, e.g. "
        '\'{"episode_reward_mean": 450}\' (nested keys joined with "/")',
    )
    train.add_argument("--checkpoint-freq", type=int, default=0, help="save every N iterations")
    train.add_argument("--checkpoint-at-end", action="store_true", help="save when done")
    train.add_argument(
        "--local-dir",
        help="folder the results directory <ALGO>_<ENV>_<timestamp> is made in "
        "(default: $RLCONF_RESULTS_DIR or ~/rlconf_results)",
    )
    train.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    train.add_argument(
        "-v", "--verbose", action="count", default=0, help="log_level INFO (-v) or DEBUG (-vv)"
    )
    train.set_defaults(handler=_cmd_train)

    evaluate = commands.add_parser(
        "evaluate", help="run a checkpoint's policy and report episode returns"
    )
    evaluate.add_argument("checkpoint", help="a checkpoint_<iteration> folder")
    evaluate.add_argument("--env", help="evaluate in this env instead of the training env")
    amount = evaluate.add_mutually_exclusive_group()
    amount.add_argument("--episodes", type=int, help="number of episodes (default 10)")
    amount.add_argument("--steps", type=int, help="number of env steps")
    evaluate.add_argument(
        "--explore",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="sample actions (--explore) or take the most likely (--no-explore); default: the "
        "checkpoint's evaluation config",
    )
    evaluate.add_argument("--out", help="write the episode returns and lengths to this JSON file")
    evaluate.add_argument("-q", "--quiet", action="store_true", help="print nothing")
    evaluate.set_defaults(handler=_cmd_evaluate)

    config = commands.add_parser("config", help="print the full validated config as JSON")
    config.add_argument("algorithm", help="a registered algorithm, e.g. PPO")
    config.add_argument("--env", help="environment id, e.g. CartPole-v1")
    config.add_argument("--config", help="JSON object of config keys to set")
    config.set_defaults(handler=_cmd_config)

    schema = commands.add_parser("schema", help="print the JSON Schema of an algorithm's config")
    schema.add_argument("algorithm")
    schema.set_defaults(handler=_cmd_schema)

    listing = commands.add_parser("list", help="list the registered algorithms")
    listing.set_defaults(handler=_cmd_list)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        code: int = args.handler(args)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return code


if __name__ == "__main__":
    sys.exit(main())
