"""How many threads torch's CPU kernels use in the learner (driver) process.

``num_cpus_for_driver`` is the CPU share the config gives the learner: Tune reserves it for a
trial, and Ray sets ``OMP_NUM_THREADS`` to each actor's CPUs. The driver gets the same rule
outside Tune, so that it does not spread tiny kernels over every core: on the small networks of
RL policies, two threads made each gradient step a quarter slower than one on a 2-core machine.
An ``OMP_NUM_THREADS`` set by the user wins.
"""

from __future__ import annotations

import math
import os

import torch


def set_learner_threads(num_cpus_for_driver: float) -> None:
    if "OMP_NUM_THREADS" in os.environ:
        return
    threads = max(1, math.ceil(num_cpus_for_driver))
    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)
