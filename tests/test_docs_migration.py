"""The migration page (``docs/migration.md``) keeps up with the code: every RLlib name that the
code takes as another name of a key, accepts where it changes nothing, or refuses has a row of
its own in one of the page's tables (in a code span of the row's first cell).

The names come from the code's own tables, so a name added there fails here until the page
lists it, and a row dropped from the page fails too.
"""

from __future__ import annotations

import re
import typing
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

import rlconf
from rlconf.algorithm_config import AlgorithmConfig
from rlconf.exploration_types import NOT_IN_RLCONF
from rlconf.inert_keys import (
    INERT_KEYS,
    INERT_MODEL_KEYS,
    INERT_REPLAY_BUFFER_KEYS,
    REFUSED_REPLAY_BUFFER_KEYS,
    InertKey,
)
from rlconf.key_aliases import KEY_ALIASES, NESTED_KEY_ALIASES
from rlconf.layer_init_keys import RLLIB_2X_NAMES
from rlconf.new_stack_names import NEW_STACK_CONVERTED, NEW_STACK_NAMES, NEW_STACK_REFUSED
from rlconf.replay_buffer_config import BUFFER_TYPE_ALIASES, UNAVAILABLE_BUFFER_TYPES
from rlconf.unknown_keys import DROPPED_KEYS

PAGE = Path(__file__).resolve().parents[1] / "docs" / "migration.md"

_CODE = re.compile(r"`([^`]+)`")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _cells(row: str) -> list[str]:
    """A table row's cells, split at the ``|`` outside code spans."""
    cells, cell, in_code = [], "", False
    for char in row.strip().strip("|"):
        if char == "`":
            in_code = not in_code
        if char == "|" and not in_code:
            cells.append(cell)
            cell = ""
        else:
            cell += char
    return [*cells, cell]


def row_names(text: str) -> set[str]:
    """The names in the code spans of the first cell of every table row of ``text``."""
    names: set[str] = set()
    for line in text.splitlines():
        if not line.lstrip().startswith("|"):
            continue
        for span in _CODE.findall(_cells(line)[0]):
            names.update(_NAME.findall(span))
    return names


def _config_classes() -> Iterator[type[AlgorithmConfig]]:
    for name in rlconf.__all__:
        value = getattr(rlconf, name)
        if isinstance(value, type) and issubclass(value, AlgorithmConfig):
            yield value


def inert_algorithm_fields() -> set[str]:
    """The fields of rlconf's algorithm configs declared with ``InertKey`` metadata (DQN's
    ``noisy``, SAC's ``_use_beta_distribution``): accepted only where they change nothing."""
    found: set[str] = set()
    for config_class in _config_classes():
        for section in config_class._sections.values():
            hints = typing.get_type_hints(section.fields, include_extras=True)
            for field, hint in hints.items():
                if any(isinstance(meta, InertKey) for meta in getattr(hint, "__metadata__", ())):
                    found.add(field)
    return found


def _last(paths: Iterable[str]) -> list[str]:
    """``"multiagent.replay_mode"`` -> ``"replay_mode"``: the page names nested keys by their
    own name."""
    return [path.rpartition(".")[2] for path in paths]


#: What the page must list: a label naming the code's table -> its names.
DOCUMENTED: dict[str, list[str]] = {
    "RLlib 2.x names (key_aliases.KEY_ALIASES)": [
        name for name, alias in KEY_ALIASES.items() if not alias.new_stack
    ],
    "nested RLlib 2.x names (key_aliases.NESTED_KEY_ALIASES)": [
        key for _, key in NESTED_KEY_ALIASES
    ],
    "new API stack names (new_stack_names.NEW_STACK_NAMES, NEW_STACK_CONVERTED)": [
        *NEW_STACK_NAMES,
        *NEW_STACK_CONVERTED,
    ],
    "RLlib 2.x initializer names (layer_init_keys.RLLIB_2X_NAMES)": list(RLLIB_2X_NAMES),
    # The new stack's multi-agent episode buffers are named as a group ("their MultiAgent...
    # twins") in the new stack's table.
    "buffer type names (replay_buffer_config.BUFFER_TYPE_ALIASES)": [
        name
        for name in BUFFER_TYPE_ALIASES
        if not (name.startswith("MultiAgent") and "Episode" in name)
    ],
    "buffer types not available (replay_buffer_config.UNAVAILABLE_BUFFER_TYPES)": list(
        UNAVAILABLE_BUFFER_TYPES
    ),
    "exploration types not available (exploration_types.NOT_IN_RLCONF)": list(NOT_IN_RLCONF),
    "top-level no-op keys (inert_keys.INERT_KEYS)": list(INERT_KEYS),
    "model no-op keys (inert_keys.INERT_MODEL_KEYS)": list(INERT_MODEL_KEYS),
    "replay buffer no-op keys (inert_keys.INERT_REPLAY_BUFFER_KEYS)": list(
        INERT_REPLAY_BUFFER_KEYS
    ),
    "refused replay buffer keys (inert_keys.REFUSED_REPLAY_BUFFER_KEYS)": list(
        REFUSED_REPLAY_BUFFER_KEYS
    ),
    "new API stack names refused (new_stack_names.NEW_STACK_REFUSED)": list(NEW_STACK_REFUSED),
    "RLlib 2.x keys refused (unknown_keys.DROPPED_KEYS)": [
        key for key in DROPPED_KEYS if key not in NEW_STACK_REFUSED
    ],
}


@pytest.fixture(scope="module")
def documented() -> set[str]:
    return row_names(PAGE.read_text())


@pytest.mark.parametrize("label", list(DOCUMENTED))
def test_the_page_lists_every_name_of_the_code(label: str, documented: set[str]) -> None:
    missing = [name for name in DOCUMENTED[label] if name not in documented]
    assert not missing, f"{PAGE.name} has no table row for these {label}: {missing}"


def test_the_page_lists_the_inert_algorithm_fields(documented: set[str]) -> None:
    fields = inert_algorithm_fields()
    assert {"noisy", "_use_beta_distribution"} <= fields  # the scan finds what it looks for
    missing = sorted(fields - documented)
    assert not missing, f"{PAGE.name} has no table row for these no-op fields: {missing}"


def test_the_page_lists_what_the_runtime_refuses(documented: set[str]) -> None:
    # The runtime imports torch: here, not when the module is collected.
    from runtime.training.unsupported import NO_EFFECT, REFUSED, REFUSED_MULTI_AGENT

    names = _last([*REFUSED, *REFUSED_MULTI_AGENT, *NO_EFFECT])
    missing = [name for name in names if name not in documented]
    assert not missing, f"{PAGE.name} has no table row for these runtime settings: {missing}"


def test_a_row_dropped_from_the_page_is_missed() -> None:
    text = PAGE.read_text()
    kept = "\n".join(line for line in text.splitlines() if not line.startswith("| `eager_tracing`"))
    assert kept != text
    assert "eager_tracing" in row_names(text)
    assert "eager_tracing" not in row_names(kept)
