"""The ``rlconf`` command line: train (from flags or a YAML file of experiments), evaluate
checkpoints, plot learning curves, and inspect algorithms, configs, their JSON Schema and the
keys of a result.

Config errors (bad values, unknown keys, env ids and stop keys) print the ConfigError message
and exit with code 2, before anything heavy is imported: ``train`` and ``evaluate`` check
everything they can first, and import the runtime (torch, Ray) after. Ctrl-C, from the first
line of ``main()`` on, prints one line and exits with code 130, wherever no handler of a
command's own takes it (training's writes a checkpoint first).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import signal
import sys
from collections.abc import Callable, Sequence

from rlconf.algorithm_config import AlgorithmConfig
from rlconf.errors import ConfigError
from rlconf.registry import algorithm_issue, get_config_class, list_algorithms
from rlconf.results_folders import X_AXES
from rlconf.runtime_preload import preload_runtime
from rlconf.train_cli import add_train_parser, parse_json_flag
from rlconf.train_cli import verbosity_log_level as verbosity_log_level
from rlconf.user_code import import_user_code

#: The exit code of a command Ctrl-C stopped: 128 + SIGINT, as the shell reports it.
EXIT_INTERRUPTED = 128 + signal.SIGINT

_PLOT_DESCRIPTION = """\
Draw learning curves of results folders over env steps (timesteps_total): one subplot per
metric, one line per run, labelled by folder name. A folder without result.json whose
sub-folders have one (a sweep's <local_dir>/<name>/) stands for those trials. Runs whose
params.json differ only in their seed (and where results go) are drawn as their mean with a
min-max band. Points where a value is null are skipped, so a run still training can be drawn.

Needs matplotlib (pip install 'rlconf[plot]'); without it, or with --terminal, each run's
curve is printed as a sparkline with its first, last, min and max values.
"""


def _config_class(args: argparse.Namespace) -> type[AlgorithmConfig]:
    """The config class of the ALGORITHM argument of ``rlconf config`` / ``rlconf schema``."""
    problem = algorithm_issue(args.algorithm, "ALGORITHM")
    if problem is not None:
        raise ConfigError(f"rlconf {args.command}", [problem])
    return get_config_class(args.algorithm)


def _cmd_config(args: argparse.Namespace) -> int:
    config_class = _config_class(args)
    overrides = parse_json_flag(args.config, "--config") if args.config else {}
    if args.env is not None:
        overrides["env"] = args.env
    config = config_class.from_dict(overrides).validate()
    print(config.to_json())
    return 0


def _cmd_evaluate(args: argparse.Namespace) -> int:
    from rlconf.evaluate_command import check_evaluate_args, run_evaluate

    check_evaluate_args(args.checkpoint, env=args.env, episodes=args.episodes, steps=args.steps)
    args.load_runtime()
    return run_evaluate(
        args.checkpoint,
        env=args.env,
        episodes=args.episodes,
        steps=args.steps,
        explore=args.explore,
        out=args.out,
        quiet=args.quiet,
    )


def _cmd_plot(args: argparse.Namespace) -> int:
    from rlconf.plot_command import run_plot

    return run_plot(
        args.run_dirs, metrics=args.metric, out=args.out, terminal=args.terminal, x=args.x
    )


def _cmd_schema(args: argparse.Namespace) -> int:
    print(json.dumps(_config_class(args).json_schema(), indent=2))
    return 0


def _cmd_result_keys(_args: argparse.Namespace) -> int:
    from rlconf.result_keys import RESULT_KEYS

    width = max(len(k.pattern) for k in RESULT_KEYS)
    print(f"{'key':{width}}  {'kind':6}  what (only numbers can be stop keys)")
    for key in RESULT_KEYS:
        print(f"{key.pattern:{width}}  {key.kind:6}  {key.doc}")
    return 0


def _cmd_list(_args: argparse.Namespace) -> int:
    for name in list_algorithms():
        print(f"{name}\t{get_config_class(name).__name__}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rlconf", description=__doc__)
    parser.add_argument(
        "--import",
        dest="imports",
        action="append",
        default=[],
        metavar="MODULE_OR_FILE",
        help="import this module or .py file first (repeatable): the algorithms, envs and "
        "models it registers become usable, e.g. --import examples/custom_algorithm.py",
    )
    commands = parser.add_subparsers(dest="command", required=True)

    add_train_parser(commands)

    evaluate = commands.add_parser(
        "evaluate", help="run a checkpoint's policy and report episode returns"
    )
    evaluate.add_argument(
        "checkpoint",
        help="a checkpoint_<iteration> folder, or a results folder (its latest checkpoint)",
    )
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

    plot = commands.add_parser(
        "plot",
        help="draw learning curves of results folders (PNG, or sparklines in the terminal)",
        description=_PLOT_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    plot.add_argument(
        "run_dirs",
        nargs="+",
        metavar="RUN_DIR",
        help="a results folder (holding result.json), or a sweep's folder (its trials)",
    )
    plot.add_argument(
        "--metric",
        action="append",
        metavar="KEY",
        help="result key to draw, one subplot each (repeatable; nested keys joined with '/'; "
        "either API stack's name: env_runners/episode_return_mean or episode_reward_mean); "
        "default: episode_reward_mean, and evaluation/episode_reward_mean where a run "
        "evaluated",
    )
    plot.add_argument(
        "--x",
        choices=X_AXES,
        default="steps",
        help="what the curves are drawn over: env steps (timesteps_total; the default) or the "
        "runs' wall time in seconds (time_total_s)",
    )
    plot.add_argument(
        "--out",
        metavar="FILE.png",
        help="image to write, its format by its suffix (.png, .svg, .pdf; default: curves.png "
        "in the first RUN_DIR)",
    )
    plot.add_argument(
        "--terminal",
        action="store_true",
        help="print sparklines instead of writing an image",
    )
    plot.set_defaults(handler=_cmd_plot)

    config = commands.add_parser("config", help="print the full validated config as JSON")
    config.add_argument("algorithm", help="a registered algorithm, e.g. PPO")
    config.add_argument("--env", help="environment id, e.g. CartPole-v1")
    config.add_argument("--config", help="JSON object of config keys to set")
    config.set_defaults(handler=_cmd_config)

    schema = commands.add_parser("schema", help="print the JSON Schema of an algorithm's config")
    schema.add_argument("algorithm")
    schema.set_defaults(handler=_cmd_schema)

    keys = commands.add_parser(
        "result-keys", help="list the keys of a training result (for stop criteria)"
    )
    keys.set_defaults(handler=_cmd_result_keys)

    listing = commands.add_parser("list", help="list the registered algorithms")
    listing.set_defaults(handler=_cmd_list)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command ``argv`` (default: ``sys.argv[1:]``) and return its exit code; the
    runtime is imported where a command first needs it."""
    return _main(argv, load_runtime=_import_where_needed)


def _import_where_needed() -> None:
    """``main()``'s ``load_runtime``: nothing up front (a process of someone else's keeps its
    collector as it is; see ``rlconf.runtime_preload``)."""


def _main(argv: Sequence[str] | None, load_runtime: Callable[[], None]) -> int:
    """``main()``, with the step that imports the runtime once the command is checked."""
    command = "rlconf"
    try:
        args = build_parser().parse_args(argv)
        command = f"rlconf {args.command}"
        args.load_runtime = load_runtime
        return _run_command(args)
    except KeyboardInterrupt:
        # As the training loop ends on a signal: an exit code, one line, no traceback through
        # whatever was being imported.
        print(f"{command}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


def _run_command(args: argparse.Namespace) -> int:
    try:
        for target in args.imports:
            import_user_code(target)
        code: int = args.handler(args)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except RuntimeError as exc:
        # A plan the cluster can't hold is the user's to fix, as a ConfigError is: the
        # message names the bundles, the nodes and the settings; a traceback adds nothing.
        if not _is_resource_error(exc):
            raise
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return code


def _is_resource_error(exc: BaseException) -> bool:
    """Whether ``exc`` is the runtime's ResourceError (the runtime is loaded only by then)."""
    placement = sys.modules.get("runtime.cluster.placement")
    return placement is not None and isinstance(exc, placement.ResourceError)


def put_cwd_on_path() -> None:
    """The current directory first on ``sys.path`` (unless it is there already, as ``''`` or
    by name, as ``python -m`` puts it)."""
    cwd = os.getcwd()
    if not any(os.path.abspath(entry or os.curdir) == cwd for entry in sys.path):
        sys.path.insert(0, cwd)


#: The exit code of a program that a closed pipe stopped: 128 + SIGPIPE, what the shell reports
#: for ``yes | head`` (Python ignores SIGPIPE and gets BrokenPipeError instead).
EXIT_BROKEN_PIPE = 141


def run() -> None:
    """The ``rlconf`` console script: ``main()``, then exit without the interpreter's final
    garbage collections, which take 0.3 s once torch is loaded (the memory goes back to the OS
    with the process anyway; atexit handlers still run). ``train`` and ``evaluate``, once they
    have checked their arguments, import the runtime without the collector's passes
    (``rlconf.runtime_preload``).

    A reader that closes our stdout early (``rlconf result-keys | head``) stops any subcommand
    quietly with code 141, as SIGPIPE stops a C program, instead of a BrokenPipeError
    traceback.

    The current directory goes first on ``sys.path``, as ``python -m rlconf.cli`` puts it:
    import paths in experiment files and ``--import`` (``examples.multi_agent_cartpole:
    map_agent``) resolve from where the command runs, as they do in the reference's
    ``rllib train``."""
    put_cwd_on_path()
    try:
        code = _main(None, load_runtime=preload_runtime)
        sys.stdout.flush()  # here, not at exit, where a BrokenPipeError can't be caught
    except BrokenPipeError:
        # Python flushes stdout once more at exit: point it at devnull, so that this flush of
        # what is left in the buffer can't fail too.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        code = EXIT_BROKEN_PIPE
    gc.freeze()
    sys.exit(code)


if __name__ == "__main__":
    run()
