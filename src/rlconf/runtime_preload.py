"""``preload_runtime``: the runtime imported at the start of a command that trains or evaluates,
without the cyclic garbage collector, then frozen.

Importing the runtime (torch with it) creates a few hundred thousand objects and next to no
garbage. With the collector on, its passes over them find nothing and cost about 150 ms of the
main job's 1.3 s start (``rlconf train``, three full passes among them): as long as its first
6,000 env steps. Turning the collector off only defers those passes to the first collections
after it is back on, since the new objects still have to age through its generations; so the
objects are then frozen (``gc.freeze()``: left out of every later pass, for the rest of the
process), as ``gc``'s documentation suggests for a process's start-up objects. Only for the
processes the CLI owns: a library must not freeze its user's objects.
"""

from __future__ import annotations

import gc
import importlib

#: The module whose import brings in torch and most of the runtime.
RUNTIME_MODULE = "runtime.algorithm"


def preload_runtime() -> None:
    """Import ``RUNTIME_MODULE`` with the collector off, then freeze every object so far and
    turn the collector back on (if it was on). An import that fails is left to the command,
    which reports it where it needs the runtime."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        importlib.import_module(RUNTIME_MODULE)
    except ImportError:
        pass
    finally:
        gc.freeze()
        if was_enabled:
            gc.enable()
