"""Editors that read the source statically complete the fluent methods' keywords.

jedi is the engine of python-lsp-server (Vim, Emacs, Sublime, JupyterLab's LSP), Spyder and
Jupyter's static completion. It reads the generated signatures of ``rlconf.fluent_codegen``:
every keyword with its type and default, and the field's one-line doc in the docstring.
"""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path
from typing import Any

import jedi
import pytest

from rlconf import NOT_SET, AlgorithmConfig
from rlconf.method_parameters import method_parameters
from rlconf.registry import get_config_class, list_algorithms

CLASSES: list[type[AlgorithmConfig]] = [
    AlgorithmConfig,
    *(get_config_class(name) for name in list_algorithms()),
]


def _script(source: str, folder: Path | None = None) -> tuple[jedi.Script, int, int]:
    """A jedi script of ``source`` and the position at its end (1-based line, column)."""
    lines = source.split("\n")
    path = None if folder is None else folder / "user_code.py"
    return jedi.Script(source, path=path), len(lines), len(lines[-1])


def _keywords(source: str, folder: Path | None = None) -> dict[str, Any]:
    script, line, column = _script(source, folder)
    return {c.name: c for c in script.complete(line, column) if c.type == "param"}


def _call(cls: type[AlgorithmConfig], method: str) -> str:
    return f"from {cls.__module__} import {cls.__name__}\n{cls.__name__}().{method}("


def _default_of(param: str) -> str:
    """The default's source text in jedi's ``name: type=default``: after the first ``=`` at
    bracket depth 0 (types have no ``=``)."""
    depth = 0
    for index, char in enumerate(param):
        depth += char in "[({"
        depth -= char in "])}"
        if char == "=" and depth == 0:
            return param[index + 1 :]
    raise AssertionError(f"{param!r} shows no default")


def test_the_ppo_training_keywords_complete_from_a_prefix() -> None:
    # line 2 is 23 characters long: the completion is asked for at its end
    script = jedi.Script("from rlconf import PPOConfig\nPPOConfig().training(cl")
    assert "clip_param=" in [c.name for c in script.complete(2, 23)]


def _constant(cls: type[AlgorithmConfig], method: str, name: str) -> Any:
    """The value of the constant ``name`` that a default of ``cls.<method>`` is written as:
    from the config's module or the generated module of the method (where the config's own
    constants only stand in for type checkers)."""
    generated = inspect.getattr_static(cls, method).__module__
    for module_name in (cls.__module__, generated):
        value = getattr(importlib.import_module(module_name), name, NOT_SET)
        if value is not NOT_SET:
            return value
    raise AssertionError(f"{cls.__name__}.{method}: no constant {name}")


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_every_fluent_method_completes_every_keyword_with_its_type_and_default(
    cls: type[AlgorithmConfig],
) -> None:
    defaults = cls._class_defaults()
    for method in cls._sections:
        params = {p.name: p for p in method_parameters(cls, method)}
        offered = _keywords(_call(cls, method))
        assert set(offered) == {f"{name}=" for name in params}, (cls, method)
        script, line, column = _script(_call(cls, method))
        (signature,) = script.get_signatures(line, column)
        for param in signature.params:
            if param.name == "self":
                continue
            text = param.to_string()
            assert text.startswith(f"{param.name}: "), text
            default = _default_of(text)
            expected = params[param.name].default(defaults)
            try:
                shown = ast.literal_eval(default)
            except ValueError:  # a long default is shown as the module constant it equals
                shown = _constant(cls, method, default)
            assert shown == expected, (cls.__name__, method, param.name, default)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_signature_help_documents_each_parameter(cls: type[AlgorithmConfig]) -> None:
    for method, section in cls._sections.items():
        script, line, column = _script(_call(cls, method))
        (signature,) = script.get_signatures(line, column)
        doc = " ".join(signature.docstring().split())
        assert " ".join(section.doc.split()) in doc, (cls.__name__, method)
        for param in method_parameters(cls, method):
            described = " ".join(f"{param.name}: {param.description}".split())
            assert described in doc, (cls.__name__, method, param.name)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (
            "from rlconf import PPOConfig\n"
            'PPOConfig().environment("CartPole-v1").rollouts(num_workers=2).training(cl',
            "clip_param=",
        ),
        (
            "from rlconf import DQNConfig\nconfig = DQNConfig().resources(num_gpus=0)\n"
            "config.exploration(explore=True).training(doub",
            "double_q=",
        ),
        (
            "from rlconf import A2CConfig\nA2CConfig().training(lr=0.1).training(micro",
            "microbatch_size=",
        ),
        (
            "from rlconf import PGConfig\nPGConfig().framework('torch').rollouts(num_env",
            "num_envs_per_worker=",
        ),
        ("from rlconf import PPOConfig\nPPOConfig().evaluation(evaluation_interval=1).env", None),
    ],
)
def test_chained_calls_complete_the_keywords_of_the_algorithm(
    source: str, expected: str | None
) -> None:
    script, line, column = _script(source)
    names = [c.name for c in script.complete(line, column)]
    if expected is None:  # a method, after a chain
        assert "environment" in names, names
    else:
        assert expected in names, names


def test_a_subclass_of_ppo_config_in_user_code_completes_ppo_and_base_keywords(
    tmp_path: Path,
) -> None:
    source = (
        "from rlconf import PPOConfig\n\n"
        "class MyPPO(PPOConfig):\n"
        '    """My defaults."""\n\n'
        "config = MyPPO().rollouts(num_workers=1)\n"
        "config.training("
    )
    offered = _keywords(source, tmp_path)
    assert {"clip_param=", "gamma=", "lr=", "kl_coeff="} <= set(offered)
    assert "double_q=" not in offered


def test_help_on_a_keyword_shows_its_type_default_and_doc() -> None:
    """What python-lsp-server shows for a keyword: jedi's help (its hover) gives the type and
    default, the signature help the method's docstring with the parameter's line, which it
    shows as that parameter's documentation."""
    source = "from rlconf import PPOConfig\nPPOConfig().training(gamma=0.9, clip_param=0.2)"
    script = jedi.Script(source)
    (name,) = script.help(2, 35)
    assert name.description == "param clip_param: PosFloat=0.3"
    (signature,) = script.get_signatures(2, 45)
    assert signature.params[signature.index].name == "clip_param"
    lines = [line.strip() for line in signature.docstring().splitlines()]
    assert "clip_param: PPO's surrogate clipping range. Default: 0.3." in lines
