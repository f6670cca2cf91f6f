"""``rlconf train``'s command line: its flags, the experiments they make (from the flags, or
from a YAML file with the flags over each of its experiments), every one of them checked before
the runtime (torch, Ray) is imported, and then run one after the other.

Without ``-f``, an algorithm runs with ``num_workers=0`` unless ``--config`` sets it (or one of
its other names): a first ``rlconf train --run PPO --env CartPole-v1`` trains in this process
instead of starting Ray for the two rollout workers of ``PPOConfig()``'s default (RLlib's),
and a line says so and how to ask for workers. Configs built in Python and experiment files
keep the algorithm's defaults.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

from rlconf.errors import ConfigError
from rlconf.experiment import Experiment, Overrides, load_experiments, located, make_experiment
from rlconf.key_aliases import canonical_key
from rlconf.log_setup import configure_logging
from rlconf.registry import get_config_class
from rlconf.sweep_run import DEFAULT_METRIC

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
naming the file, the line and the experiment, as is a setting refused when an experiment is
built. Without -f, num_workers is 0 (sampling in this process) unless --config sets it; the
algorithm's own default (PPO's: 2 Ray workers) is said in one line. Import
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
Ctrl-C before training starts exits at once (code 130).
"""


def parse_json_flag(text: str, flag: str) -> dict[str, Any]:
    """The JSON object ``text`` that ``flag`` was given, or a ConfigError naming the flag."""
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


def add_train_parser(commands: Any) -> None:
    """The ``train`` subcommand, among ``commands`` (the parser's subparsers)."""
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
        "--resume",
        metavar="RUN_FOLDER",
        help="go on with the run in RUN_FOLDER (its results folder) from its last good "
        "checkpoint, with its config, stop criteria and checkpoint settings (alone: not with "
        "-f, --run or the flags that set them)",
    )
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
    train.set_defaults(handler=run_train_command)


def run_train_command(args: argparse.Namespace) -> int:
    """Check every experiment ``args`` name, then call ``args.load_runtime()`` and run them."""
    from rlconf.sweep_command import plan_sweep_experiment, run_sweep_experiment
    from rlconf.train_command import run_train

    if args.address is not None:
        # Read by every path that starts Ray (remote workers, sweeps), as Ray itself reads it.
        os.environ[ADDRESS_ENV] = args.address
    if args.resume is not None:
        return _resume(args)
    experiments, note = _experiments(args)
    log_level = verbosity_log_level(args.verbose)
    _refuse_sweep_flags_without_sweep(args, experiments)
    for experiment in experiments:
        # The files an experiment reads, before anything starts (validate() leaves the disk
        # alone, so that a file naming data elsewhere still loads).
        with _naming_the_experiment(args.file, experiment):
            experiment.config.check_input_paths()
    plans = {}
    for experiment in experiments:
        if experiment.is_sweep:
            with _naming_the_experiment(args.file, experiment):
                plans[experiment.name] = plan_sweep_experiment(
                    experiment,
                    metric=args.metric or DEFAULT_METRIC,
                    mode=args.mode or "max",
                    max_concurrent=args.max_concurrent,
                    name=experiment.name if args.file is not None else None,
                    quiet=args.quiet,
                    log_level=log_level,
                )
    if note is not None:
        print(note, file=sys.stderr)
    if log_level is not None:
        configure_logging(log_level)
    load_runtime: Callable[[], None] = args.load_runtime
    load_runtime()
    for experiment in experiments:
        with _naming_the_experiment(args.file, experiment):
            plan = plans.get(experiment.name)
            if plan is not None:
                code = run_sweep_experiment(experiment, plan)
            else:
                code = run_train(experiment, quiet=args.quiet, log_level=log_level)
        if code != 0:
            return code
    return 0


#: The flags that make or change an experiment: ``--resume`` takes the run's own.
_EXPERIMENT_FLAGS = (
    "file",
    "run",
    "env",
    "config",
    "stop",
    "framework",
    "checkpoint_freq",
    "checkpoint_at_end",
    "keep_checkpoints_num",
    "checkpoint_score_attr",
    "local_dir",
    "num_samples",
    "metric",
    "mode",
    "max_concurrent",
)


def _resume(args: argparse.Namespace) -> int:
    from rlconf.resume_run import load_resume
    from rlconf.train_command import run_train

    given = [name for name in _EXPERIMENT_FLAGS if getattr(args, name, None) is not None]
    if given:
        flags = ", ".join("-f" if n == "file" else "--" + n.replace("_", "-") for n in given)
        raise ConfigError.single(
            "rlconf train",
            "--resume",
            f"goes on with the run as it was set up; {flags} would change it",
            allowed="--resume RUN_FOLDER with -q, -v or --address",
        )
    resume = load_resume(args.resume)
    print(
        f"{resume.experiment.name}: resuming from {resume.checkpoint} (iteration "
        f"{resume.iteration})",
        file=sys.stderr,
    )
    log_level = verbosity_log_level(args.verbose)
    if log_level is not None:
        configure_logging(log_level)
    load_runtime: Callable[[], None] = args.load_runtime
    load_runtime()
    return run_train(resume.experiment, quiet=args.quiet, log_level=log_level, resume=resume)


def _experiments(args: argparse.Namespace) -> tuple[list[Experiment], str | None]:
    """The checked experiments, and the note to print about the workers of one made from flags
    (None when there is nothing to say)."""
    overrides = Overrides(
        config=parse_json_flag(args.config, "--config") if args.config else {},
        stop=parse_json_flag(args.stop, "--stop") if args.stop else {},
        env=args.env,
        framework=args.framework,
        local_dir=args.local_dir,
        checkpoint_freq=args.checkpoint_freq,
        checkpoint_at_end=args.checkpoint_at_end,
        num_samples=args.num_samples,
        keep_checkpoints_num=args.keep_checkpoints_num,
        checkpoint_score_attr=args.checkpoint_score_attr,
    )
    if args.file is not None:
        if args.run is not None:
            raise ConfigError.single(
                "rlconf train", "--run", "can't be combined with -f (the file names the algorithm)"
            )
        return load_experiments(args.file, overrides), None
    if args.run is None:
        raise ConfigError.single(
            "rlconf train", "--run", "is missing", allowed="--run ALGO, or -f experiment.yaml"
        )
    spec: dict[str, Any] = {"run": args.run}
    sets_workers = any(canonical_key(str(key)) == "num_workers" for key in overrides.config)
    if not sets_workers:
        spec["config"] = {"num_workers": 0}
    experiment = make_experiment(args.run, spec, overrides, where="rlconf train", run_field="--run")
    default = get_config_class(args.run)()["num_workers"]
    if sets_workers or not default:
        return [experiment], None
    return [experiment], (
        f"num_workers=0: {args.run} samples without Ray workers (rlconf train's default without "
        f"-f; {type(experiment.config).__name__}'s is {default}: --config "
        f"'{{\"num_workers\": {default}}}' samples in Ray workers)"
    )


def verbosity_log_level(verbose: int) -> str | None:
    """The ``log_level`` of ``-v`` (INFO) and ``-vv`` (DEBUG); None without ``-v`` (the
    config's own applies)."""
    return {0: None, 1: "INFO"}.get(verbose, "DEBUG")


@contextlib.contextmanager
def _naming_the_experiment(file: str | None, experiment: Experiment) -> Iterator[None]:
    """Errors met while an experiment of ``rlconf train -f FILE`` runs name the file and the
    experiment as the errors of loading the file do: a ``ConfigError`` (a setting refused at
    build, a stop key the results lack) as ``rlconf train -f FILE: FILE:LINE: <name>.<field>
    ...``; any other error gets a note saying which experiment of which file it stopped."""
    if file is None:
        yield
        return
    name = experiment.name
    try:
        yield
    except ConfigError as exc:
        raise ConfigError(
            f"rlconf train -f {file}",
            [
                replace(issue, field=f"{name}.{issue.field}")
                for issue in (located(i, name, experiment.key_lines) for i in exc.issues)
            ],
        ) from exc
    except Exception as exc:
        exc.add_note(f"(while running experiment {name!r} of rlconf train -f {file})")
        raise


def _refuse_sweep_flags_without_sweep(
    args: argparse.Namespace, experiments: list[Experiment]
) -> None:
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
