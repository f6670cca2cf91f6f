"""CPU and memory use reported in every result when ``log_sys_usage`` is set (Tune's ``perf``
keys), read from the OS without psutil."""

from __future__ import annotations

import os
import resource
import sys
import time


class SystemUsage:
    """``sample()`` -> the usage since the previous sample."""

    def __init__(self) -> None:
        self._wall = time.monotonic()
        self._cpu = time.process_time()

    def sample(self) -> dict[str, float]:
        wall, cpu = time.monotonic(), time.process_time()
        cores = os.cpu_count() or 1
        usage = {
            # This process's share of all cores since the last sample.
            "cpu_util_percent": 100.0 * (cpu - self._cpu) / max(wall - self._wall, 1e-9) / cores,
            "process_rss_mb": _rss_mb(),
        }
        self._wall, self._cpu = wall, cpu
        ram = _ram_util_percent()
        if ram is not None:
            usage["ram_util_percent"] = ram
        return usage


def _rss_mb() -> float:
    """Resident memory now (Linux), or the peak where /proc is missing."""
    try:
        with open("/proc/self/statm") as statm:
            pages = int(statm.read().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak / 2**20 if sys.platform == "darwin" else peak / 2**10


def _ram_util_percent() -> float | None:
    """The machine's memory in use, as a percentage (None where /proc/meminfo is missing)."""
    try:
        with open("/proc/meminfo") as meminfo:
            fields = {line.split(":")[0]: int(line.split()[1]) for line in meminfo}
        return 100.0 * (1 - fields["MemAvailable"] / fields["MemTotal"])
    except (OSError, ValueError, KeyError, IndexError, ZeroDivisionError):
        return None
