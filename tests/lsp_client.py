"""A minimal Language Server Protocol client, to ask a real language server (pyright's) what
an editor would show: completions, hover and signature help at a position of a file."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path
from queue import Empty, Queue
from typing import IO, Any

from tests import child_process


def _read_message(stream: IO[bytes]) -> dict[str, Any] | None:
    length = None
    while True:
        line = stream.readline()
        if not line:
            return None
        if line in (b"\r\n", b"\n"):
            break
        name, _, value = line.decode("ascii").partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
    if length is None:
        return None
    message: dict[str, Any] = json.loads(stream.read(length))
    return message


class LanguageServer:
    """A language server process on stdio, with one file open at a time.

    Requests the server sends (configuration, progress tokens) are answered: with the Python
    interpreter of this process for the ``python`` section, so the server finds rlconf where
    the tests find it, and with nothing for the rest.
    """

    def __init__(
        self,
        command: list[str],
        root: Path,
        timeout_s: float = 120.0,
        env: dict[str, str] | None = None,
    ) -> None:
        self._process = child_process.start(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        try:
            self._start(root, timeout_s)
        except BaseException:
            child_process.kill(self._process)
            raise

    def _start(self, root: Path, timeout_s: float) -> None:
        self._timeout_s = timeout_s
        self._next_id = 0
        self._responses: Queue[dict[str, Any]] = Queue()
        self._reader = threading.Thread(target=self._read_all, daemon=True)
        self._reader.start()
        self.request(
            "initialize",
            {
                "processId": None,
                "rootUri": root.as_uri(),
                "workspaceFolders": [{"uri": root.as_uri(), "name": "user"}],
                "capabilities": {
                    "workspace": {"configuration": True},
                    "textDocument": {
                        "completion": {
                            "completionItem": {"documentationFormat": ["plaintext"]},
                        },
                        "hover": {"contentFormat": ["plaintext"]},
                        "signatureHelp": {
                            "signatureInformation": {"documentationFormat": ["plaintext"]}
                        },
                    },
                },
            },
        )
        self.notify("initialized", {})

    def _send(self, message: dict[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        stdin = self._process.stdin
        assert stdin is not None
        stdin.write(f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
        stdin.flush()

    def _settings(self, section: str | None) -> Any:
        if section == "python":
            return {"pythonPath": sys.executable}
        return {}

    def _read_all(self) -> None:
        stdout = self._process.stdout
        assert stdout is not None
        while (message := _read_message(stdout)) is not None:
            if "id" in message and "method" in message:  # a request of the server's
                result: Any = None
                if message["method"] == "workspace/configuration":
                    items = message["params"]["items"]
                    result = [self._settings(item.get("section")) for item in items]
                self._send({"id": message["id"], "result": result})
            elif "id" in message:
                self._responses.put(message)

    def request(self, method: str, params: dict[str, Any]) -> Any:
        self._next_id += 1
        self._send({"id": self._next_id, "method": method, "params": params})
        while True:
            try:
                response = self._responses.get(timeout=self._timeout_s)
            except Empty:
                raise TimeoutError(f"{method}: no answer in {self._timeout_s} s") from None
            if response.get("id") == self._next_id:
                if "error" in response:
                    raise RuntimeError(f"{method}: {response['error']}")
                return response.get("result")

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self._send({"method": method, "params": params})

    def open(self, path: Path, text: str) -> None:
        self.notify(
            "textDocument/didOpen",
            {
                "textDocument": {
                    "uri": path.as_uri(),
                    "languageId": "python",
                    "version": 1,
                    "text": text,
                }
            },
        )

    def at(self, method: str, path: Path, line: int, character: int) -> Any:
        """``textDocument/<method>`` at a 0-based line and character."""
        return self.request(
            f"textDocument/{method}",
            {
                "textDocument": {"uri": path.as_uri()},
                "position": {"line": line, "character": character},
            },
        )

    def close(self) -> None:
        try:
            self.request("shutdown", {})
            self.notify("exit", {})
            self._process.wait(timeout=10)
        except (OSError, TimeoutError, RuntimeError, subprocess.TimeoutExpired):
            pass
        finally:
            child_process.kill(self._process)
