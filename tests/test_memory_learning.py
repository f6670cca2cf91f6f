"""Learning tests of models with memory, on tasks a memoryless policy can't solve: fixed
seeds, 1 of 3 reaching the target within a budget, never a wall-clock limit (see
``tests/test_learning.py``).

RepeatAfterMeEnv with ``repeat_delay`` 2 pays +1 for acting the token shown two steps before
and -1 otherwise: without memory the best mean return over its 100 steps is 0 (chance).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from rlconf import AlgorithmConfig, PPOConfig
from rlconf.cli import main
from rlconf.experiment import load_experiments
from tests.test_learning import _k_of_n

#: The slow tier (`python -m pytest -m slow`): learning to a target.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
RLLIB_FILE = ROOT / "tests" / "data" / "rllib_tuned" / "ppo" / "repeatafterme-ppo-lstm.yaml"
STATELESS_FILE = ROOT / "examples" / "tuned" / "stateless-cartpole-ppo-lstm.yaml"

sys.path.insert(0, str(ROOT / "examples"))


def test_rllibs_lstm_file_learns_with_only_its_env_path_changed(tmp_path: Path) -> None:
    """RLlib's repeatafterme-ppo-lstm.yaml as written (its stop: a mean return of 50 within
    100k env steps), run by ``rlconf train`` with ``--env`` naming rlconf's copy of the env and
    a seed. Measured: 56k env steps (seed 0)."""
    runs: list[tuple[int, int, float]] = []
    for seed in (0, 1, 2):
        folder = tmp_path / f"seed{seed}"
        argv = [
            "train",
            "-f",
            str(RLLIB_FILE),
            "--framework",
            "torch",
            "--env",
            "runtime.example_envs.RepeatAfterMeEnv",
            "--config",
            json.dumps({"seed": seed}),
            "--local-dir",
            str(folder),
        ]
        assert main(argv) == 0
        (result_file,) = folder.glob("*/result.json")
        last: dict[str, Any] = json.loads(result_file.read_text().splitlines()[-1])
        runs.append((seed, int(last["timesteps_total"]), float(last["episode_reward_mean"])))
        if sum(reward >= 50 for _, _, reward in runs) >= 2:
            break
    assert sum(reward >= 50 for _, _, reward in runs) >= 2, runs


def test_the_attention_net_learns_to_repeat_after_me() -> None:
    """A GTrXL of one unit (dim 32, 10 steps of memory) reaches a mean return of 50 within a
    budget of 100k env steps. Measured: 32k env steps (seed 0)."""

    def config(seed: int) -> PPOConfig:
        return (
            PPOConfig()
            .environment("runtime.example_envs.RepeatAfterMeEnv", env_config={"repeat_delay": 2})
            .rollouts(num_workers=0, num_envs_per_worker=20)
            .training(
                gamma=0.9,
                lr=3e-4,
                num_sgd_iter=5,
                entropy_coeff=1e-5,
                model={
                    "fcnet_hiddens": [64],
                    "vf_share_layers": True,
                    "use_attention": True,
                    "attention_dim": 32,
                    "attention_memory_inference": 10,
                    "attention_memory_training": 10,
                    "max_seq_len": 10,
                },
            )
            .debugging(seed=seed)
        )

    _k_of_n(config, 50.0, 100_000)


def test_the_stateless_cartpole_file_reaches_450() -> None:
    """examples/tuned/stateless-cartpole-ppo-lstm.yaml (CartPole without velocities: the LSTM
    has to infer them) reaches a mean return of 450 within its budget of 300k env steps.
    Measured on seeds 0-2 (default kernels, one thread): 84.7k, 123.6k, 117.2k env steps. Seed
    1 runs only if seed 0 or 2 misses: it took the most steps."""
    (experiment,) = load_experiments(STATELESS_FILE)
    assert experiment.stop["timesteps_total"] == 300_000

    def config(seed: int) -> AlgorithmConfig:
        return experiment.config.copy().debugging(seed=seed)

    _k_of_n(config, 450.0, 300_000, seeds=(0, 2, 1))
