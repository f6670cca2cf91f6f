"""RLlib's env-to-module connector ``MeanStdFilter``, as rlconf's observation filter.

RLlib's new API stack normalises observations with a ConnectorV2 piece::

    from ray.rllib.connectors.env_to_module import MeanStdFilter

    config.env_runners(env_to_module_connector=lambda env, spaces, device: MeanStdFilter())

The same lines with ``from rlconf.connectors import MeanStdFilter`` set rlconf's
``observation_filter="MeanStdFilter"``: every policy's observations normalised by their running
mean and standard deviation, clipped to +-10 (RLlib's ``clip_by_value`` default), the workers'
statistics merged on the driver every iteration (``synchronize_filters``). ConnectorV2 pipelines
themselves are not available (``rlconf.new_stack_names``): ``env_to_module_connector`` takes a
factory (called here with ``None`` for each argument, as it only has to say which connector it
makes) returning a ``MeanStdFilter`` (alone or as a one-item list), or None (no filter).

Importing this module imports neither torch nor Ray.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, Literal

__all__ = ["MeanStdFilter", "observation_filter_of"]


class MeanStdFilter:
    """RLlib's ``MeanStdFilter`` connector: what ``env_to_module_connector`` returns to ask for
    ``observation_filter="MeanStdFilter"``. ``multi_agent`` (RLlib's switch for multi-agent
    envs) may take either value: the filters here are per policy in every env."""

    def __init__(self, *, multi_agent: bool = False) -> None:
        if not isinstance(multi_agent, bool):
            raise TypeError(f"MeanStdFilter(multi_agent=...) takes a bool, got {multi_agent!r}")
        self.multi_agent = multi_agent

    def __repr__(self) -> str:
        return f"MeanStdFilter(multi_agent={self.multi_agent})"


def _made_by(factory: Callable[..., Any]) -> Any:
    """What ``factory`` returns when called with None for each positional parameter it needs
    (RLlib calls it with the env, its spaces and the device; a factory that only names the
    connector it makes ignores them)."""
    try:
        parameters = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):
        needed = 0
    else:
        needed = sum(
            1
            for p in parameters
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
        )
    return factory(*([None] * needed))


def observation_filter_of(value: Any) -> Literal["NoFilter", "MeanStdFilter"]:
    """The ``observation_filter`` an ``env_to_module_connector`` value stands for: None is
    ``"NoFilter"``, a factory of ``MeanStdFilter()`` is ``"MeanStdFilter"``. Raises
    ``ValueError`` with the reason for anything else."""
    if value is None:
        return "NoFilter"
    if not callable(value):
        raise ValueError(
            f"is not a function ({type(value).__name__}); it takes a function (env, spaces, "
            "device) -> connector, as RLlib, or None"
        )
    try:
        made = _made_by(value)
    except Exception as exc:
        raise ValueError(
            "is called here with None for each argument, to see which connector it makes, "
            f"and raised {type(exc).__name__}: {exc}"
        ) from None
    pieces = made if isinstance(made, list | tuple) else [made]
    if len(pieces) != 1 or not isinstance(pieces[0], MeanStdFilter):
        raise ValueError(
            f"makes {made!r}: only rlconf.connectors.MeanStdFilter() has a counterpart here "
            "(observation_filter='MeanStdFilter'); other ConnectorV2 pieces are not available, "
            "the rollout workers preprocess, filter and clip themselves"
        )
    return "MeanStdFilter"
