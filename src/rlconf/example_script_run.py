"""``run_rllib_example_script_experiment``: train an example script's config to its stop dict,
as RLlib's function of that name does.

The config is first given what the command line asks for (``rlconf.example_script_config``),
then trained until one stop criterion is met (``{result key: value}``, nested keys joined with
``/``; RLlib's default: ``env_runners/episode_return_mean`` of ``--stop-reward``,
``env_runners/num_env_steps_sampled_lifetime`` of ``--stop-timesteps``, ``training_iteration``
of ``--stop-iters``):

- as a Ray Tune experiment (``rlconf.sweep.run``: ``--num-samples`` trials, at most
  ``--max-concurrent-trials`` at once, a ``scheduler``, checkpoints every ``--checkpoint-freq``
  iterations and at the end with ``--checkpoint-at-end``, a live trial table unless
  ``--verbose=0``), returning its ``SweepSummary`` (RLlib returns Tune's ``ResultGrid``: the
  summary holds the same, each trial's config, last result and checkpoints, and the best
  trial by the success metric);
- with ``--no-tune``, in this process: ``config.build_algo()`` and ``algo.train()`` until a
  criterion is met or ``--stop-iters`` iterations (or the stop dict's ``training_iteration``)
  ran, one progress line per iteration, returning the last result dict (RLlib's).

With ``--as-test`` (or ``--as-release-test``) it raises ``ValueError`` at the end unless the
success metric was reached: ``success_metric`` (``{key: value}``), else the stop dict's
``evaluation/env_runners/episode_return_mean`` or ``env_runners/episode_return_mean``, else
``--stop-reward`` on the latter; compared with each trial's last result. Unlike RLlib's,
``--as-test`` also works with ``--no-tune``. ``--as-release-test`` also writes RLlib's JSON
summary to ``$TEST_OUTPUT_JSON``.

Ray is started here only with ``--num-cpus`` (else the runtime starts it when actors or Tune
need it), and shut down at the end unless ``keep_ray_up``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from collections.abc import Mapping
from typing import Any

from rlconf.algorithm_config import AlgorithmConfig
from rlconf.errors import ConfigError
from rlconf.example_script_args import add_rllib_example_script_args
from rlconf.example_script_config import apply_script_args, refused_flags
from rlconf.metrics import (
    ENV_RUNNER_RESULTS,
    EPISODE_MODULE_RETURN_MEAN,
    EPISODE_RETURN_MEAN,
    EVALUATION_RESULTS,
    NUM_ENV_STEPS_SAMPLED_LIFETIME,
)
from rlconf.stop_criteria import StopCriteria, flat_stop, lookup, stop_issues
from rlconf.sweep_summary import SweepSummary

TRAINING_ITERATION = "training_iteration"
_RETURN = f"{ENV_RUNNER_RESULTS}/{EPISODE_RETURN_MEAN}"
_EVAL_RETURN = f"{EVALUATION_RESULTS}/{ENV_RUNNER_RESULTS}/{EPISODE_RETURN_MEAN}"
_WHERE = "run_rllib_example_script_experiment()"


def default_stop(args: argparse.Namespace) -> dict[str, float]:
    """RLlib's stop dict of an example script: the ``--stop-*`` flags on the new-stack keys."""
    return {
        _RETURN: args.stop_reward,
        f"{ENV_RUNNER_RESULTS}/{NUM_ENV_STEPS_SAMPLED_LIFETIME}": args.stop_timesteps,
        TRAINING_ITERATION: args.stop_iters,
    }


def run_rllib_example_script_experiment(
    base_config: AlgorithmConfig,
    args: argparse.Namespace | None = None,
    *,
    stop: Mapping[str, Any] | None = None,
    success_metric: Mapping[str, float] | None = None,
    trainable: Any = None,
    tune_callbacks: list[Any] | None = None,
    keep_config: bool = False,
    keep_ray_up: bool = False,
    scheduler: Any = None,
    progress_reporter: Any = None,
) -> dict[str, Any] | SweepSummary[Any]:
    """Train ``base_config``, given the command line ``args`` (parsed from ``sys.argv`` with
    ``add_rllib_example_script_args()`` when None), until a ``stop`` criterion is met; see
    the module's doc. Returns the last result (``--no-tune``) or the sweep's summary.

    ``keep_config`` leaves the config as it is (no flag is applied to it); ``scheduler`` is a
    Tune scheduler for the trials. ``trainable``, ``tune_callbacks`` and ``progress_reporter``
    are refused but at None (the trials run the config's algorithm, with rlconf's own loggers
    and trial table)."""
    if args is None:
        args = add_rllib_example_script_args().parse_args()
    _refuse(args, trainable, tune_callbacks, progress_reporter)
    if args.as_release_test:
        args.as_test = True
    config = base_config
    if not keep_config:
        for note in apply_script_args(config, args):
            print(f"note: {note}", file=sys.stderr)
    stop = flat_stop(stop) if stop is not None else default_stop(args)
    issues = stop_issues(stop, "stop.", config)
    if issues:
        raise ConfigError(_WHERE, issues)
    success = dict(success_metric) if success_metric is not None else _success_metric(stop, args)
    _start_ray(args)
    started = time.time()
    try:
        if args.no_tune:
            results: dict[str, Any] | SweepSummary[Any] = _train_here(config, args, stop)
            last = [results] if isinstance(results, dict) else []
        else:
            results = _train_with_tune(config, args, stop, success, scheduler)
            assert isinstance(results, SweepSummary)
            last = [dict(trial.metrics) for trial in results.trials]
    finally:
        if not keep_ray_up:
            _stop_ray()
    if args.as_test:
        _check_success(success, last, args, time.time() - started)
    return results


def _refuse(
    args: argparse.Namespace, trainable: Any, tune_callbacks: Any, progress_reporter: Any
) -> None:
    problems = refused_flags(args)
    if trainable is not None:
        problems.append(
            f"trainable={trainable!r}: the trials run the config's algorithm (register one of "
            "your own with rlconf.register_algorithm and give its config)"
        )
    if tune_callbacks:
        problems.append(
            "tune_callbacks: Tune callbacks are not passed on; each trial writes JSON, CSV "
            "and TensorBoard results itself"
        )
    if progress_reporter is not None:
        problems.append(
            "progress_reporter: the trials are shown by rlconf's trial table (--verbose=0 "
            "turns it off)"
        )
    if problems:
        raise ValueError(f"{_WHERE}: " + "; ".join(problems))


def _success_metric(stop: Mapping[str, Any], args: argparse.Namespace) -> dict[str, float]:
    """RLlib's choice: the stop dict's evaluation return, else its return, else
    ``--stop-reward`` on the return."""
    for key in (_EVAL_RETURN, _RETURN):
        if key in stop:
            return {key: float(stop[key])}
    return {_RETURN: float(args.stop_reward)}


def _start_ray(args: argparse.Namespace) -> None:
    """Ray with ``--num-cpus`` CPUs, where given and Ray is not up (else the runtime starts it
    when it is needed)."""
    if not args.num_cpus:
        return
    import ray

    if not ray.is_initialized():
        # A Ray of this script's own, never a cluster `ray start` runs on this machine.
        ray.init(address="local", num_cpus=args.num_cpus, include_dashboard=False)


def _stop_ray() -> None:
    if "ray" not in sys.modules:
        return
    import ray

    if ray.is_initialized():
        ray.shutdown()


def _train_here(
    config: AlgorithmConfig, args: argparse.Namespace, stop: dict[str, Any]
) -> dict[str, Any]:
    """``--no-tune``: build the algorithm and train it here until a criterion is met."""
    criteria = StopCriteria(stop, config, _WHERE)
    iterations = int(stop.get(TRAINING_ITERATION, args.stop_iters))
    algo = config.build_algo()
    result: dict[str, Any] = {}
    try:
        for _ in range(iterations):
            result = algo.train()
            if args.verbose:
                print(_progress_line(result, args.num_agents > 0), flush=True)
            if args.checkpoint_freq and result[TRAINING_ITERATION] % args.checkpoint_freq == 0:
                print(f"checkpoint: {algo.save()}", flush=True)
            if criteria.reached(result):
                print(f"Stop criterion ({_met(stop, result)}) fulfilled!", flush=True)
                break
        if args.checkpoint_at_end:
            print(f"checkpoint: {algo.save()}", flush=True)
    finally:
        algo.stop()
    return result


def _met(stop: Mapping[str, Any], result: Mapping[str, Any]) -> str:
    """The criteria ``result`` met, as ``key=threshold``."""
    met = []
    for key, threshold in stop.items():
        value = lookup(result, key)
        if _is_number(value) and value >= threshold:
            met.append(f"{key}={threshold}")
    return ", ".join(met)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and not math.isnan(value)


def _progress_line(result: Mapping[str, Any], per_module: bool) -> str:
    """``iter=3 steps=12000 R=87.5 R(eval)=120.0`` (and each module's return)."""
    line = (
        f"iter={result.get(TRAINING_ITERATION)} "
        f"steps={lookup(result, f'{ENV_RUNNER_RESULTS}/{NUM_ENV_STEPS_SAMPLED_LIFETIME}')} "
        f"R={lookup(result, _RETURN)}"
    )
    evaluated = lookup(result, _EVAL_RETURN)
    if evaluated is not None:
        line += f" R(eval)={evaluated}"
    modules = lookup(result, f"{ENV_RUNNER_RESULTS}/{EPISODE_MODULE_RETURN_MEAN}")
    if per_module and isinstance(modules, Mapping):
        line += "".join(f" R({module})={value}" for module, value in modules.items())
    return line


def _train_with_tune(
    config: AlgorithmConfig,
    args: argparse.Namespace,
    stop: dict[str, Any],
    success: Mapping[str, float],
    scheduler: Any,
) -> SweepSummary[Any]:
    """The config as a Tune experiment of ``--num-samples`` trials (``rlconf.sweep.run``)."""
    from rlconf.sweep_run import run

    metric = next(iter(success))
    return run(
        config,
        stop=stop,
        metric=metric,
        mode="max",
        num_samples=args.num_samples,
        max_concurrent=args.max_concurrent_trials,
        scheduler=scheduler,
        checkpoint_freq=args.checkpoint_freq,
        checkpoint_at_end=args.checkpoint_at_end,
        progress=args.verbose > 0,
    )


def _check_success(
    success: Mapping[str, float],
    last_results: list[dict[str, Any]],
    args: argparse.Namespace,
    seconds: float,
) -> None:
    """Raise unless some run's last result reached the success metric (RLlib's test)."""
    key, target = next(iter(success.items()))
    values = [v for r in last_results if _is_number(v := lookup(r, key))]
    passed = bool(values) and max(values) >= target
    if args.as_release_test:
        _write_release_summary(last_results, passed, seconds)
    if not passed:
        best = max(values) if values else None
        raise ValueError(f"`{key}` of {target} not reached! (best: {best})")
    print(f"`{key}` of {target} reached! ok", flush=True)


def _write_release_summary(
    last_results: list[dict[str, Any]], passed: bool, seconds: float
) -> None:
    """RLlib's release-test summary, to ``$TEST_OUTPUT_JSON``."""
    stats = {k: v for k, v in (last_results[-1] if last_results else {}).items() if k != "config"}
    summary = {
        "time_taken": float(seconds),
        "last_update": float(time.time()),
        "stats": stats,
        "passed": [passed],
        "not_passed": [not passed],
    }
    path = os.environ.get("TEST_OUTPUT_JSON", "/tmp/learning_test.json")
    with open(path, "w", encoding="utf-8") as out:
        json.dump(summary, out, default=str)
