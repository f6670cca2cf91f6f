"""Transitions per second replayed from a full 100k-row buffer at batch size 32: the uniform
``ReplayBuffer`` and the ``PrioritizedReplayBuffer``, the latter also with its priorities
updated after every batch (``update_priorities``, as a training step does).

Rows are CartPole-sized DQN transitions (obs / new_obs: 4 float32, actions, rewards,
terminateds, truncateds); for scale, the uniform buffer also with 84x84x4 uint8 obs / new_obs
(stacked Atari frames: copying rows is then most of the cost), in a 10k-row buffer to keep the
benchmark under 2 GB of memory.

Target: >= 200k transitions/s for the uniform buffer; the prioritized one as high as it gets.
Each figure is the median of 5 repetitions of 2 s. Prints one JSON object on its last line.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt
from machine import print_machine

from runtime.buffers import PrioritizedReplayBuffer, ReplayBuffer
from runtime.core.sample_batch import SampleBatch

CAPACITY = 100_000
FRAMES_CAPACITY = 10_000
BATCH = 32
REPEATS = 5
SECONDS = 2.0


def transitions(rows: int, obs: npt.NDArray[Any]) -> SampleBatch:
    rng = np.random.default_rng(0)
    return SampleBatch(
        {
            "obs": obs,
            "new_obs": obs,
            "actions": rng.integers(0, 2, size=rows),
            "rewards": rng.random(rows, dtype=np.float32),
            "terminateds": rng.random(rows) < 0.01,
            "truncateds": np.zeros(rows, dtype=bool),
        }
    )


def cartpole_rows(rows: int) -> SampleBatch:
    return transitions(rows, np.random.default_rng(0).random((rows, 4), dtype=np.float32))


def atari_rows(rows: int) -> SampleBatch:
    frames = np.random.default_rng(0).integers(0, 255, size=(rows, 84, 84, 4), dtype=np.uint8)
    return transitions(rows, frames)


def rate(step: Callable[[], object]) -> float:
    """Transitions per second of ``step`` (one batch of ``BATCH`` rows per call)."""
    step()  # warm-up
    rates = []
    for _ in range(REPEATS):
        calls, start = 0, time.perf_counter()
        while (elapsed := time.perf_counter() - start) < SECONDS:
            for _ in range(100):
                step()
            calls += 100
        rates.append(calls * BATCH / elapsed)
    return statistics.median(rates)


def uniform_rate() -> float:
    buffer = ReplayBuffer(CAPACITY, seed=0)
    buffer.add(cartpole_rows(CAPACITY))
    return rate(lambda: buffer.sample(BATCH))


def prioritized_rates() -> tuple[float, float]:
    """Sampling alone, and sampling followed by ``update_priorities``."""
    buffer = PrioritizedReplayBuffer(CAPACITY, seed=0)
    buffer.add(cartpole_rows(CAPACITY))
    rng = np.random.default_rng(1)
    # Priorities over four orders of magnitude, as TD errors spread.
    buffer.update_priorities(np.arange(CAPACITY), 10.0 ** rng.uniform(-3, 1, CAPACITY))
    td_errors = rng.standard_normal(BATCH)

    def sample_and_update() -> None:
        batch = buffer.sample(BATCH)
        buffer.update_priorities(batch["batch_indexes"], td_errors)

    return rate(lambda: buffer.sample(BATCH)), rate(sample_and_update)


def atari_rate() -> float:
    buffer = ReplayBuffer(FRAMES_CAPACITY, seed=0)
    buffer.add(atari_rows(FRAMES_CAPACITY))
    return rate(lambda: buffer.sample(BATCH))


def main() -> None:
    print_machine()
    prioritized, prioritized_with_update = prioritized_rates()
    figures = {
        "uniform_per_s": uniform_rate(),
        "prioritized_per_s": prioritized,
        "prioritized_with_update_per_s": prioritized_with_update,
        "uniform_atari_frames_per_s": atari_rate(),
    }
    labels = {
        "uniform_per_s": "ReplayBuffer.sample",
        "prioritized_per_s": "PrioritizedReplayBuffer.sample",
        "prioritized_with_update_per_s": "PrioritizedReplayBuffer.sample + update_priorities",
        "uniform_atari_frames_per_s": f"ReplayBuffer.sample, 84x84x4 uint8 obs ({FRAMES_CAPACITY})",
    }
    print(f"buffer of {CAPACITY} rows, batch {BATCH}; target: uniform >= 200000 transitions/s")
    for key, label in labels.items():
        print(f"{label:<62} {figures[key]:>12,.0f} transitions/s")
    print(json.dumps({k: round(v) for k, v in figures.items()}))


if __name__ == "__main__":
    main()
