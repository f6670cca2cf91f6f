"""Child processes of the tests: started with the default SIGINT and SIGTERM dispositions, and
killed in a ``finally`` when the test leaves them running.

A process inherits the signals its parent ignores: under nohup, a CI runner or ``trap "" INT``
the test process ignores SIGINT and so would every child it starts, and a test that interrupts
a child would wait for nothing. ``reset_signals`` runs in the child before it executes its
program. Each child leads a process group of its own, so that killing it kills what it started
too (``pyright-langserver`` is a Python wrapper around a node process); its stdin is
``/dev/null`` unless given (a process group other than the terminal's must not read it).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Literal, overload

#: The signals a child gets back their default disposition for.
RESET_SIGNALS = (signal.SIGINT, signal.SIGTERM)

Args = str | Path | Sequence[str | Path]


def reset_signals() -> None:
    """``preexec_fn`` of every child: the default disposition of SIGINT and SIGTERM, whatever
    the test process inherited."""
    for signum in RESET_SIGNALS:
        signal.signal(signum, signal.SIG_DFL)


def start(args: Args, **kwargs: Any) -> subprocess.Popen[Any]:
    """``subprocess.Popen(args, **kwargs)`` with ``reset_signals`` (unless ``preexec_fn`` is
    given), in a process group of its own; pair it with ``kill`` in a ``finally``."""
    kwargs.setdefault("stdin", subprocess.DEVNULL)
    kwargs.setdefault("preexec_fn", reset_signals)
    return subprocess.Popen(args, process_group=0, **kwargs)


def kill(process: subprocess.Popen[Any]) -> None:
    """Kill the child's process group if the child still runs (not after it ended: its id may
    be reused), then wait for it."""
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
    process.wait()


@contextlib.contextmanager
def popen(args: Args, **kwargs: Any) -> Iterator[subprocess.Popen[Any]]:
    """``start``, and ``kill`` when the block ends however it ends (a failed assertion, a
    timeout, Ctrl-C); the pipes are closed."""
    with start(args, **kwargs) as process:
        try:
            yield process
        finally:
            kill(process)


@overload
def run(
    args: Args,
    *,
    text: Literal[True],
    capture_output: bool = ...,
    timeout: float | None = ...,
    check: bool = ...,
    **kwargs: Any,
) -> subprocess.CompletedProcess[str]: ...


@overload
def run(
    args: Args,
    *,
    text: Literal[False] = ...,
    capture_output: bool = ...,
    timeout: float | None = ...,
    check: bool = ...,
    **kwargs: Any,
) -> subprocess.CompletedProcess[bytes]: ...


def run(
    args: Args,
    *,
    text: bool = False,
    capture_output: bool = False,
    timeout: float | None = None,
    check: bool = False,
    **kwargs: Any,
) -> subprocess.CompletedProcess[Any]:
    """``subprocess.run`` through ``popen``: the child is killed if the test stops waiting for
    it (``timeout``, Ctrl-C)."""
    if capture_output:
        kwargs["stdout"] = kwargs["stderr"] = subprocess.PIPE
    with popen(args, text=text, **kwargs) as process:
        stdout, stderr = process.communicate(timeout=timeout)
    done = subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)
    if check:
        done.check_returncode()
    return done
