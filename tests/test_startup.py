"""What the embedded default imports, and Tune support switched on by importing Tune later.

Each case runs in a fresh interpreter: what a process has imported is the point.
"""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest

from tests import child_process
from tests.ray_session import ROOT


def _run(code: str, tmp_path: Path) -> str:
    out = child_process.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"RLCONF_RESULTS_DIR": str(tmp_path), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


def test_the_embedded_default_imports_neither_ray_nor_tune_nor_dynamo(tmp_path: Path) -> None:
    out = _run(
        """
        import json, sys
        from rlconf import PPOConfig
        import runtime
        algo = (
            PPOConfig().environment("CartPole-v1")
            .rollouts(num_workers=0, rollout_fragment_length=64)
            .training(train_batch_size=64, sgd_minibatch_size=32, num_sgd_iter=1).build()
        )
        result = algo.train()
        algo.save()
        algo.stop()
        heavy = ["ray", "ray.tune", "torch._dynamo"]
        print(json.dumps({"loaded": [m for m in heavy if m in sys.modules],
                          "iteration": result["training_iteration"]}))
        """,
        tmp_path,
    )
    report = json.loads(out.splitlines()[-1])
    assert report == {"loaded": [], "iteration": 1}


@pytest.mark.slow
def test_importing_tune_after_runtime_makes_the_algorithms_tune_trainables(
    tmp_path: Path,
) -> None:
    out = _run(
        f"""
        import logging, sys
        import runtime
        from rlconf import PPOConfig
        assert "ray.tune" not in sys.modules
        import ray
        from ray import tune
        from ray.tune.registry import get_trainable_cls
        assert issubclass(runtime.PPO, tune.Trainable)
        ray.init(num_cpus=2, include_dashboard=False, logging_level=logging.ERROR)
        assert get_trainable_cls("PG") is runtime.PG
        config = (
            PPOConfig().environment("CartPole-v1")
            .rollouts(num_workers=0, num_envs_per_worker=2, rollout_fragment_length=32)
            .training(train_batch_size=64, sgd_minibatch_size=32, num_sgd_iter=1)
        )
        results = tune.Tuner(
            runtime.PPO,
            param_space=config,
            run_config=tune.RunConfig(
                storage_path={str(tmp_path)!r}, stop={{"training_iteration": 2}}, verbose=0
            ),
        ).fit()
        ray.shutdown()
        print("errors", len(results.errors), "iterations", results[0].metrics["training_iteration"])
        """,
        tmp_path,
    )
    assert out.splitlines()[-1] == "errors 0 iterations 2"
