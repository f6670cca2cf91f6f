"""Writes each config class's fluent methods with explicit parameters, from its sections, into a
generated mixin that the class inherits.

Editors that read the source without running it (jedi: python-lsp-server, Vim, Emacs,
Sublime, Spyder, Jupyter's static completion) don't understand ``**kwargs: Unpack[...]``, so
the fluent methods of the built-in configs are generated code: every field a keyword with its
type (the annotation of the section's TypedDict, ``Annotated`` metadata removed), its default
for that class, and a Google-style docstring with the field's one-line description. The
sections stay the one source of truth, and a config's own module holds only what a person
wrote.

The config classes of module ``pkg.mod`` get their methods from ``pkg.mod_fluent``, a file
beside it; the built-in configs' are in ``rlconf/generated/`` (``rlconf.algorithms.ppo`` ->
``rlconf.generated.ppo_fluent``). There each class has a mixin, ``<Class>Fluent``, with the
methods whose signature differs from the one the class inherits, and the class names it first
among its bases, so that its methods come before those of the parent config:

    from pkg.mod_fluent import MyConfigFluent

    class MyConfig(MyConfigFluent, PPOConfig): ...

The generator runs before that module exists (or while it is out of date): it imports the config
module with a stand-in for it.

    python -m rlconf.fluent_codegen            # rewrite the mixins of the built-in configs
    python -m rlconf.fluent_codegen --check    # exit 1 when one is not up to date
    python -m rlconf.fluent_codegen my.configs # the mixins of the config classes of your module
"""

from __future__ import annotations

import argparse
import ast
import copy
import functools
import importlib
import importlib.util
import inspect
import os
import re
import sys
import textwrap
import traceback
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import typing_extensions

from rlconf.algorithm_config import AlgorithmConfig
from rlconf.method_parameters import method_parameters
from rlconf.section import Section

PROG = "python -m rlconf.fluent_codegen"
_INDENT = " " * 4
_WIDTH = 100
#: Defaults whose literal is longer than this are written as the module constant equal to them.
_LONGEST_LITERAL = 48
_BUILTIN_NAMES = frozenset({"bool", "int", "float", "str", "dict", "list", "tuple", "type", "None"})
_PACKAGE = "rlconf"


class CodegenError(Exception):
    """The generated methods can't be written: the message says what to change."""


@dataclass(frozen=True)
class Annotation:
    """A field's type as source text, and the names that text needs: ``{name: module}``."""

    text: str
    imports: Mapping[str, str]


@dataclass
class Rendered:
    """Generated source, the names it needs (``{name: module to import it from}``) and those of
    them it uses as defaults (which must exist when the methods are defined)."""

    text: str
    imports: dict[str, str] = field(default_factory=dict)
    defaults: set[str] = field(default_factory=set)

    def add(self, other: Rendered) -> None:
        for name, module in other.imports.items():
            _need(self.imports, name, module)
        self.defaults |= other.defaults


def _need(imports: dict[str, str], name: str, module: str) -> None:
    if imports.setdefault(name, module) != module:
        raise CodegenError(
            f"the generated code needs {name} from both {imports[name]} and {module}; "
            "give one of them another name"
        )


# ---------------------------------------------------------------- where the mixins go


def mixin_module_name(module_name: str) -> str:
    """The generated module of the config classes of ``module_name``."""
    if module_name.startswith(f"{_PACKAGE}."):
        return f"{_PACKAGE}.generated.{module_name.rpartition('.')[2]}_fluent"
    return f"{module_name}_fluent"


def mixin_path(module_name: str) -> Path:
    """The file of ``mixin_module_name(module_name)`` (the config module is not imported)."""
    last = module_name.rpartition(".")[2]
    if module_name.startswith(f"{_PACKAGE}."):
        return Path(__file__).parent / "generated" / f"{last}_fluent.py"
    spec = importlib.util.find_spec(module_name)
    if spec is None or spec.origin is None:
        raise CodegenError(f"no module named {module_name!r}")
    source = Path(spec.origin)
    folder = source.parent.parent if source.name == "__init__.py" else source.parent
    return folder / f"{last}_fluent.py"


def mixin_class_name(cls: type) -> str:
    return f"{cls.__name__}Fluent"


# ---------------------------------------------------------------- one method


@functools.lru_cache(maxsize=64)
def _parsed(source: str) -> ast.Module:
    """The tree of a module's source: a generation asks for the same few modules' trees
    thousands of times (once per field annotation), and parsing was nine tenths of its time.
    Keyed by the text, so a module edited between two generations is parsed again."""
    return ast.parse(source)


def _class_node(module: ModuleType, name: str) -> ast.ClassDef:
    tree = _parsed(inspect.getsource(module))
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return node
    raise CodegenError(f"{module.__name__}: no class {name} at module level")


def _strip_annotated(node: ast.expr) -> ast.expr:
    """``Annotated[X, ...]`` -> ``X``, wherever it occurs in the expression."""

    class Strip(ast.NodeTransformer):
        def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
            if isinstance(node.value, ast.Name) and node.value.id == "Annotated":
                inner = node.slice.elts[0] if isinstance(node.slice, ast.Tuple) else node.slice
                stripped: ast.AST = self.visit(inner)
                return stripped
            self.generic_visit(node)
            return node

    stripped: ast.expr = Strip().visit(node)
    return stripped


def _import_source(module: ModuleType, name: str) -> str:
    """Where to import ``name`` from: the module ``module`` imports it from, or ``module``."""
    for node in _parsed(inspect.getsource(module)).body:
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                if alias.name == name and alias.asname in (None, name):
                    return node.module
    return module.__name__


def field_annotation(fields: type, name: str) -> Annotation:
    """The annotation of field ``name`` as written in the TypedDict that declares it."""
    return _field_annotation(fields, name, inspect.getsource(sys.modules[fields.__module__]))


@functools.lru_cache(maxsize=4096)
def _field_annotation(fields: type, name: str, source: str) -> Annotation:
    # ``source`` (the declaring module's text) is in the key only: an edited module is read
    # afresh.
    module = sys.modules[fields.__module__]
    for statement in _class_node(module, fields.__name__).body:
        if (
            isinstance(statement, ast.AnnAssign)
            and isinstance(statement.target, ast.Name)
            and statement.target.id == name
        ):
            # A copy: the transformer edits in place, and the parsed tree is shared.
            node = _strip_annotated(copy.deepcopy(statement.annotation))
            text = re.sub(r"'([^'\"\\]*)'", r'"\1"', ast.unparse(node))
            used = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} - _BUILTIN_NAMES
            return Annotation(text, {n: _import_source(module, n) for n in sorted(used)})
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
    """A default as source, and the import it needs (``{name: module}``): a short literal, or
    the constant equal to it of ``module`` or, failing that, of one of the modules
    ``elsewhere``."""
    literal = _literal(value)
    if literal is not None and len(literal) <= _LONGEST_LITERAL:
        return literal, {}
    for source in (module, *elsewhere):
        name = _constant_named(value, source)
        if name is not None:
            return name, {name: _import_source(source, name)}
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


def render_method(cls: type[AlgorithmConfig], method: str) -> Rendered:
    """The source of ``cls.<method>`` (indented for a class body), and the names it needs."""
    section: Section = cls._sections[method]
    module = sys.modules[cls.__module__]
    bases = [sys.modules[c.__module__] for c in _config_bases(cls)]
    defaults = cls._class_defaults()
    body = 2 * _INDENT
    params = [f"{body}self: SelfConfig,", f"{body}/,"]
    docs = []
    rendered = Rendered("", {"fluent": "rlconf.fluent", "SelfConfig": "rlconf.fluent"})
    keyword_only = False
    for param in method_parameters(cls, method):
        name = param.name
        if not param.positional and not keyword_only:
            params.append(f"{body}*,")
            keyword_only = True
        # A keyword that sets another section's key (or an inert key) is typed as that key.
        declared = param.section or section
        # Another name its section types itself (a value turned into the key's) is that.
        typed = name if name in declared.hints else param.field
        annotation = (
            field_annotation(declared.fields, typed)
            if param.section is not None
            else Annotation(param.type_text, {})
        )
        default, needed = default_text(
            param.default(defaults),
            module,
            _declaring_modules(declared.fields) + bases,
            f"{cls.__name__}.{method}({name}=...)",
        )
        rendered.add(Rendered("", dict(annotation.imports)))
        rendered.add(Rendered("", needed, set(needed)))
        noqa = "  # noqa: B006" if default.startswith(("[", "{")) else ""
        params.append(f"{body}{name}: {annotation.text} = {default},{noqa}")
        docs.extend(
            _wrapped(
                f"{name}: {param.description} Default: {default}.",
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
    rendered.text = "\n".join(lines) + "\n"
    return rendered


# ---------------------------------------------------------------- one class


def _config_bases(cls: type[AlgorithmConfig]) -> list[type[AlgorithmConfig]]:
    return [c for c in cls.__mro__[1:] if isinstance(c, type) and issubclass(c, AlgorithmConfig)]


def generated_methods(cls: type[AlgorithmConfig]) -> list[str]:
    """The fluent methods of the mixin of ``cls``: those whose signature differs from the one
    the nearest config class above it generates (all of them for the root). A method written
    by hand, in ``cls`` or in the nearest class above it that has the method, is left alone."""
    bases = _config_bases(cls)
    chosen = []
    for method in cls._sections:
        if method in vars(cls):
            continue
        owner = next(
            (b for b in bases if method in vars(b) or method in generated_methods(b)), None
        )
        if owner is None or (method not in vars(owner) and _differs(cls, owner, method)):
            chosen.append(method)
    return chosen


def _differs(cls: type[AlgorithmConfig], other: type[AlgorithmConfig], method: str) -> bool:
    return render_method(cls, method).text != render_method(other, method).text


def _parent(cls: type[AlgorithmConfig]) -> type[AlgorithmConfig] | None:
    """The config class that ``cls`` names first among its bases (None for the root)."""
    return next((b for b in cls.__bases__ if issubclass(b, AlgorithmConfig)), None)


def _inherits_mixin(cls: type[AlgorithmConfig], mixin_module: str, path: Path) -> bool:
    """Whether ``cls`` names its mixin among its bases; an error when it does so after a
    config class, whose methods would then hide the mixin's."""
    bases = cls.__bases__
    name = mixin_class_name(cls)
    at = next(
        (i for i, b in enumerate(bases) if (b.__module__, b.__name__) == (mixin_module, name)),
        None,
    )
    if at is None:
        return False
    first_config = next(
        (i for i, b in enumerate(bases) if issubclass(b, AlgorithmConfig)), len(bases)
    )
    if at > first_config:
        raise CodegenError(
            f"{path}: class {cls.__name__} names {name} after {bases[first_config].__name__}, "
            f"whose methods would hide it; write\n{_class_line(cls)}"
        )
    return True


def _class_line(cls: type[AlgorithmConfig]) -> str:
    name = mixin_class_name(cls)
    others = [b.__name__ for b in cls.__bases__ if b.__name__ != name]
    return f"class {cls.__name__}({', '.join([name, *others])}):"


def render_mixin(cls: type[AlgorithmConfig]) -> Rendered:
    """The mixin class of ``cls``, and the names it needs (its parent's among them)."""
    parent = _parent(cls)
    rendered = Rendered("")
    methods = []
    for method in generated_methods(cls):
        text = render_method(cls, method)
        rendered.add(text)
        methods.append(text.text)
    if parent is None:
        head = f"class {mixin_class_name(cls)}:"
        doc = f"The fluent methods of {cls.__name__}."
    else:
        _need(rendered.imports, parent.__name__, parent.__module__)
        head = f"class {mixin_class_name(cls)}({_parent_alias(cls)}):"
        doc = (
            f"The fluent methods of {cls.__name__} whose signature differs from the one it "
            f"inherits from {parent.__name__}."
        )
    lines = [head, *_wrapped(f'"""{doc}"""', _INDENT, _INDENT), "", f"{_INDENT}__slots__ = ()"]
    rendered.text = "\n".join(lines) + "\n" + "".join(f"\n{m}" for m in methods)
    return rendered


def _parent_alias(cls: type) -> str:
    return f"_{cls.__name__}Parent"


# ---------------------------------------------------------------- one module


def _statement(module: str, names: Iterable[str], indent: str) -> list[str]:
    """``from module import names``, sorted and wrapped as ruff's isort writes it."""

    def kind(name: str) -> int:
        if len(name) > 1 and name.isupper():
            return 0
        return 1 if name[0].isupper() else 2

    ordered = sorted(names, key=lambda n: (kind(n), n.lower(), n))
    line = f"{indent}from {module} import {', '.join(ordered)}"
    if len(line) <= _WIDTH:
        return [line]
    return [
        f"{indent}from {module} import (",
        *(f"{indent}{_INDENT}{n}," for n in ordered),
        f"{indent})",
    ]


def _import_block(imports: Mapping[str, str], first_party: str, indent: str = "") -> list[str]:
    """Import statements grouped as ruff's isort groups them: standard library, third-party,
    first-party."""
    by_module: dict[str, list[str]] = {}
    for name, module in imports.items():
        by_module.setdefault(module, []).append(name)

    def group(module: str) -> int:
        top = module.partition(".")[0]
        if top in sys.stdlib_module_names:
            return 0
        return 2 if top == first_party else 1

    lines: list[str] = []
    for index in range(3):
        modules = sorted((m for m in by_module if group(m) == index), key=lambda m: (m.lower(), m))
        if modules and lines:
            lines.append("")
        for module in modules:
            lines += _statement(module, by_module[module], indent)
    return lines


def _header(module_name: str, command: str, root: bool) -> list[str]:
    lines = _wrapped(
        f"Generated by {command} from the sections: do not edit; change the sections (or the "
        "classes' defaults) and run it again.",
        "# ",
        "# ",
    )
    lines += _wrapped(
        f'"""The fluent methods of the config classes of ``{module_name}``, a mixin per class: '
        "every field a typed keyword with the class's default and one-line doc, for editors "
        'and type checkers (at runtime ``@fluent`` makes every default "not passed").',
        "",
        "",
    )
    lines += ['"""']
    if root:
        lines += [
            "",
            *_wrapped(
                "The methods' self is a SelfConfig, bound to AlgorithmConfig, which derives "
                "from this mixin: type checkers want the type of self to be a supertype of the "
                "class, which the root config's mixin can't give, so that check is off here.",
                "# ",
                "# ",
            ),
            '# mypy: disable-error-code="misc"',
            "# pyright: reportGeneralTypeIssues=false",
        ]
    return lines


def _module_text(module: ModuleType, mixins: list[type[AlgorithmConfig]], command: str) -> str:
    """The generated module of the config classes ``mixins`` of ``module``."""
    rendered = Rendered("")
    classes = []
    for cls in mixins:
        mixin = render_mixin(cls)
        rendered.add(mixin)
        classes.append(mixin.text)
    aliases = [(_parent_alias(c), p) for c in mixins if (p := _parent(c)) is not None]
    # From the config's own module (which imports this one) and the parents: for type
    # checkers only, so that this module imports at runtime before the config's module.
    own = {n for n, m in rendered.imports.items() if m == module.__name__}
    parent_names = {parent.__name__ for _, parent in aliases}
    typing_only = {n: m for n, m in rendered.imports.items() if n in own | parent_names}
    runtime = {n: m for n, m in rendered.imports.items() if n not in typing_only}
    stand_ins = sorted(own & rendered.defaults)
    if stand_ins:
        _need(runtime, "NOT_SET", "rlconf.fluent")
    if typing_only:
        _need(runtime, "TYPE_CHECKING", "typing")
    first_party = module.__name__.partition(".")[0]
    lines = _header(module.__name__, command, root=len(aliases) < len(mixins))
    lines += ["", "from __future__ import annotations", "", *_import_block(runtime, first_party)]
    if typing_only:
        lines += ["", "if TYPE_CHECKING:", *_import_block(typing_only, first_party, _INDENT)]
        if aliases:
            lines += ["", *(f"{_INDENT}{alias} = {parent.__name__}" for alias, parent in aliases)]
        otherwise: list[str] = []
        if aliases:
            otherwise += [
                *_wrapped(
                    "Type checkers see each mixin as a subclass of its config's parent, as its "
                    "methods' self (a SelfConfig) must be; at runtime it is a plain mixin, "
                    f"which needs nothing from {module.__name__}.",
                    f"{_INDENT}# ",
                    f"{_INDENT}# ",
                ),
                *(f"{_INDENT}{alias} = object" for alias, _ in aliases),
            ]
        if stand_ins:
            otherwise += [
                *_wrapped(
                    f"{module.__name__} defines these after it imports this module. Only "
                    "editors and type checkers read the defaults of fluent methods (@fluent "
                    "turns them into NOT_SET).",
                    f"{_INDENT}# ",
                    f"{_INDENT}# ",
                ),
                *(f"{_INDENT}{name} = NOT_SET" for name in stand_ins),
            ]
        if otherwise:
            lines += ["else:", *otherwise]
    for text in classes:
        lines += ["", "", text.rstrip("\n")]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- importing, checking, writing


def _caused_by(error: BaseException, mixin_module: str, path: Path) -> bool:
    """Whether importing a config module failed because of its generated module."""
    if isinstance(error, ImportError) and error.name == mixin_module:
        return True
    files = [frame.filename for frame in traceback.extract_tb(error.__traceback__)]
    if isinstance(error, SyntaxError) and error.filename:
        files.append(error.filename)
    return any(os.path.abspath(f) == os.path.abspath(path) for f in files)


def _stand_in(name: str) -> ModuleType:
    """A module whose every attribute is an empty class."""
    stand_in = ModuleType(name, "Stands in for a generated module while it is written.")

    def attribute(attr: str) -> type:
        if attr.startswith("__"):
            raise AttributeError(attr)
        made = type(attr, (), {"__slots__": (), "__module__": name})
        setattr(stand_in, attr, made)
        return made

    stand_in.__dict__["__getattr__"] = attribute
    return stand_in


@contextmanager
def _imported(module_name: str) -> Iterator[ModuleType]:
    """The config module; imported with a stand-in for its generated module where that is
    missing, out of date or broken (then both are forgotten afterwards, so that the next
    import reads the files)."""
    mixin_module = mixin_module_name(module_name)
    try:
        module = importlib.import_module(module_name)
    except Exception as error:
        if not _caused_by(error, mixin_module, mixin_path(module_name)):
            raise
    else:
        yield module
        return
    sys.modules.pop(mixin_module, None)
    sys.modules[mixin_module] = _stand_in(mixin_module)
    try:
        yield importlib.import_module(module_name)
    finally:
        sys.modules.pop(mixin_module, None)
        sys.modules.pop(module_name, None)


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
    from rlconf.registry import config_module_name, list_algorithms

    names = {AlgorithmConfig.__module__}
    names.update(config_module_name(n) for n in list_algorithms())
    return sorted(n for n in names if n.startswith(f"{_PACKAGE}."))


def _command(module_name: str) -> str:
    return PROG if module_name.startswith(f"{_PACKAGE}.") else f"{PROG} {module_name}"


@dataclass(frozen=True)
class Generated:
    """The generated module of one config module: its file, the text the file has ("" while
    it is missing) and the text it should have."""

    module: str
    path: Path
    current: str
    text: str


def generate(module_name: str) -> Generated | None:
    """The generated module of one config module; None where none of its classes has (or
    needs) a mixin."""
    path = mixin_path(module_name)
    with _imported(module_name) as module:
        mixins = []
        for cls in config_classes(module):
            if _inherits_mixin(cls, mixin_module_name(module_name), path):
                mixins.append(cls)
            elif generated_methods(cls):
                raise CodegenError(
                    f"{inspect.getfile(module)}: class {cls.__name__} doesn't inherit its "
                    "generated fluent methods; name their mixin first among its bases:\n"
                    f"from {mixin_module_name(module_name)} import {mixin_class_name(cls)}\n"
                    f"{_class_line(cls)}"
                )
        if not mixins:
            return None
        text = _module_text(module, mixins, _command(module_name))
    current = path.read_text(encoding="utf-8") if path.exists() else ""
    return Generated(module_name, path, current, text)


def stale(module_names: Iterable[str]) -> list[Path]:
    """The generated modules that differ from what the sections give (or are missing)."""
    found = (generate(name) for name in module_names)
    return [g.path for g in found if g is not None and g.current != g.text]


def _write_atomically(path: Path, text: str) -> None:
    partial = path.with_name(f".{path.name}.partial")
    partial.write_text(text, encoding="utf-8")
    os.replace(partial, path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Write the fluent methods of config classes, from their sections, into "
        "the generated mixins the classes inherit.",
    )
    parser.add_argument("modules", nargs="*", help="modules to update (default: the built-ins)")
    parser.add_argument("--check", action="store_true", help="only report stale files")
    args = parser.parse_args(argv)
    names = args.modules or default_modules()
    try:
        results = [g for g in map(generate, names) if g is not None]
    except CodegenError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    changed = [g for g in results if g.current != g.text]
    if args.check:
        for g in changed:
            print(f"{g.path}: the generated fluent methods are stale; run {_command(g.module)}")
        return 1 if changed else 0
    for g in changed:
        _write_atomically(g.path, g.text)
        print(f"wrote {g.path}")
    if changed:
        importlib.invalidate_caches()
    return 0


if __name__ == "__main__":
    sys.exit(main())
