"""Run one of RLlib's example scripts with its own stop dict lowered, for scripts that fix their
stop dict in code (``stop = {...}``, where ``--stop-reward`` can't reach it).

    python -m tests.example_script_child SCRIPT REWARD BUDGET [script flags...]

The script is loaded as a module (``runpy``, its ``__main__`` block not run) with the flags as
its command line; its ``stop`` dict's return keys are set to REWARD and its env-step key to
BUDGET, and its ``config`` and ``args`` go to ``run_rllib_example_script_experiment`` as the
script's ``__main__`` block hands them.
"""

from __future__ import annotations

import runpy
import sys
from typing import Any

from rlconf.metrics import EPISODE_RETURN_MEAN, NUM_ENV_STEPS_SAMPLED_LIFETIME
from rlconf.testing import run_rllib_example_script_experiment


def lowered(stop: dict[str, Any], reward: float, budget: int) -> dict[str, Any]:
    """``stop`` with every return key at ``reward`` and every env-step key at ``budget``."""
    out = {}
    for key, value in stop.items():
        if key.endswith(EPISODE_RETURN_MEAN):
            value = reward
        elif key.endswith(NUM_ENV_STEPS_SAMPLED_LIFETIME):
            value = budget
        out[key] = value
    return out


def main(argv: list[str]) -> None:
    script, reward, budget, *flags = argv
    sys.argv = [script, *flags]
    namespace = runpy.run_path(script, run_name="rllib_example")
    stop = lowered(dict(namespace["stop"]), float(reward), int(budget))
    run_rllib_example_script_experiment(namespace["config"], namespace["args"], stop=stop)


if __name__ == "__main__":
    main(sys.argv[1:])
