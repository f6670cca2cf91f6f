"""The machine a benchmark ran on, printed above its numbers: CPU model and cores, Python and
torch versions, torch's CPU kernels (``ATEN_CPU_CAPABILITY`` as set, and the kernel set torch
picked), torch's threads, and CUDA (version, GPUs) when torch has it.

    from machine import print_machine
    info = print_machine()  # prints "machine: ..." lines; returns the same as a dict
"""

from __future__ import annotations

import os
import platform
import sys
from pathlib import Path
from typing import Any

import torch


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``), or what ``platform`` knows of it."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def usable_cores() -> int:
    """The cores this process may run on (its affinity), which a container may limit."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def machine() -> dict[str, Any]:
    info: dict[str, Any] = {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "usable_cores": usable_cores(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "ATEN_CPU_CAPABILITY": os.environ.get("ATEN_CPU_CAPABILITY", "default"),
        "kernels": torch.backends.cpu.get_cpu_capability(),
        "threads": torch.get_num_threads(),
        "interop_threads": torch.get_num_interop_threads(),
        "cuda": torch.version.cuda,
        "cuda_available": torch.cuda.is_available(),
        "gpus": [],
    }
    if info["cuda_available"]:
        info["gpus"] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    return info


def print_machine(file: Any = None) -> dict[str, Any]:
    """Print ``machine()`` as two or three lines; returns it."""
    info = machine()
    out = file or sys.stdout
    print(
        f"machine: {info['cpu']}, {info['cores']} cores ({info['usable_cores']} usable), "
        f"Python {info['python']}",
        file=out,
    )
    # (Unset, torch picks the best kernel set the CPU has; "default" set is the slowest.)
    capability = (
        f"ATEN_CPU_CAPABILITY={os.environ['ATEN_CPU_CAPABILITY']}"
        if "ATEN_CPU_CAPABILITY" in os.environ
        else "ATEN_CPU_CAPABILITY unset"
    )
    print(
        f"machine: torch {info['torch']}, {capability} "
        f"(kernels {info['kernels']}), {info['threads']} threads "
        f"({info['interop_threads']} inter-op)",
        file=out,
    )
    if info["cuda_available"]:
        print(f"machine: CUDA {info['cuda']}, GPUs: {', '.join(info['gpus'])}", file=out)
    else:
        built = f"torch built with CUDA {info['cuda']}" if info["cuda"] else "a CPU-only torch"
        print(f"machine: CUDA absent ({built}, no GPU available)", file=out)
    return info
