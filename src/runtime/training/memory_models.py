"""Which algorithms train models with memory (``use_lstm``, ``use_attention``, a module of your
own whose ``get_initial_state()`` returns a state): those that learn on whole sequences of
sampled rows (PPO, A2C, PG, and MARWIL and BC on their recorded episodes). The others learn from
single transitions (replayed ones, or V-trace's time-major rows for IMPALA and APPO), which a
model with memory can't learn from (R2D2-style sequence replay is not available): refused when
they are built."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rlconf.algorithm_config import AlgorithmConfig
from rlconf.errors import ConfigError
from runtime.core.settings import settings_of

if TYPE_CHECKING:
    from runtime.algorithm import Algorithm
    from runtime.core.module import RLModule


@dataclass(frozen=True)
class MemorySettings:
    model: Any


#: What a model with memory can be trained by (the algorithms with ``trains_on_sequences``).
SEQUENCE_ALGORITHMS = "an on-policy algorithm (PPO, A2C, PG) or MARWIL / BC"


def _why(name: str) -> str:
    """Why ``name`` can't train a model with memory."""
    if name in ("IMPALA", "APPO"):
        return (
            f"{name} learns from V-trace's time-major rows, not from sequences started from "
            "their stored states"
        )
    return (
        f"{name} learns from replayed single transitions, and sequence replay (R2D2-style, "
        "with stored states and burn-in) is not available"
    )


def refuse_memory_models(config: AlgorithmConfig, algorithm_class: type[Algorithm]) -> None:
    if getattr(algorithm_class, "trains_on_sequences", False):
        return
    model = settings_of(MemorySettings, config, algorithm_class.__name__).model
    for key in ("use_lstm", "use_attention"):
        if model.get(key):
            name = algorithm_class.__name__
            raise ConfigError.single(
                f"{name}(config=...)",
                f"model.{key}",
                f"gives the model memory, which {name} can't train: {_why(name)}",
                value=True,
                has_value=True,
                allowed=f"False, or {SEQUENCE_ALGORITHMS}",
            )


def refuse_memory_modules(modules: Iterable[RLModule], algorithm_class: type[Algorithm]) -> None:
    """A policy's module with memory (a custom module's ``get_initial_state()`` returning a
    state: the model keys are checked before the policies exist) under an algorithm that can't
    train one."""
    if getattr(algorithm_class, "trains_on_sequences", False):
        return
    name = algorithm_class.__name__
    for module in modules:
        if not module.is_recurrent:
            continue
        user = getattr(module, "user_module", module)
        raise ConfigError.single(
            f"{name}(config=...)",
            "rl_module_spec.module_class",
            f"{type(user).__name__}.get_initial_state() returns a state, a memory {name} "
            f"can't train: {_why(name)}",
            has_value=False,
            allowed=f"a module without memory, or {SEQUENCE_ALGORITHMS}",
        )
