"""Ctrl-C in the middle of the test suite: pytest still prints its summary, and nothing the
tests started (Ray's processes included) is left running.

A small suite is written to a temporary folder: a test that starts Ray through
``tests.ray_session.local_ray`` and then waits, between two quick ones. It runs in a child
pytest (plain, and on two pytest-xdist workers as the README's command runs), and once Ray is up
SIGINT goes to the child's process group, as a terminal sends it, or to pytest's own process
only, as ``kill -INT`` does. Every process the child started carries a token in its environment,
so the ones left over are found in ``/proc`` whatever they were re-parented to.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests import child_process

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]

SUITE = """
import os
import time
from pathlib import Path

import ray

from tests.ray_session import local_ray


def test_quick_before() -> None:
    assert True


def test_waits_with_ray_running() -> None:
    with local_ray():
        assert ray.get(ray.put(1)) == 1
        Path(os.environ["READY_FILE"]).touch()
        time.sleep(600)


def test_quick_after() -> None:
    assert True
"""

#: How long to wait for Ray to start in the child, and for the child to end after the signal:
#: bounds on a hung run, not timings (the wait ends as soon as the event happens).
START_WAIT = 300.0
END_WAIT = 120.0


def _processes_with(token: str) -> list[str]:
    """The command lines of the live processes whose environment holds ``token``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if token.encode() in (entry / "environ").read_bytes():
                command = (entry / "cmdline").read_bytes().replace(b"\0", b" ")
                found.append(f"{entry.name}: {command.decode(errors='replace')[:120]}")
        except OSError:  # ended meanwhile, or not ours to read
            continue
    return found


def _kill_all_with(token: str) -> None:
    for line in _processes_with(token):
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(line.split(":")[0]), signal.SIGKILL)


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="reads /proc")
@pytest.mark.parametrize(
    ("workers", "whole_group"),
    [((), True), (("-n", "2", "--dist", "loadfile"), True), (("-n", "2"), False)],
    ids=["plain-ctrl-c", "xdist-ctrl-c", "xdist-kill-int"],
)
def test_an_interrupted_run_prints_its_summary_and_leaves_nothing_running(
    tmp_path: Path, workers: tuple[str, ...], whole_group: bool
) -> None:
    (tmp_path / "test_waiting.py").write_text(SUITE)
    ready = tmp_path / "ready"
    token = uuid.uuid4().hex
    env = dict(os.environ, PYTHONPATH=str(ROOT), READY_FILE=str(ready), RLCONF_RUN_TOKEN=token)
    args = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *workers]
    try:
        with child_process.popen(
            [*args, str(tmp_path / "test_waiting.py")],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        ) as child:
            waited = time.monotonic()
            while not ready.exists():
                assert child.poll() is None, child.communicate()[0]
                assert time.monotonic() - waited < START_WAIT, "Ray never started in the child"
                time.sleep(0.2)
            if whole_group:
                os.killpg(child.pid, signal.SIGINT)
            else:
                os.kill(child.pid, signal.SIGINT)
            output, _ = child.communicate(timeout=END_WAIT)
        assert child.returncode == pytest.ExitCode.INTERRUPTED, output
        assert "KeyboardInterrupt" in output, output
        # The summary line with what ran before the interruption.
        assert " passed in " in output.splitlines()[-1], output
        # Ray's processes end with its shutdown; give them a moment to exit.
        waited = time.monotonic()
        while _processes_with(token) and time.monotonic() - waited < END_WAIT:
            time.sleep(0.5)
        assert _processes_with(token) == []
    finally:
        _kill_all_with(token)
