"""Config SDK speed: cold import, one config, and a 10,000-config grid.

Prints its figures as one JSON object on the last line. Targets (2-core machine): import under
0.3 s without torch or ray, one config under 0.5 ms, the 10,000-config grid under 5 s.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time

from machine import print_machine

_IMPORT_PROBE = """
import sys, time
t = time.perf_counter()
import rlconf
elapsed = time.perf_counter() - t
print(elapsed, 'torch' in sys.modules, 'ray' in sys.modules)
"""


def cold_import() -> tuple[float, bool, bool]:
    """Median of fresh interpreters importing rlconf (bytecode already compiled)."""
    runs = []
    for _ in range(7):
        out = subprocess.run(
            [sys.executable, "-c", _IMPORT_PROBE], capture_output=True, text=True, check=True
        ).stdout.split()
        runs.append((float(out[0]), out[1] == "True", out[2] == "True"))
    runs.sort()
    return runs[len(runs) // 2]


def one_config_ms(repeats: int = 2000) -> float:
    from rlconf import PPOConfig

    def build() -> None:
        (
            PPOConfig()
            .environment("CartPole-v1")
            .rollouts(num_workers=2, num_envs_per_worker=8)
            .training(lr=3e-4, gamma=0.99, clip_param=0.2)
            .validate()
            .to_dict()
        )

    for _ in range(50):  # first use builds the validators
        build()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        build()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def grid_seconds() -> tuple[float, int]:
    from rlconf import PPOConfig, sweep

    base = PPOConfig().environment("CartPole-v1")
    start = time.perf_counter()
    configs = sweep.grid(
        base,
        lr=[1e-5 * (i + 1) for i in range(25)],
        gamma=[0.9 + 0.0025 * i for i in range(40)],
        clip_param=[0.1, 0.2, 0.3, 0.4, 0.5],
        num_sgd_iter=[5, 10],
    )
    return time.perf_counter() - start, len(configs)


def main() -> None:
    print_machine()
    import_s, torch_loaded, ray_loaded = cold_import()
    config_ms = one_config_ms()
    grid_s, grid_size = grid_seconds()
    figures = {
        "import_s": round(import_s, 4),
        "import_loaded_torch": torch_loaded,
        "import_loaded_ray": ray_loaded,
        "one_config_ms": round(config_ms, 4),
        "grid_configs": grid_size,
        "grid_s": round(grid_s, 3),
    }
    print(
        f"cold import rlconf: {import_s:.3f} s (torch loaded: {torch_loaded}, "
        f"ray loaded: {ray_loaded}); target < 0.3 s"
    )
    print(
        f"PPOConfig() + 3 setters + validate() + to_dict(): {config_ms:.3f} ms median; "
        "target < 0.5 ms"
    )
    print(f"grid of {grid_size} configs expanded and validated: {grid_s:.2f} s; target < 5 s")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
