"""Which algorithms train models with memory (``use_lstm``, ``use_attention``): those that
learn on whole sequences of sampled rows (PPO, A2C, PG). The others replay single transitions,
which a model with memory can't learn from (R2D2-style sequence replay is not available):
refused when they are built."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rlconf.algorithm_config import AlgorithmConfig
from rlconf.errors import ConfigError
from runtime.core.settings import settings_of

if TYPE_CHECKING:
    from runtime.algorithm import Algorithm


@dataclass(frozen=True)
class MemorySettings:
    model: Any


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
                f"gives the model memory, which {name} can't train: it learns from replayed "
                "single transitions, and sequence replay (R2D2-style, with stored states and "
                "burn-in) is not available",
                value=True,
                has_value=True,
                allowed="False, or an on-policy algorithm (PPO, A2C, PG)",
            )
