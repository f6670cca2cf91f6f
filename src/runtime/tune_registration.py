"""Make rlconf known to Tune: algorithms by name (``tune.Tuner("PPO", ...)``) and config
objects as param spaces (``tune.Tuner(PPO, param_space=config)``)."""

from __future__ import annotations

from rlconf.algorithm_config import AlgorithmConfig
from rlconf.registry import get_algorithm_class, list_algorithms


def register_with_tune() -> None:
    """Register every rlconf algorithm as a Tune trainable under its name."""
    from ray.tune import register_trainable
    from ray.tune.tune import _Config

    # Tune turns any `_Config` param space into a dict with to_dict(): exactly what a config
    # with search spaces in it gives.
    _Config.register(AlgorithmConfig)
    for name in list_algorithms():
        register_trainable(name, get_algorithm_class(name), warn=False)
