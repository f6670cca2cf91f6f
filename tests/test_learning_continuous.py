"""Learning tests of the off-policy actor-critics (SAC, TD3, DDPG) on their tuned files: fixed
seeds, env-step budgets with margin, never a wall-clock limit (see tests/test_learning.py).
Each counts the greedy evaluation (10 episodes, explore=false, after every 1,000 sampled
steps), as the tuned files' stop criterion does; one run also goes on past its solve point
and must stay solved."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rlconf.experiment import load_experiments

#: The slow tier (`python -m pytest -m slow`): learning to a target.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]


def _greedy_curve(
    file: str, seed: int, target: float, budget: int, past: int = 0, save: Path | None = None
) -> list[Any]:
    """(env steps, greedy evaluation mean) after each iteration of ``file`` with ``seed``,
    until the evaluation reaches ``target`` and ``past`` more env steps have been sampled, or
    ``budget`` steps; with ``save``, a checkpoint goes there where `rlconf train -f file`
    would have ended with one: after the first iteration that met the file's evaluation stop
    criterion (its end if none did)."""
    (experiment,) = load_experiments(ROOT / file)
    stop = float(experiment.stop["evaluation/episode_reward_mean"])
    algo = experiment.config.copy().debugging(seed=seed).build()
    curve: list[tuple[int, float]] = []
    solved_at = None
    try:
        while True:
            result = algo.train()
            steps = int(result["timesteps_total"])
            curve.append((steps, float(result["evaluation"]["episode_reward_mean"])))
            if save is not None and curve[-1][1] >= stop:
                algo.save(str(save))
                save = None
            if solved_at is None and curve[-1][1] >= target:
                solved_at = steps
            if steps >= budget or (solved_at is not None and steps >= solved_at + past):
                if save is not None:
                    algo.save(str(save))
                return curve
    finally:
        algo.stop()


def _solve_point(
    seed: int, curve: list[Any], target: float, budget: int, past: int
) -> tuple[int, float]:
    """(env steps, evaluation) where ``curve`` first reached ``target`` (its end if never).
    With ``past``, every evaluation from there on must stay at ``target`` or better, for
    ``past`` more env steps (or to the budget)."""
    solved = [i for i, (_, score) in enumerate(curve) if score >= target]
    if solved and past:
        after = curve[solved[0] :]
        assert after[-1][0] >= after[0][0] + past or after[-1][0] >= budget, curve
        assert all(score >= target for _, score in after), f"seed {seed} fell back: {curve}"
    point: tuple[int, float] = curve[solved[0]] if solved else curve[-1]
    return point


def _one_of_three(file: str, target: float, budget: int, past: int = 0) -> None:
    """Seeds 0, 1, 2 until one reaches ``target`` within ``budget`` env steps (k of n: see
    tests/test_learning.py). With ``past``, that seed goes on for ``past`` more env steps, and
    every evaluation from its first solve on must stay at ``target`` or better."""
    runs: list[tuple[int, int, float]] = []
    for seed in (0, 1, 2):
        curve = _greedy_curve(file, seed, target, budget, past=past)
        runs.append((seed, *_solve_point(seed, curve, target, budget, past)))
        if runs[-1][2] >= target:
            return
    raise AssertionError(f"none of 3 seeds reached {target} within {budget}: {runs}")


def test_tuned_td3_reaches_minus_250_on_pendulum_and_stays() -> None:
    """examples/tuned/pendulum-td3.yaml: greedy -250 at 3k-5k env steps on seeds 0-4, and above
    it at every evaluation after that to 20k; the budget is 20k, and the first seed to solve
    must stay solved for 1k more env steps (one more evaluation)."""
    _one_of_three("examples/tuned/pendulum-td3.yaml", -250.0, 20_000, past=1_000)


def test_tuned_ddpg_reaches_minus_250_on_pendulum() -> None:
    """examples/tuned/pendulum-ddpg.yaml: greedy -250 at 4k-5k env steps on seeds 0-4, and above
    it at every evaluation after that to 20k; the budget is 20k."""
    _one_of_three("examples/tuned/pendulum-ddpg.yaml", -250.0, 20_000)


def test_tuned_discrete_sac_reaches_150_on_cartpole() -> None:
    """examples/tuned/cartpole-sac.yaml: greedy 150 at 2k-4k env steps on seeds 0-4; the budget
    is 50k."""
    _one_of_three("examples/tuned/cartpole-sac.yaml", 150.0, 50_000)


def test_tuned_sac_reaches_minus_250_on_pendulum_and_its_checkpoint_evaluates_so(
    tmp_path: Path,
) -> None:
    """examples/tuned/pendulum-sac.yaml: greedy -250 at 3k env steps on seeds 0, 1, 3, 4 and 4k
    on seed 2 (avx512 and avx2 kernels; the default ones: 3k on 0, 1, 4), and above it at every
    evaluation after that to 20k (lowest: -243); the budget is 10k, one of seeds 0-2 must
    reach it (k of n: see tests/test_learning.py). The first seed to solve
    goes on for 1k more env steps (one more evaluation) and must stay solved; then the
    issue's "done when" on it: the checkpoint `rlconf train -f` ends with (where the file's
    stop, -200, is first met: 4k env steps), evaluated as `rlconf evaluate <checkpoint>
    --episodes 10 --no-explore` does (other episodes than the training's evaluation saw), shows
    -250 or better."""
    import json

    from rlconf.cli import main

    file, target = "examples/tuned/pendulum-sac.yaml", -250.0
    runs: list[tuple[int, int, float]] = []
    checkpoint = None
    for seed in (0, 1, 2):
        save = tmp_path / f"seed{seed}"
        curve = _greedy_curve(file, seed, target, 10_000, past=1_000, save=save)
        runs.append((seed, *_solve_point(seed, curve, target, 10_000, 1_000)))
        if runs[-1][2] >= target:
            checkpoint = max(save.glob("checkpoint_*"))
            break
    assert checkpoint is not None, f"none of 3 seeds reached {target} within 10k: {runs}"
    report = tmp_path / "returns.json"
    args = ["evaluate", str(checkpoint), "--episodes", "10", "--no-explore", "--out", str(report)]
    assert main(args) == 0
    returns = json.loads(report.read_text())["episode_returns"]
    assert len(returns) == 10
    assert sum(returns) / len(returns) >= target, returns
