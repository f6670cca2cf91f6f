"""The runtime reads the algorithm config by key in one place only
(``runtime.core.settings.settings_of``): every component declares the settings it reads as a
dataclass built once when it is built. This walks the runtime's source and fails on any other
``config[...]`` or ``config.get(...)`` read; and a key a component needs that a config lacks is
an error at build naming the component."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from rlconf import PPOConfig
from rlconf.errors import ConfigError
from runtime.core.settings import setting, settings_of

RUNTIME = Path(__file__).resolve().parents[1] / "src" / "runtime"
#: The one building step.
ALLOWED = {RUNTIME / "core" / "settings.py"}
#: Names of dicts that are not the algorithm config (an env's own config, a model or exploration
#: dict typed by its TypedDict, the logger's options, a replay buffer's settings).
NOT_THE_CONFIG = {
    "env_config",
    "model_config",
    "custom_model_config",
    "exploration_config",
    "logger_config",
    "replay_buffer_config",
    "buffer_config",
}


def _receiver_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _is_config(node: ast.expr) -> bool:
    name = _receiver_name(node)
    if name is None or name in NOT_THE_CONFIG:
        return False
    return name == "config" or name.endswith("_config") or name in ("resolved", "merged")


def config_reads(source: str) -> list[tuple[int, str]]:
    """``(line, text)`` of each string-key read of something named like the config."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Subscript) and _is_config(node.value):
            if isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
                found.append((node.lineno, ast.unparse(node)))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and _is_config(node.func.value)
        ):
            found.append((node.lineno, ast.unparse(node)))
    return found


def test_the_walker_finds_subscript_and_get_reads() -> None:
    source = (
        "x = config['lr']\n"
        "y = self.config.get('tau', 1.0)\n"
        "z = eval_config['explore']\n"
        "w = env_config['length']\n"
        "v = config.get_rollout_fragment_length()\n"
    )
    assert [line for line, _ in config_reads(source)] == [1, 2, 3]


def test_no_component_reads_the_config_by_key() -> None:
    offenders = []
    for path in sorted(RUNTIME.rglob("*.py")):
        if path in ALLOWED:
            continue
        for line, text in config_reads(path.read_text()):
            offenders.append(f"{path.relative_to(RUNTIME)}:{line}: {text}")
    assert not offenders, "config read by key outside settings_of:\n" + "\n".join(offenders)


@dataclasses.dataclass(frozen=True)
class _Needs:
    lr: float
    lambda_: float = setting("lambda")
    use_critic: bool = False


def test_settings_are_built_from_the_config_and_a_missing_key_names_the_component() -> None:
    built = settings_of(_Needs, PPOConfig().training(lr=0.5, lambda_=0.9), "MyLearner")
    assert built == _Needs(lr=0.5, lambda_=0.9, use_critic=True)

    @dataclasses.dataclass(frozen=True)
    class Wants:
        tau: float

    with pytest.raises(ConfigError, match=r"(?s)MyStep.*tau.*PPOConfig has no such key"):
        settings_of(Wants, PPOConfig(), "MyStep")
