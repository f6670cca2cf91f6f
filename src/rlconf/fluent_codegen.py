"""Writes each config class's fluent methods with explicit parameters, from its sections.

Editors that read the source without running it (jedi: python-lsp-server, Vim, Emacs,
Sublime, Spyder, Jupyter's static completion) don't understand ``**kwargs: Unpack[...]``, so
the fluent methods of the built-in configs are generated code: every field a keyword with its
type (the annotation of the section's TypedDict, ``Annotated`` metadata removed), its default
for that class, and a Google-style docstring with the field's one-line description. The
sections stay the one source of truth; a class's generated region lies between the two marker
comments, and holds the methods whose signature differs from the one the class inherits.

    python -m rlconf.fluent_codegen            # rewrite the regions of the built-in configs
    python -m rlconf.fluent_codegen --check    # exit 1 when a region is not up to date
    python -m rlconf.fluent_codegen my.configs # the config classes of your own module

The names an annotation uses must be imported by the class's module; what is missing is
reported with the import to add.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import inspect
import os
import re
import sys
import textwrap
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import typing_extensions

from rlconf.algorithm_config import AlgorithmConfig
from rlconf.frozen import thaw
from rlconf.section import Section, key_of

BEGIN = "    # <fluent methods: generated from the sections by python -m rlconf.fluent_codegen>"
END = "    # </fluent methods>"
_INDENT = " " * 4
_WIDTH = 100
#: Defaults whose literal is longer than this are written as the module constant equal to them.
_LONGEST_LITERAL = 48
_BUILTIN_NAMES = frozenset({"bool", "int", "float", "str", "dict", "list", "tuple", "type", "None"})


class CodegenError(Exception):
    """The generated methods can't be written: the message says what to change."""


@dataclass(frozen=True)
class Annotation:
    """A field's type as source text, and the names that text needs: ``{name: import line}``."""

    text: str
    imports: Mapping[str, str]


def _class_node(module: ModuleType, name: str) -> ast.ClassDef:
    tree = ast.parse(inspect.getsource(module))
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return node
    raise CodegenError(f"{module.__name__}: no class {name} at module level")


def _strip_annotated(node: ast.expr) -> ast.expr:
    """``Annotated[X, ...]`` -> ``X``, wherever it occurs in the expression."""

    class Strip(ast.NodeTransformer):
        def visit_Subscript(self, sub: ast.Subscript) -> ast.AST:
            if isinstance(sub.value, ast.Name) and sub.value.id == "Annotated":
                inner = sub.slice.elts[0] if isinstance(sub.slice, ast.Tuple) else sub.slice
                stripped: ast.AST = self.visit(inner)
                return stripped
            self.generic_visit(sub)
            return sub

    stripped: ast.expr = Strip().visit(node)
    return stripped


def _import_line(module: ModuleType, name: str) -> str:
    """How ``module`` gets ``name``: its own import statement, or ``from module import name``."""
    for node in ast.parse(inspect.getsource(module)).body:
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                if (alias.asname or alias.name) == name and alias.asname is None:
                    return f"from {node.module} import {name}"
    return f"from {module.__name__} import {name}"


def field_annotation(fields: type, name: str) -> Annotation:
    """The annotation of field ``name`` as written in the TypedDict that declares it."""
    module = sys.modules[fields.__module__]
    for statement in _class_node(module, fields.__name__).body:
        if (
            isinstance(statement, ast.AnnAssign)
            and isinstance(statement.target, ast.Name)
            and statement.target.id == name
        ):
            node = _strip_annotated(statement.annotation)
            text = re.sub(r"'([^'\"\\]*)'", r'"\1"', ast.unparse(node))
            used = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} - _BUILTIN_NAMES
            return Annotation(text, {n: _import_line(module, n) for n in sorted(used)})
    for base in getattr(fields, "__orig_bases__", ()):
        if typing_extensions.is_typeddict(base) and name in base.__annotations__:
            return field_annotation(base, name)
    raise CodegenError(f"{fields.__qualname__}: no field {name}")


def _declaring_modules(fields: type) -> list[ModuleType]:
    """The modules of a TypedDict and of the TypedDicts it extends: where its defaults are."""
    found = [sys.modules[fields.__module__]]
    for base in getattr(fields, "__orig_bases__", ()):
        if typing_extensions.is_typeddict(base):
            found += [m for m in _declaring_modules(base) if m not in found]
    return found


def _literal(value: Any) -> str | None:
    """Source text of a JSON-like value; None for anything else."""
    if value is None or isinstance(value, bool | int | float):
        return repr(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list | tuple):
        items = [_literal(v) for v in value]
        if None in items:
            return None
        inner = ", ".join(str(i) for i in items)
        if isinstance(value, list):
            return f"[{inner}]"
        return f"({inner},)" if len(items) == 1 else f"({inner})"
    if isinstance(value, dict):
        pairs = [(_literal(k), _literal(v)) for k, v in value.items()]
        if any(k is None or v is None for k, v in pairs):
            return None
        return "{" + ", ".join(f"{k}: {v}" for k, v in pairs) + "}"
    return None


def _constant_named(value: Any, module: ModuleType) -> str | None:
    for name, candidate in vars(module).items():
        if name.isupper() and type(candidate) is type(value) and candidate == value:
            return name
    return None


def default_text(
    value: Any, module: ModuleType, elsewhere: Iterable[ModuleType], where: str
) -> tuple[str, dict[str, str]]:
    """A default as source, and the import it needs: a short literal, or the constant equal to
    it of ``module`` or, failing that, of one of the modules ``elsewhere``."""
    literal = _literal(value)
    if literal is not None and len(literal) <= _LONGEST_LITERAL:
        return literal, {}
    for source in (module, *elsewhere):
        name = _constant_named(value, source)
        if name is not None:
            return name, {name: _import_line(source, name)}
    raise CodegenError(
        f"{where}: the default {literal or repr(value)} is too long to write in a signature; "
        f"give it a name in {module.__name__} (an UPPER_CASE constant equal to it)"
    )


def _wrapped(text: str, first: str, rest: str) -> list[str]:
    return textwrap.wrap(
        text,
        width=_WIDTH,
        initial_indent=first,
        subsequent_indent=rest,
        break_long_words=False,
        break_on_hyphens=False,
    )


def render_method(cls: type[AlgorithmConfig], method: str) -> tuple[str, dict[str, str]]:
    """The source of ``cls.<method>``, and the imports its annotations need."""
    section: Section = cls._sections[method]
    module = sys.modules[cls.__module__]
    defaults = cls._class_defaults()
    body = 2 * _INDENT
    params = [f"{body}self: SelfConfig,", f"{body}/,"]
    docs = []
    imports = {
        "fluent": "from rlconf.fluent import fluent",
        "SelfConfig": "from rlconf.fluent import SelfConfig",
    }
    keyword_only = False
    for name in section.ordered_names:
        if name not in section.positional and not keyword_only:
            params.append(f"{body}*,")
            keyword_only = True
        annotation = field_annotation(section.fields, name)
        imports.update(annotation.imports)
        default, needed = default_text(
            thaw(defaults[key_of(name)]),
            module,
            _declaring_modules(section.fields),
            f"{cls.__name__}.{method}({name}=...)",
        )
        imports.update(needed)
        noqa = "  # noqa: B006" if default.startswith(("[", "{")) else ""
        params.append(f"{body}{name}: {annotation.text} = {default},{noqa}")
        docs.extend(
            _wrapped(
                f"{name}: {section.description(name)} Default: {default}.",
                3 * _INDENT,
                4 * _INDENT,
            )
        )
    lines = [
        f"{_INDENT}@fluent",
        f"{_INDENT}def {method}(",
        *params,
        f"{_INDENT}) -> SelfConfig:",
        *_wrapped(f'"""{section.doc}', body, body),
    ]
    if docs:
        lines += ["", f"{body}Args:", *docs]
    lines += [f'{body}"""', f'{body}return self._set("{method}", locals())']
    return "\n".join(lines) + "\n", imports


def _config_bases(cls: type[AlgorithmConfig]) -> list[type[AlgorithmConfig]]:
    return [c for c in cls.__mro__[1:] if isinstance(c, type) and issubclass(c, AlgorithmConfig)]


def generated_methods(cls: type[AlgorithmConfig]) -> list[str]:
    """The fluent methods ``cls`` defines in its region: those whose signature differs from
    the one the nearest config class above it generates (all of them for the root)."""
    bases = _config_bases(cls)
    if not bases:
        return list(cls._sections)
    chosen = []
    for method in cls._sections:
        owner = next((b for b in bases if method in generated_methods(b)), None)
        if owner is None or render_method(cls, method)[0] != render_method(owner, method)[0]:
            chosen.append(method)
    return chosen


def render_region(cls: type[AlgorithmConfig]) -> tuple[str, dict[str, str]]:
    """The text between the markers of ``cls``, and the imports it needs."""
    parts, imports = [], {}
    for method in generated_methods(cls):
        text, needed = render_method(cls, method)
        parts.append(text)
        imports.update(needed)
    return "\n".join(parts), imports


def _missing_imports(module: ModuleType, imports: Mapping[str, str]) -> list[str]:
    """The imports ``module`` lacks for the names the generated code uses, one line per
    source module."""
    missing: dict[str, list[str]] = {}
    for name, line in imports.items():
        source_module = line.split()[1]
        wanted = getattr(importlib.import_module(source_module), name, None)
        if name not in vars(module) or (wanted is not None and vars(module)[name] is not wanted):
            missing.setdefault(source_module, []).append(name)
    return [
        f"from {source} import {', '.join(sorted(names))}"
        for source, names in sorted(missing.items())
    ]


def _replace_region(source: str, cls_name: str, region: str, path: Path) -> str:
    lines = source.splitlines(keepends=True)
    start = next(
        (i for i, line in enumerate(lines) if re.match(rf"class {cls_name}\b", line)), None
    )
    if start is None:
        raise CodegenError(f"{path}: no class {cls_name}")
    try:
        begin = next(i for i in range(start, len(lines)) if lines[i].rstrip("\n") == BEGIN)
        end = next(i for i in range(begin, len(lines)) if lines[i].rstrip("\n") == END)
    except StopIteration:
        raise CodegenError(
            f"{path}: class {cls_name} has no region for its fluent methods; put the two lines\n"
            f"{BEGIN}\n{END}\ninto its body"
        ) from None
    following_class = next(
        (i for i in range(start + 1, begin) if re.match(r"class \w", lines[i])), None
    )
    if following_class is not None:
        raise CodegenError(
            f"{path}: the first fluent-method region after class {cls_name} is not in it"
        )
    return "".join(lines[: begin + 1]) + region + "".join(lines[end:])


def config_classes(module: ModuleType) -> list[type[AlgorithmConfig]]:
    """The config classes defined in ``module``, parents first."""
    found = [
        obj
        for obj in vars(module).values()
        if isinstance(obj, type)
        and issubclass(obj, AlgorithmConfig)
        and obj.__module__ == module.__name__
    ]
    return sorted(found, key=lambda c: len(c.__mro__))


def default_modules() -> list[str]:
    """The module of ``AlgorithmConfig`` and those of every registered built-in config."""
    from rlconf.registry import get_config_class, list_algorithms

    names = {AlgorithmConfig.__module__}
    names.update(get_config_class(n).__module__ for n in list_algorithms())
    return sorted(n for n in names if n.startswith("rlconf."))


def generate(module_name: str) -> tuple[Path, str, str]:
    """``(file, current text, generated text)`` of one module."""
    module = importlib.import_module(module_name)
    path = Path(inspect.getfile(module))
    current = path.read_text(encoding="utf-8")
    text = current
    imports: dict[str, str] = {}
    for cls in config_classes(module):
        region, needed = render_region(cls)
        imports.update(needed)
        if region or BEGIN in text:
            text = _replace_region(text, cls.__name__, region, path)
    missing = _missing_imports(module, imports)
    if missing:
        raise CodegenError(
            f"{path}: the generated signatures use names this module doesn't import; add\n"
            + "\n".join(missing)
        )
    return path, current, text


def stale(module_names: Iterable[str]) -> list[Path]:
    """The files whose generated methods differ from what the sections give."""
    return [path for path, current, text in map(generate, module_names) if current != text]


def _write_atomically(path: Path, text: str) -> None:
    partial = path.with_name(f".{path.name}.partial")
    partial.write_text(text, encoding="utf-8")
    os.replace(partial, path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m rlconf.fluent_codegen",
        description="Write the fluent methods of config classes from their sections.",
    )
    parser.add_argument("modules", nargs="*", help="modules to update (default: the built-ins)")
    parser.add_argument("--check", action="store_true", help="only report stale files")
    args = parser.parse_args(argv)
    names = args.modules or default_modules()
    try:
        results = [generate(name) for name in names]
    except CodegenError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    changed = [path for path, current, text in results if current != text]
    if args.check:
        for path in changed:
            print(f"{path}: the generated fluent methods are stale; run {parser.prog}")
        return 1 if changed else 0
    for path, current, text in results:
        if current != text:
            _write_atomically(path, text)
            print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
