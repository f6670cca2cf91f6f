"""Make rlconf known to Tune: algorithms by name (``tune.Tuner("PPO", ...)``) and config
objects as param spaces (``tune.Tuner(PPO, param_space=config)``)."""

from __future__ import annotations

from rlconf.algorithm_config import AlgorithmConfig
from rlconf.registry import get_algorithm_class, list_algorithms


def register_with_tune() -> None:
    """Register every rlconf algorithm as a Tune trainable under its name, now and again on
    every later ``ray.init()``."""
    import ray._private.worker as ray_worker
    from ray.tune.tune import _Config

    # Tune turns any `_Config` param space into a dict with to_dict(): exactly what a config
    # with search spaces in it gives.
    _Config.register(AlgorithmConfig)
    _register_trainables()
    # Tune keeps registrations in the cluster's key-value store, so a new cluster (ray.shutdown
    # then ray.init) has none; Ray's own libraries re-register through this hook list too.
    if _register_trainables not in ray_worker._post_init_hooks:
        ray_worker._post_init_hooks.append(_register_trainables)


def _register_trainables() -> None:
    from ray.tune import register_trainable

    for name in list_algorithms():
        register_trainable(name, get_algorithm_class(name), warn=False)
