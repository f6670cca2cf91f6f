"""A config that still holds search spaces describes a sweep, not a run: building an algorithm
from it is refused, naming each such key and where sweeps run."""

from __future__ import annotations

from typing import Any

from rlconf.errors import ConfigError, FieldIssue
from rlconf.search_space import find_search_spaces

_ALLOWED = (
    "one value per key for a single run; run the sweep with rlconf.sweep.run(config) (or "
    "rlconf train -f, or Tune: tune.Tuner(..., param_space=rlconf.sweep.param_space(config))), "
    "or expand it into plain configs with rlconf.sweep.grid() / rlconf.sweep.random()"
)


def refuse_search_spaces(config: Any, where: str) -> None:
    """Raise a ConfigError from ``where`` naming every key of ``config`` (an AlgorithmConfig)
    that holds a search space."""
    spaces = list(find_search_spaces(config.to_dict()))
    if spaces:
        raise ConfigError(
            where,
            [
                FieldIssue(
                    path,
                    "holds a search space, which only a sweep resolves",
                    space,
                    allowed=_ALLOWED,
                )
                for path, space in spaces
            ],
        )
