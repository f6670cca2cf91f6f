"""``rlconf train`` and ``rlconf evaluate`` import the runtime with the cyclic collector off and
then freeze what the import made (``rlconf.runtime_preload``): no collection runs during the
import, none of its objects is scanned afterwards, and the collector is back on. Each case runs
in a child process: freezing is for a process the CLI owns, not for the test session."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests import child_process
from tests.ray_session import ROOT

PRELOAD = """
import gc, json, sys
from rlconf.runtime_preload import preload_runtime
collections = []
gc.callbacks.append(lambda phase, info: phase == "stop" and collections.append(info["generation"]))
if sys.argv[1] == "off":
    gc.disable()
preload_runtime()
print(json.dumps({
    "imported": "runtime.algorithm" in sys.modules and "torch" in sys.modules,
    "collections": len(collections),
    "enabled": gc.isenabled(),
    "frozen": gc.get_freeze_count(),
}))
"""


def _preload(collector: str) -> dict[str, object]:
    out = child_process.run(
        [sys.executable, "-c", PRELOAD, collector],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    result: dict[str, object] = json.loads(out.stdout)
    return result


def test_the_runtime_imports_without_a_collection_and_its_objects_are_frozen() -> None:
    result = _preload("on")
    assert result["imported"] is True
    assert result["collections"] == 0
    assert result["enabled"] is True
    frozen = result["frozen"]
    assert isinstance(frozen, int) and frozen > 100_000  # torch's objects among them


def test_a_collector_that_was_off_stays_off() -> None:
    result = _preload("off")
    assert result["collections"] == 0 and result["enabled"] is False


COMMAND = """
import sys
import rlconf.cli as cli
called = []
def preload():
    called.append(True)
    raise SystemExit(0)  # what would follow needs the runtime
cli.preload_runtime = preload
sys.argv = ["rlconf", *sys.argv[1:]]
try:
    cli.run()
except SystemExit:
    pass
print(bool(called))
"""


@pytest.mark.parametrize(
    ("argv", "preloads"),
    [
        (["train", "-f", "examples/tuned/cartpole-ppo.yaml"], True),
        (["evaluate", "{tmp}"], True),
        (["list"], False),
        (["config", "PPO"], False),
    ],
)
def test_only_the_commands_that_build_an_algorithm_preload_the_runtime(
    argv: list[str], preloads: bool, tmp_path: Path
) -> None:
    out = child_process.run(
        [sys.executable, "-c", COMMAND, *(word.replace("{tmp}", str(tmp_path)) for word in argv)],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        timeout=120,
    )
    assert out.stdout.strip().splitlines()[-1] == str(preloads)
