"""A YAML file read with the line of every key in it, so that an error about a key can say
where the file gives it (``experiments.yaml:7: ...``), and a file that is no YAML is refused at
the line and column the parser stopped at."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlconf.errors import ConfigError, FieldIssue

#: A key's path from the top of the document: mapping keys, and sequence items by their index.
Keys = tuple[str, ...]


@dataclass(frozen=True)
class KeyLines:
    """The 1-based line of each key of a YAML file (and of each item of its lists), by path."""

    path: str
    lines: Mapping[Keys, int]

    def find(self, scope: Keys, keys: Keys) -> int | None:
        """The line of ``scope + keys``; else of the one key under ``scope`` whose path ends
        with ``keys`` (a setting named without the section it was written in, as
        ``policies`` for ``multiagent: {policies: ...}``); None when there is no such key, or
        more than one."""
        line = self.lines.get(scope + keys)
        if line is not None:
            return line
        found = [
            at
            for path, at in self.lines.items()
            if len(path) > len(scope) + len(keys)
            and path[: len(scope)] == scope
            and path[-len(keys) :] == keys
        ]
        return found[0] if len(found) == 1 else None

    def nearest(self, keys: Keys) -> int | None:
        """The line of ``keys``, or of the deepest key above it that the file holds."""
        for end in range(len(keys), 0, -1):
            line = self.lines.get(keys[:end])
            if line is not None:
                return line
        return None

    def location(self, line: int) -> str:
        return f"{self.path}:{line}"


def read_yaml(path: str | Path, where: str) -> tuple[Any, KeyLines]:
    """The document of the YAML file at ``path`` and the lines of its keys; a ConfigError from
    ``where`` when the file can't be read or is no YAML (at the parser's line and column)."""
    import yaml

    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError.single(where, "file", f"can't be read: {exc.strerror}") from None
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        data = None if node is None else loader.construct_document(node)
    except yaml.MarkedYAMLError as exc:
        raise ConfigError(where, [_syntax_issue(str(path), exc)]) from None
    except yaml.YAMLError as exc:
        raise ConfigError.single(where, "file", f"is not valid YAML: {exc}") from None
    finally:
        loader.dispose()
    lines: dict[Keys, int] = {}
    if node is not None:
        _record(node, (), lines, set())
    return data, KeyLines(str(path), lines)


def _syntax_issue(path: str, exc: Any) -> FieldIssue:
    problem = exc.problem or exc.context or "unreadable"
    if exc.context and exc.problem:
        context = exc.context
        if exc.context_mark is not None:
            context += f" from line {exc.context_mark.line + 1}"
        problem += f" ({context})"
    mark = exc.problem_mark or exc.context_mark
    location = path if mark is None else f"{path}:{mark.line + 1}:{mark.column + 1}"
    return FieldIssue("file", f"is not valid YAML: {problem}", has_value=False, location=location)


def _record(node: Any, keys: Keys, lines: dict[Keys, int], above: set[int]) -> None:
    """Record the lines of the keys under ``node`` (after construction, which wrote merge keys
    ``<<`` out into the keys they merge, each with the line where it is written)."""
    import yaml

    if id(node) in above:  # an alias of a node that holds it: the keys are recorded already
        return
    above = above | {id(node)}
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            if isinstance(key_node, yaml.ScalarNode):
                # The last of a key given twice, as the document holds its value.
                lines[(*keys, key_node.value)] = key_node.start_mark.line + 1
                _record(value_node, (*keys, key_node.value), lines, above)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            lines[(*keys, str(index))] = item.start_mark.line + 1
            _record(item, (*keys, str(index)), lines, above)
