"""The embedded default (no remote workers) needs neither Ray nor tensorboardX.

A child process makes every ``ray``, ``ray.*`` and ``tensorboardX`` import fail, as in a Python
where they are not installed, before it imports rlconf; then it imports every runtime module
(``runtime.sweeps`` aside: sweeps are Ray Tune experiments), builds PPO and DQN on CartPole with
``num_workers=0``, trains an iteration of each, saves a checkpoint and restores it.
"""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

from tests import child_process

CHILD = textwrap.dedent(
    """
    import importlib
    import importlib.abc
    import io
    import json
    import logging
    import pathlib
    import pkgutil
    import sys

    MISSING = ("ray", "tensorboardX")

    class NotInstalled(importlib.abc.MetaPathFinder):
        def find_spec(self, fullname, path, target=None):
            if fullname.split(".")[0] in MISSING:
                raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)
            return None

    sys.meta_path.insert(0, NotInstalled())
    log = io.StringIO()
    logging.basicConfig(stream=log, level=logging.WARNING)

    import runtime
    from rlconf import DQNConfig, PPOConfig

    for module in pkgutil.walk_packages(runtime.__path__, "runtime."):
        if not module.name.startswith("runtime.sweeps"):
            importlib.import_module(module.name)

    report = {}
    for config in (
        PPOConfig().training(train_batch_size=400, sgd_minibatch_size=100, num_sgd_iter=2),
        DQNConfig(),
    ):
        algo = config.environment("CartPole-v1").rollouts(num_workers=0).build()
        result = algo.train()
        path = algo.save()
        weights = algo.get_policy().get_weights()
        algo.train()
        algo.restore(path)
        restored = algo.get_policy().get_weights()
        logdir = algo.logdir
        algo.stop()
        report[type(algo).__name__] = {
            "timesteps": result["timesteps_total"],
            "restored": all((weights[k] == restored[k]).all() for k in weights),
            "iteration": algo.iteration,
            "files": sorted(p.name for p in pathlib.Path(logdir).iterdir()),
        }
    report["imported"] = sorted(n for n in sys.modules if n.split(".")[0] in MISSING)
    report["log"] = log.getvalue()
    print(json.dumps(report))
    """
)


def test_ppo_and_dqn_train_save_and_restore_without_ray_and_tensorboardx(tmp_path: Path) -> None:
    done = child_process.run(
        [sys.executable, "-c", CHILD],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).resolve().parent.parent,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["imported"] == []
    for name in ("PPO", "DQN"):
        run = report[name]
        assert run["timesteps"] > 0 and run["restored"] and run["iteration"] == 1, run
        assert {"params.json", "result.json", "progress.csv", "checkpoint_000001"} <= set(
            run["files"]
        )
        assert not any(f.startswith("events.out.tfevents") for f in run["files"]), run
    # The results logger says once per process that it skips the TensorBoard files.
    assert report["log"].count("tensorboardX is not installed") == 1, report["log"]


def test_the_child_really_cannot_import_ray() -> None:
    """The finder the child installs makes ``import ray`` fail even where Ray is installed."""
    probe = CHILD.split("sys.meta_path.insert(0, NotInstalled())")[0]
    done = child_process.run(
        [sys.executable, "-c", probe + "sys.meta_path.insert(0, NotInstalled())\nimport ray"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1 and "No module named 'ray'" in done.stderr
