"""The ``rlconf`` command line: train (from flags or a YAML file of experiments), evaluate
checkpoints, plot learning curves, and inspect algorithms, configs, their JSON Schema and the
keys of a result.

Config errors (bad values, unknown keys, env ids and stop keys) print the ConfigError message
and exit with code 2, before anything heavy is imported.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import sys
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any

from rlconf.errors import ConfigError
from rlconf.experiment import Overrides, load_experiments, make_experiment
from rlconf.log_setup import configure_logging
from rlconf.registry import get_config_class, list_algorithms
from rlconf.runtime_preload import preload_runtime
from rlconf.sweep_run import DEFAULT_METRIC
from rlconf.user_code import import_user_code

#: The environment variable Ray reads the cluster address from.
ADDRESS_ENV = "RAY_ADDRESS"

_TRAIN_DESCRIPTION = """\
Train one algorithm (--run, --env, --config) or every experiment of a YAML file (-f), until a
stop criterion is met.

Everything is checked before torch or Ray is imported: the config, the env id (with a
did-you-mean over gymnasium's ids and the registered names) and the stop keys (with a
did-you-mean over the result keys). With -f, each flag given applies to every experiment in the
file: --config over its config key by key, --stop merged over its stop criteria, the other flags
replacing its values. Every mistake of every experiment is reported at once (exit code 2),
naming the file and the experiment, as is a setting refused when an experiment is built. Import
paths (package.module:Name) resolve from the current directory, as with python -m. -v and -vv
set log_level INFO (workers, placement, checkpoints, evaluations) and DEBUG (also each
iteration's sampling and learning timings and batch shapes).

An experiment whose config holds search spaces ({"grid_search": [...]}) or that sets num_samples
runs as a Ray Tune sweep: trials run side by side as resources allow, a table shows each trial's
iteration, steps, reward and status, each trial's results folder is made under
<local_dir>/<experiment name>/, and the best trial by --metric/--mode is printed at the end.
Without search spaces an experiment runs in this process (Ray starts only for remote workers),
and Ctrl-C or SIGTERM stops it after the current iteration with a checkpoint (exit code 130 or
143; a second one stops it at once), also where the shell started it with SIGINT ignored.
"""

_PLOT_DESCRIPTION = """\
Draw learning curves of results folders over env steps (timesteps_total): one subplot per
metric, one line per run, labelled by folder name. A folder without result.json whose
sub-folders have one (a sweep's <local_dir>/<name>/) stands for those trials. Runs whose
params.json differ only in their seed (and where results go) are drawn as their mean with a
min-max band. Points where a value is null are skipped, so a run still training can be drawn.

Needs matplotlib (pip install 'rlconf[plot]'); without it, or with --terminal, each run's
curve is printed as a sparkline with its first, last, min and max values.
"""


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


def _overrides(args: argparse.Namespace) -> Overrides:
    return Overrides(
        config=_parse_json(args.config, "--config") if args.config else {},
        stop=_parse_json(args.stop, "--stop") if args.stop else {},
        env=args.env,
        framework=args.framework,
        local_dir=args.local_dir,
        checkpoint_freq=args.checkpoint_freq,
        checkpoint_at_end=args.checkpoint_at_end,
        num_samples=args.num_samples,
        keep_checkpoints_num=args.keep_checkpoints_num,
        checkpoint_score_attr=args.checkpoint_score_attr,
    )


def _cmd_train(args: argparse.Namespace) -> int:
    from rlconf.sweep_command import run_sweep_experiment
    from rlconf.train_command import run_train

    if args.address is not None:
        # Read by every path that starts Ray (remote workers, sweeps), as Ray itself reads it.
        os.environ[ADDRESS_ENV] = args.address
    if args.file is not None:
        if args.run is not None:
            raise ConfigError.single(
                "rlconf train", "--run", "can't be combined with -f (the file names the algorithm)"
            )
        experiments = load_experiments(args.file, _overrides(args))
    elif args.run is None:
        raise ConfigError.single(
            "rlconf train", "--run", "is missing", allowed="--run ALGO, or -f experiment.yaml"
        )
    else:
        experiments = [
            make_experiment(args.run, {"run": args.run}, _overrides(args), where="rlconf train")
        ]
    log_level = verbosity_log_level(args.verbose)
    if log_level is not None:
        configure_logging(log_level)
    _refuse_sweep_flags_without_sweep(args, experiments)
    for experiment in experiments:
        with _naming_the_experiment(args.file, experiment.name):
            if experiment.is_sweep:
                code = run_sweep_experiment(
                    experiment,
                    metric=args.metric or DEFAULT_METRIC,
                    mode=args.mode or "max",
                    max_concurrent=args.max_concurrent,
                    name=experiment.name if args.file is not None else None,
                    quiet=args.quiet,
                    log_level=log_level,
                )
            else:
                code = run_train(experiment, quiet=args.quiet, log_level=log_level)
        if code != 0:
            return code
    return 0


def verbosity_log_level(verbose: int) -> str | None:
    """The ``log_level`` of ``-v`` (INFO) and ``-vv`` (DEBUG); None without ``-v`` (the
    config's own applies)."""
    return {0: None, 1: "INFO"}.get(verbose, "DEBUG")


@contextlib.contextmanager
def _naming_the_experiment(file: str | None, name: str) -> Iterator[None]:
    """Errors met while an experiment of ``rlconf train -f FILE`` runs name the file and the
    experiment as the errors of loading the file do: a ``ConfigError`` (a setting refused at
    build, a stop key the results lack) as ``rlconf train -f FILE: ... <name>.<field>...``;
    any other error gets a note saying which experiment of which file it stopped."""
    if file is None:
        yield
        return
    try:
        yield
    except ConfigError as exc:
        raise ConfigError(
            f"rlconf train -f {file}",
            [replace(issue, field=f"{name}.{issue.field}") for issue in exc.issues],
        ) from exc
    except Exception as exc:
        exc.add_note(f"(while running experiment {name!r} of rlconf train -f {file})")
        raise


def _refuse_sweep_flags_without_sweep(args: argparse.Namespace, experiments: list[Any]) -> None:
    if any(e.is_sweep for e in experiments):
        return
    given = [
        flag
        for flag, value in (
            ("--metric", args.metric),
            ("--mode", args.mode),
            ("--max-concurrent", args.max_concurrent),
        )
        if value is not None
    ]
    if given:
        raise ConfigError.single(
            "rlconf train",
            given[0],
            "applies to sweeps only, and no experiment is one (no search space in its config, "
            "no num_samples)",
            allowed="a config with {grid_search: [...]} values, or --num-samples N",
        )


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


def _cmd_plot(args: argparse.Namespace) -> int:
    from rlconf.plot_command import run_plot

    return run_plot(args.run_dirs, metrics=args.metric, out=args.out, terminal=args.terminal)


def _cmd_schema(args: argparse.Namespace) -> int:
    print(json.dumps(get_config_class(args.algorithm).json_schema(), indent=2))
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

    train = commands.add_parser(
        "train",
        help="train an algorithm until a stop criterion",
        description=_TRAIN_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    train.add_argument(
        "-f",
        "--file",
        help="YAML file of experiments (tuned-example format); the flags below apply to every "
        "experiment in it",
    )
    train.add_argument("--run", help="a registered algorithm, e.g. PPO (not with -f)")
    train.add_argument(
        "--env",
        help="environment: a gymnasium id (e.g. CartPole-v1), a registered name or an import "
        "path; replaces the file's env",
    )
    train.add_argument(
        "--config",
        help="JSON object of config keys to set; with -f, applied over each experiment's config "
        "key by key (a partial model dict keeps the file's other model keys)",
    )
    train.add_argument(
        "--stop",
        help="JSON object: stop once any result key reaches its value, e.g. "
        '\'{"episode_reward_mean": 450}\' (nested keys joined with "/", '
        "`rlconf result-keys` lists them); with -f, merged over each experiment's stop",
    )
    train.add_argument(
        "--framework",
        choices=["torch"],
        help="set the framework, replacing the file's or --config's (the reference's tuned "
        "examples say framework: tf, which rlconf refuses)",
    )
    train.add_argument(
        "--checkpoint-freq",
        type=int,
        help="save a checkpoint every N iterations (0: never); replaces the file's",
    )
    train.add_argument(
        "--checkpoint-at-end",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="save a checkpoint when done (or not); replaces the file's",
    )
    train.add_argument(
        "--keep-checkpoints-num",
        type=int,
        metavar="N",
        help="keep only the best N checkpoints by --checkpoint-score-attr (else the newest N), "
        "and always the latest; the others are deleted as training goes; replaces the file's",
    )
    train.add_argument(
        "--checkpoint-score-attr",
        metavar="KEY",
        help="the numeric result key that ranks checkpoints, higher is better (min-KEY: lower), "
        "nested keys joined with '/', e.g. evaluation/episode_reward_mean; the best checkpoint "
        "is printed at the end; replaces the file's",
    )
    train.add_argument(
        "--local-dir",
        help="folder the results directory <ALGO>_<ENV>_<timestamp> is made in "
        "(default: $RLCONF_RESULTS_DIR or ~/rlconf_results); replaces the file's",
    )
    train.add_argument(
        "--num-samples",
        type=int,
        help="run as a Tune sweep with this many trials per grid point / sample of the config's "
        "search spaces; replaces the file's num_samples",
    )
    train.add_argument(
        "--metric",
        help="sweeps: the result key that picks the best trial (default episode_reward_mean)",
    )
    train.add_argument(
        "--mode",
        choices=["max", "min"],
        help="sweeps: whether the best trial has the highest or lowest --metric (default max)",
    )
    train.add_argument(
        "--max-concurrent",
        type=int,
        help="sweeps: run at most this many trials at once (default: as resources allow)",
    )
    train.add_argument(
        "--address",
        help="connect to this Ray cluster (auto, or <head ip>:6379) instead of starting Ray on "
        "this machine; same as setting RAY_ADDRESS",
    )
    train.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    train.add_argument(
        "-v", "--verbose", action="count", default=0, help="log_level INFO (-v) or DEBUG (-vv)"
    )
    train.set_defaults(handler=_cmd_train)

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
        help="result key to draw, one subplot each (repeatable; nested keys joined with '/'); "
        "default: episode_reward_mean, and evaluation/episode_reward_mean where a run "
        "evaluated",
    )
    plot.add_argument(
        "--out",
        metavar="FILE.png",
        help="image to write (default: curves.png in the first RUN_DIR)",
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
    return _run_command(build_parser().parse_args(argv))


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
    with the process anyway; atexit handlers still run). ``train`` and ``evaluate`` first
    import the runtime without the collector's passes (``rlconf.runtime_preload``).

    A reader that closes our stdout early (``rlconf result-keys | head``) stops any subcommand
    quietly with code 141, as SIGPIPE stops a C program, instead of a BrokenPipeError
    traceback.

    The current directory goes first on ``sys.path``, as ``python -m rlconf.cli`` puts it:
    import paths in experiment files and ``--import`` (``examples.multi_agent_cartpole:
    map_agent``) resolve from where the command runs, as they do in the reference's
    ``rllib train``."""
    put_cwd_on_path()
    try:
        args = build_parser().parse_args()
        if args.handler in (_cmd_train, _cmd_evaluate):
            preload_runtime()
        code = _run_command(args)
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
