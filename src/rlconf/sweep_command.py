"""``rlconf train`` for an experiment that is a sweep (search spaces in its config, or
``num_samples``): the trials run as a Tune experiment with a live trial table, and the best
trial's searched values, metric and folder are printed at the end."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any, Literal

from rlconf.experiment import Experiment
from rlconf.stop_criteria import lookup
from rlconf.sweep_run import SweepPlan, make_plan
from rlconf.sweep_summary import SweepSummary


def plan_sweep_experiment(
    experiment: Experiment,
    *,
    metric: str,
    mode: Literal["max", "min"],
    max_concurrent: int | None = None,
    name: str | None = None,
    quiet: bool = False,
    log_level: str | None = None,
) -> SweepPlan:
    """The checked plan of the sweep (``rlconf.sweep.run``'s checks: the metric among them),
    made before the runtime is imported."""
    config = experiment.config
    if log_level is not None:
        config = config.copy().debugging(log_level=log_level)  # type: ignore[arg-type]
    return make_plan(
        config,
        stop=experiment.stop,
        metric=metric,
        mode=mode,
        num_samples=experiment.num_samples or 1,
        max_concurrent=max_concurrent,
        scheduler=None,
        name=name,
        local_dir=experiment.local_dir,
        checkpoint_freq=experiment.checkpoint_freq,
        checkpoint_at_end=experiment.checkpoint_at_end,
        keep_checkpoints_num=experiment.keep_checkpoints_num,
        checkpoint_score_attr=experiment.checkpoint_score_attr,
        reuse_actors=None,
        progress=not quiet,
        address=None,
    )


def run_sweep_experiment(experiment: Experiment, plan: SweepPlan) -> int:
    """Run the sweep; 0 when every trial finished, 1 when some failed (the best of the others
    is still printed)."""
    from runtime.sweeps.tune_run import run_sweep

    if not experiment.stop:
        print("no stop criterion given: trials train until interrupted (Ctrl-C)", file=sys.stderr)
    summary = run_sweep(plan)
    searched = _searched(summary)
    print(best_trial_report(summary, searched, experiment.checkpoint_score_attr), flush=True)
    for trial in summary.errors:
        first_line = (trial.error or "").splitlines()[0] if trial.error else "failed"
        print(f"trial {trial.name} failed: {first_line} (see {trial.path})", file=sys.stderr)
    return 1 if summary.errors else 0


def _searched(summary: SweepSummary[Any]) -> list[str]:
    """The keys whose values differ between the trials."""
    dicts = [t.config.to_dict() for t in summary.trials]
    first = dicts[0] if dicts else {}
    return [k for k in first if any(d.get(k) != first[k] for d in dicts[1:])]


def best_trial_report(
    summary: SweepSummary[Any], searched: Sequence[str], score_attr: str | None = None
) -> str:
    best = summary.best_trial
    values = best.config.to_dict()
    lines = [
        f"best trial: {best.name} with {summary.metric}={summary.best_metric:.4g} "
        f"({summary.mode} over {len(summary.trials)} trials)"
    ]
    lines += [f"  {key} = {values[key]!r}" for key in searched]
    steps = lookup(best.metrics, "timesteps_total")
    lines.append(f"  after {best.iterations} iterations, {steps} steps")
    lines.append(f"  config: {best.path}/params.json")
    if best.checkpoint:
        # Which of the trial's checkpoints this is: its best by the score, else its latest.
        which = f" (its best by {score_attr})" if score_attr else ""
        lines.append(f"  checkpoint: {best.checkpoint}{which}")
    lines.append(f"all trials: {summary.path}")
    lines.append(f"  look at them: rlconf plot {summary.path}")
    if best.checkpoint:
        lines.append(
            f"                rlconf evaluate {best.checkpoint} --episodes 10 --no-explore"
        )
    return "\n".join(lines)
