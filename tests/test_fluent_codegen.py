"""The generated fluent methods are current, and the generator works on a user's module."""

from __future__ import annotations

import importlib
import inspect
import sys
from collections.abc import Iterator
from pathlib import Path

import jedi
import pytest

from rlconf import ConfigError, PPOConfig
from rlconf.fluent_codegen import BEGIN, END, default_modules, generated_methods, main, stale


def test_the_generated_methods_of_the_built_in_configs_are_current() -> None:
    assert stale(default_modules()) == [], "run: python -m rlconf.fluent_codegen"


def test_check_mode_exits_0_when_current() -> None:
    assert main(["--check"]) == 0


def test_a_subclass_generates_only_what_differs_from_its_parent() -> None:
    assert generated_methods(PPOConfig) == ["training"]


USER_MODULE = f'''"""A user's config with a field of its own."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field

from rlconf import PPOConfig
from rlconf.algorithms.ppo import PPO_MODEL_DEFAULTS, PPO_TRAINING, PPOTrainingArgs
from rlconf.field_types import (
    JsonDict,
    NonNegFloat,
    NonNegInt,
    PosFloat,
    PosInt,
    Schedule,
    UnitFloat,
)
from rlconf.fluent import SelfConfig, fluent
from rlconf.model_config import ModelConfigDict
from rlconf.section import Section


class MyTrainingArgs(PPOTrainingArgs, total=False):
    bonus_coeff: Annotated[PosFloat, Field(description="Weight of the curiosity bonus.")]


class MyConfig(PPOConfig):
    """PPO with a curiosity bonus."""

    __slots__ = ()
    _sections: ClassVar[dict[str, Section]] = {{
        **PPOConfig._sections,
        "training": PPO_TRAINING.with_fields(MyTrainingArgs, {{"bonus_coeff": 0.1}}),
    }}
    _algo_defaults: ClassVar[dict[str, Any]] = {{**PPOConfig._algo_defaults, "num_workers": 1}}

{BEGIN}
{END}
'''


@pytest.fixture
def user_module(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    name = "user_configs_for_codegen"
    path = tmp_path / f"{name}.py"
    path.write_text(USER_MODULE)
    sys.path.insert(0, str(tmp_path))
    try:
        yield name, path
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop(name, None)


def test_the_generator_writes_a_user_modules_methods_which_work_and_complete(
    user_module: tuple[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    name, path = user_module
    assert main(["--check", name]) == 1
    assert "stale" in capsys.readouterr().out
    assert main([name]) == 0
    text = path.read_text()
    assert "def training(" in text and "bonus_coeff: PosFloat = 0.1," in text
    assert "def rollouts(" in text and "num_workers: NonNegInt = 1," in text
    assert "def resources(" not in text  # the same as PPOConfig's
    assert main(["--check", name]) == 0

    sys.modules.pop(name, None)
    module = importlib.import_module(name)
    config = module.MyConfig().training(bonus_coeff=0.5, lr=0.01)
    assert config["bonus_coeff"] == 0.5 and config["lr"] == 0.01
    assert config["clip_param"] == 0.3  # not passed: left as it was
    assert inspect.signature(module.MyConfig.training).parameters["bonus_coeff"].default == 0.1
    with pytest.raises(ConfigError, match=r"bonus_coef: unknown key \(did you mean 'bonus_coeff'"):
        module.MyConfig().training(bonus_coef=1.0)

    source = f"from {name} import MyConfig\nMyConfig().rollouts(num_workers=2).training(bon"
    script = jedi.Script(source, path=path.parent / "main.py")
    assert "bonus_coeff=" in [c.name for c in script.complete(2, len(source.split("\n")[1]))]


def test_a_missing_import_is_reported_with_the_line_to_add(
    user_module: tuple[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    name, path = user_module
    path.write_text(path.read_text().replace("from rlconf.fluent import SelfConfig, fluent\n", ""))
    assert main([name]) == 2
    assert "add\nfrom rlconf.fluent import SelfConfig, fluent\n" in capsys.readouterr().err
    assert BEGIN + "\n" + END in path.read_text()  # nothing written


def test_a_class_without_the_markers_is_reported(
    user_module: tuple[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    name, path = user_module
    path.write_text(path.read_text().replace(BEGIN + "\n", "").replace(END + "\n", ""))
    assert main([name]) == 2
    assert "class MyConfig has no region for its fluent methods" in capsys.readouterr().err
