"""pyright, the engine of VS Code's Pylance, on user code: its language server completes the
fluent keywords and shows each parameter's one-line doc; its checker reports typos and wrong
types. Skipped where the machine has no pyright (``pip install pyright`` brings it, with Node.js
on the machine)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import child_process
from tests.lsp_client import LanguageServer

#: The PyPI package of pyright would otherwise ask PyPI for a newer version on every start.
ENV = {**os.environ, "PYRIGHT_PYTHON_IGNORE_WARNINGS": "1"}


def _pyright_missing() -> str | None:
    if shutil.which("pyright") is None or shutil.which("pyright-langserver") is None:
        return "pyright is not installed (pip install pyright, or npm install -g pyright)"
    try:
        child_process.run(
            ["pyright", "--version"], check=True, capture_output=True, timeout=120, env=ENV
        )
    except (OSError, subprocess.SubprocessError) as error:
        return f"pyright does not run here: {error}"
    return None


pytestmark = pytest.mark.skipif(_pyright_missing() is not None, reason=str(_pyright_missing()))

HEAD = """from rlconf import DQNConfig, PPOConfig


class MyPPO(PPOConfig):
    pass


"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LanguageServer, Path]]:
    root = tmp_path_factory.mktemp("pyright_user")
    language_server = LanguageServer(["pyright-langserver", "--stdio"], root, env=ENV)
    try:
        yield language_server, root
    finally:
        language_server.close()


def _ask(server: tuple[LanguageServer, Path], method: str, code: str) -> Any:
    """Open a file of HEAD + ``code`` and ask ``method`` where ``code`` has its ``|``."""
    language_server, root = server
    text = HEAD + code
    line = text[: text.index("|")].count("\n")
    character = len(text[: text.index("|")].rsplit("\n", 1)[-1])
    path = root / f"user_{abs(hash(code))}.py"
    path.write_text(text.replace("|", ""))
    language_server.open(path, text.replace("|", ""))
    return language_server.at(method, path, line, character)


def _labels(result: Any) -> list[str]:
    items = result["items"] if isinstance(result, dict) else result
    return [item["label"] for item in items]


def test_the_language_server_completes_keywords_of_a_chained_call_on_a_subclass(
    server: tuple[LanguageServer, Path],
) -> None:
    labels = _labels(_ask(server, "completion", "MyPPO().rollouts(num_workers=1).training(cl|)\n"))
    assert "clip_param=" in labels, labels


def test_the_language_server_completes_dqn_keywords(server: tuple[LanguageServer, Path]) -> None:
    labels = _labels(_ask(server, "completion", "DQNConfig().training(|)\n"))
    assert {"double_q=", "n_step=", "gamma=", "lr="} <= set(labels), labels


def test_hover_shows_the_parameter_and_its_doc(server: tuple[LanguageServer, Path]) -> None:
    hover = _ask(server, "hover", "PPOConfig().training(clip|_param=0.2)\n")
    text = hover["contents"]["value"]
    assert "clip_param: PosFloat" in text, text
    assert "PPO's surrogate clipping range. Default: 0.3." in text, text


def test_signature_help_shows_defaults_and_the_active_parameters_doc(
    server: tuple[LanguageServer, Path],
) -> None:
    help_ = _ask(server, "signatureHelp", "PPOConfig().training(gamma=0.9, clip_param=|)\n")
    signature = help_["signatures"][0]
    assert "clip_param: PosFloat = 0.3" in signature["label"], signature["label"]
    assert "gamma: UnitFloat = 0.99" in signature["label"], signature["label"]
    index = help_.get("activeParameter", signature.get("activeParameter"))
    active = signature["parameters"][index]
    assert active["label"] == "clip_param: PosFloat = 0.3", active
    assert "PPO's surrogate clipping range" in active["documentation"]["value"], active


def test_the_checker_reports_a_misspelt_keyword_and_a_wrong_type(tmp_path: Path) -> None:
    (tmp_path / "user_code.py").write_text(
        "from rlconf import PPOConfig\n"
        "PPOConfig().training(lrr=1e-3)\n"
        'PPOConfig().rollouts(num_workers="2")\n'
        "PPOConfig().training(lr=1e-3).rollouts(num_workers=2)\n"
    )
    (tmp_path / "pyrightconfig.json").write_text(
        json.dumps({"pythonPath": sys.executable, "include": ["user_code.py"]})
    )
    done = child_process.run(
        ["pyright", "--outputjson"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env=ENV,
    )
    report = json.loads(done.stdout)
    errors = {
        (d["range"]["start"]["line"], d["message"].splitlines()[0])
        for d in report["generalDiagnostics"]
        if d["severity"] == "error"
    }
    lines = sorted(line for line, _ in errors)
    assert lines == [1, 2], errors
    assert any("lrr" in message for line, message in errors if line == 1), errors
    assert any("num_workers" in message for line, message in errors if line == 2), errors
