"""RLlib's new-stack tuned examples (``tests/rllib_new_stack_examples/``: their settings and
calls in scripts of our own, through rlconf's imports) and ``rlconf.testing``, the counterpart
of the helpers they run with.

The slow tier runs each example as a script, in this process's stead (``--no-tune``) with the
env runners' sub-envs on the driver (``--num-env-runners=0``, the examples' runners as sub-envs
where they have several). The examples whose settings have no tuned file of ours that learns
with the same algorithm in the slow tier (DQN's epsilon schedule, n-step range and episode
buffer; SAC's three learning rates) run as RLlib's CI does (``--as-test``) with the stop reward
lowered to one they reach in about half a minute, budgets in env steps, k of n seeds (one must
reach it); the others (PPO, APPO, PPO with an LSTM, multi-agent PPO: their learning is tested
on our tuned files) run an iteration. ``benchmarks/rllib_new_stack_examples.py`` runs all six
to their own stop criteria. The fast tier tests the parser and the runner.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from rlconf import ConfigError, PPOConfig
from rlconf.example_script_config import apply_script_args, gpus_available
from rlconf.sweep_summary import SweepSummary
from rlconf.testing import (
    add_rllib_example_script_args,
    default_stop,
    run_rllib_example_script_experiment,
)
from tests import child_process
from tests.ray_session import local_ray

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "tests" / "rllib_new_stack_examples"


def _args(*flags: str, **defaults: Any) -> argparse.Namespace:
    return add_rllib_example_script_args(**defaults).parse_args(list(flags))


def _small_ppo(tmp_path: Path) -> PPOConfig:
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .training(train_batch_size=200, sgd_minibatch_size=50, model={"fcnet_hiddens": [8]})
        .debugging(logger_config={"logdir": str(tmp_path)}, log_sys_usage=False)
    )


# ------------------------------------------------------------------ the parser


def test_the_parser_has_rllibs_flags_and_the_scripts_defaults() -> None:
    args = _args(default_reward=450.0, default_timesteps=300000, default_iters=7)
    assert (args.stop_reward, args.stop_timesteps, args.stop_iters) == (450.0, 300000, 7)
    assert args.no_tune is False and args.as_test is False and args.num_agents == 0
    assert args.framework == "torch" and args.evaluation_duration == 10
    args = _args(
        "--no-tune",
        "--num-env-runners=3",
        "--num-learners=2",
        "--evaluation-duration=auto",
        "--enable-new-api-stack",
        "--seed=4",
    )
    assert args.num_env_runners == 3 and args.num_learners == 2
    assert args.evaluation_duration == "auto" and args.enable_new_api_stack and args.seed == 4
    assert default_stop(args) == {
        "env_runners/episode_return_mean": 100.0,
        "env_runners/num_env_steps_sampled_lifetime": 100000,
        "training_iteration": 200,
    }


def test_a_scripts_own_parser_is_extended() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--my-flag", type=int, default=3)
    parser = add_rllib_example_script_args(parser)
    parser.set_defaults(num_agents=2)
    args = parser.parse_args(["--my-flag=5"])
    assert args.my_flag == 5 and args.num_agents == 2 and args.stop_reward == 100.0


# ------------------------------------------------------------------ applying the flags


def test_the_flags_set_the_config_as_rllibs_runner_does() -> None:
    config = PPOConfig()
    notes = apply_script_args(
        config,
        _args(
            "--env=CartPole-v1",
            "--num-env-runners=1",
            "--num-envs-per-env-runner=2",
            "--evaluation-interval=2",
            "--evaluation-num-env-runners=1",
            "--evaluation-parallel-to-training",
            "--log-level=INFO",
            "--seed=7",
            "--algo=DQN",
        ),
    )
    assert config["env"] == "CartPole-v1"
    assert config["num_workers"] == 1 and config["num_envs_per_worker"] == 2
    assert config["evaluation_interval"] == 2 and config["evaluation_num_workers"] == 1
    assert config["evaluation_parallel_to_training"] is True
    assert config["log_level"] == "INFO" and config["seed"] == 7
    assert notes == [
        "--algo=DQN: this script's config is PPOConfig, whose algorithm runs (scripts that "
        "pick their config read --algo themselves)"
    ]
    # The config's own env stays; GPUs where the machine has them (none on a CPU machine).
    config = PPOConfig().environment("Pendulum-v1").resources(num_gpus=1)
    apply_script_args(config, _args("--env=CartPole-v1", "--old-api-stack", "--num-gpus=0"))
    assert config["env"] == "Pendulum-v1" and config["num_gpus"] == 0
    if gpus_available() == 0:
        apply_script_args(config, _args("--num-learners=2"))
        assert config["num_learner_workers"] == 2 and config["num_gpus_per_learner_worker"] == 0
        with pytest.raises(
            ValueError, match=r"on 1 learner\(s\) asks for 1 GPU\(s\), but there are 0"
        ):
            apply_script_args(PPOConfig(), _args("--num-gpus-per-learner=1"))
    with pytest.raises(ConfigError, match="driver concatenates the fragments"):
        apply_script_args(PPOConfig(), _args("--num-aggregator-actors-per-learner=2"))


@pytest.mark.parametrize(
    ("flags", "given", "reason"),
    [
        (["--wandb-key=abc"], {}, "WandB logging is not available"),
        (["--local-mode"], {}, "--no-tune --num-env-runners=0"),
        (["--num-gpus=1"], {}, "--num-gpus-per-learner=1 and --num-learners"),
        (["--no-tune", "--num-samples=3"], {}, "with --no-tune one run trains"),
        ([], {"trainable": object}, "the trials run the config's algorithm"),
        ([], {"tune_callbacks": [object()]}, "Tune callbacks are not passed on"),
        ([], {"progress_reporter": object()}, "rlconf's trial table"),
    ],
)
def test_what_cant_act_is_refused_with_the_reason_before_anything_runs(
    flags: list[str], given: dict[str, Any], reason: str
) -> None:
    with pytest.raises(ValueError, match="run_rllib_example_script_experiment") as caught:
        run_rllib_example_script_experiment(PPOConfig(), _args(*flags), **given)
    assert reason in str(caught.value)


def test_an_unknown_stop_key_is_refused_before_training(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="episode_return_mean"):
        run_rllib_example_script_experiment(
            _small_ppo(tmp_path),
            _args("--no-tune"),
            stop={"env_runners/episode_retrun_mean": 100},
        )


# ------------------------------------------------------------------ the runner, --no-tune


def test_no_tune_trains_to_the_stop_dict_and_returns_the_last_result(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = run_rllib_example_script_experiment(
        _small_ppo(tmp_path),
        _args("--no-tune", "--num-env-runners=0", "--stop-iters=2", "--checkpoint-at-end"),
    )
    assert isinstance(result, dict) and result["training_iteration"] == 2
    out = capsys.readouterr().out
    assert "iter=1 steps=200 R=" in out and "iter=2 steps=400 R=" in out
    assert "Stop criterion (training_iteration=2) fulfilled!" in out
    checkpoint = out.split("checkpoint: ", 1)[1].split()[0]
    assert Path(checkpoint).is_dir()
    # A nested stop dict, as RLlib's examples write them too.
    result = run_rllib_example_script_experiment(
        _small_ppo(tmp_path),
        _args("--no-tune", "--num-env-runners=0", "--verbose=0"),
        stop={"env_runners": {"num_env_steps_sampled_lifetime": 200}},
    )
    assert isinstance(result, dict) and result["training_iteration"] == 1
    assert "iter=" not in capsys.readouterr().out


def test_as_test_raises_when_the_success_metric_is_not_reached(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"`env_runners/episode_return_mean` of 500\.0 not"):
        run_rllib_example_script_experiment(
            _small_ppo(tmp_path),
            _args(
                "--no-tune",
                "--num-env-runners=0",
                "--stop-timesteps=200",
                "--stop-reward=500",
                "--as-test",
            ),
        )


def test_as_release_test_writes_rllibs_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    summary = tmp_path / "summary.json"
    monkeypatch.setenv("TEST_OUTPUT_JSON", str(summary))
    run_rllib_example_script_experiment(
        _small_ppo(tmp_path),
        _args("--no-tune", "--num-env-runners=0", "--as-release-test"),
        stop={"training_iteration": 1},
        success_metric={"env_runners/episode_return_mean": 1.0},
    )
    assert "`env_runners/episode_return_mean` of 1.0 reached! ok" in capsys.readouterr().out
    written = json.loads(summary.read_text())
    assert written["passed"] == [True] and written["stats"]["training_iteration"] == 1


def test_save_to_path_and_restore_from_path_as_in_rllibs_getting_started(tmp_path: Path) -> None:
    algo = _small_ppo(tmp_path).env_runners(num_env_runners=0).build_algo()
    try:
        algo.train()
        path = algo.save_to_path(tmp_path / "saved")
        assert Path(path) == tmp_path / "saved" / "checkpoint_000001"
        algo.train()
        algo.restore_from_path(path)
        assert algo.iteration == 1
        assert Path(algo.save_to_path()).parent == Path(algo.logdir)
    finally:
        algo.stop()


# ------------------------------------------------------------------ the runner, through Tune


@pytest.mark.slow
def test_without_no_tune_the_config_runs_as_a_tune_trial(tmp_path: Path) -> None:
    os.environ["RLCONF_RESULTS_DIR"] = str(tmp_path)
    try:
        with local_ray():
            summary = run_rllib_example_script_experiment(
                _small_ppo(tmp_path),
                _args("--num-env-runners=0", "--stop-iters=2", "--stop-reward=1", "--as-test"),
                keep_ray_up=True,
            )
    finally:
        del os.environ["RLCONF_RESULTS_DIR"]
    assert isinstance(summary, SweepSummary)
    (trial,) = summary.trials
    assert trial.status == "TERMINATED" and trial.iterations == 1  # the reward stopped it


# ------------------------------------------------------------------ the examples


@dataclass(frozen=True)
class Lowered:
    """An example run to a lowered stop reward within a budget of env steps."""

    script: str
    reward: float
    budget: int
    flags: tuple[str, ...] = ()
    #: The script fixes its stop dict in code: lowered by ``tests.example_script_child``.
    fixed_stop: bool = False


LOWERED = [
    # Random play returns about 22; the example reaches this within half its budget.
    Lowered("dqn_cartpole.py", 100.0, 25_000),
    # Random play returns about -1300 on Pendulum.
    Lowered("sac_pendulum.py", -700.0, 10_000),
]

#: The examples run for one iteration (``reward``: out of reach, ``budget``: unused).
SHORT = [
    Lowered("ppo_cartpole.py", 1e9, 0),
    Lowered("ppo_multi_agent_cartpole.py", 1e9, 10**9, fixed_stop=True),
    # Its 3 env runners as 3 sub-envs of the driver's.
    Lowered("ppo_stateless_cartpole.py", 1e9, 0, ("--num-envs-per-env-runner=3",)),
    Lowered("appo_cartpole.py", 1e9, 0),
]


def _run_example(
    case: Lowered, seed: int, tmp_path: Path, short: bool = False
) -> subprocess.CompletedProcess[str]:
    flags = [
        "--no-tune",
        "--num-env-runners=0",
        f"--seed={seed}",
        "--verbose=1",
        *case.flags,
        *(["--stop-iters=1"] if short else ["--as-test"]),
    ]
    script = str(EXAMPLES / case.script)
    if case.fixed_stop:
        command = ["-m", "tests.example_script_child", script, str(case.reward), str(case.budget)]
        command += flags
    else:
        command = [script, *flags, f"--stop-reward={case.reward}"]
        if not short:
            command.append(f"--stop-timesteps={case.budget}")
    env = {**os.environ, "RLCONF_RESULTS_DIR": str(tmp_path), "PYTHONPATH": str(ROOT)}
    return child_process.run(
        [sys.executable, *command],
        text=True,
        capture_output=True,
        cwd=ROOT,
        env=env,
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    "case",
    [pytest.param(c, id=c.script.removesuffix(".py")) for c in LOWERED],
)
def test_the_example_reaches_its_lowered_stop_reward(case: Lowered, tmp_path: Path) -> None:
    """One of seeds 0-2 reaches the reward within the budget (``--as-test`` passes)."""
    runs = []
    for seed in (0, 1, 2):
        done = _run_example(case, seed, tmp_path)
        runs.append(
            f"seed {seed}: rc={done.returncode}\n{done.stdout[-1500:]}{done.stderr[-3000:]}"
        )
        if done.returncode == 0:
            assert "reached! ok" in done.stdout
            return
    pytest.fail("no seed reached the lowered reward:\n" + "\n".join(runs))


@pytest.mark.slow
@pytest.mark.parametrize(
    "case",
    [pytest.param(c, id=c.script.removesuffix(".py")) for c in SHORT],
)
def test_the_example_runs_an_iteration(case: Lowered, tmp_path: Path) -> None:
    done = _run_example(case, 0, tmp_path, short=True)
    assert done.returncode == 0, done.stdout[-1500:] + done.stderr[-3000:]
    lines = [x for x in done.stdout.splitlines() if x.startswith("iter=")]
    assert [x.split()[0] for x in lines] == ["iter=1"], done.stdout[-1500:]
