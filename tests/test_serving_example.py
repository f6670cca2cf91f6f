"""The serving example learns: ``examples/serving/cartpole_server.py`` (PPO with a
``PolicyServerInput`` and no env) reaches a mean return of 150 on the episodes that
``cartpole_client.py`` runs in another process, within a step budget, with remote and with
local inference."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests import child_process

#: The slow tier (`python -m pytest -m slow`): Ray sessions with remote actors, clusters and Tune.
pytestmark = pytest.mark.slow

SERVING = Path(__file__).resolve().parents[1] / "examples" / "serving"
#: Env steps the server may take to reach the return (it takes about 15k-25k).
STEP_BUDGET = 60_000
STOP_REWARD = 150


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(port: int, server: subprocess.Popen[str], log: Path) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if server.poll() is not None:
            pytest.fail(f"the server exited ({server.returncode}):\n{log.read_text()[-3000:]}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.2)
    pytest.fail(f"the server did not listen within 120 s:\n{log.read_text()[-3000:]}")


# Remote inference learns here; local inference (rows reported by the client, weights pulled)
# is covered by tests/test_policy_server.py, and learns in about 21k steps by hand.
@pytest.mark.parametrize("mode", ["remote"])
def test_the_ppo_server_learns_from_a_client(mode: str, tmp_path: Path) -> None:
    port = free_port()
    token = "serving-test"
    server_log, client_log = tmp_path / "server.log", tmp_path / "client.log"
    with server_log.open("w") as server_out, client_log.open("w") as client_out:
        server = child_process.start(
            [
                sys.executable,
                str(SERVING / "cartpole_server.py"),
                f"--port={port}",
                f"--token={token}",
                f"--stop-reward={STOP_REWARD}",
                f"--stop-timesteps={STEP_BUDGET}",
            ],
            stdout=server_out,
            stderr=subprocess.STDOUT,
            text=True,
            cwd=tmp_path,
        )
        client = None
        try:
            wait_for_port(port, server, server_log)
            client = child_process.start(
                [
                    sys.executable,
                    str(SERVING / "cartpole_client.py"),
                    f"--port={port}",
                    f"--token={token}",
                    f"--inference-mode={mode}",
                    "--update-interval=1.0",
                ],
                stdout=client_out,
                stderr=subprocess.STDOUT,
                text=True,
                cwd=tmp_path,
            )
            try:
                server.wait(timeout=540)
            except subprocess.TimeoutExpired:
                pytest.fail(f"the server ran past 540 s:\n{server_log.read_text()[-3000:]}")
            output = server_log.read_text()
            assert server.returncode == 0, output[-4000:] + client_log.read_text()[-2000:]
            assert "reached mean return" in output
            # The client saw the server go and ended by itself.
            client.wait(timeout=60)
            assert client.returncode == 0, client_log.read_text()[-3000:]
        finally:
            if client is not None:
                child_process.kill(client)
            child_process.kill(server)
