"""Ray Tune support, switched on only when ``ray.tune`` is imported in this process.

Then ``ray.tune.Trainable`` becomes the base of ``runtime.training.trainable.Trainable`` (so
``tune.Tuner(PPO, ...)`` accepts the class), every rlconf algorithm is registered under its name
(``tune.Tuner("PPO", ...)``, again after every ``ray.init()``: Tune keeps registrations in the
cluster), and configs are accepted as param spaces (``param_space=config``). Until then nothing
of Tune is imported: the embedded default never pays for it.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
import threading
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

_TUNE = "ray.tune"
_LOCK = threading.RLock()
_enabled = False


def install() -> None:
    """Switch Tune support on now if ``ray.tune`` is imported, else as soon as it is."""
    if _TUNE in sys.modules:
        enable_tune()
    elif not any(isinstance(f, _AfterImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterImport(_TUNE, enable_tune))


def enable_tune() -> None:
    """Import Tune and make the algorithms Tune trainables (idempotent)."""
    global _enabled
    with _LOCK:
        if _enabled:
            return
        _enabled = True
        from ray import tune
        from ray.tune.registry import register_env

        from rlconf.algorithm_config import AlgorithmConfig
        from rlconf.registry import on_register
        from runtime.cluster.ray_private import accept_as_tune_config, add_post_init_hook
        from runtime.env.env_registry import registered_envs
        from runtime.training.trainable import Trainable, TuneBaseSlot

        if Trainable.__bases__ == (TuneBaseSlot,):
            Trainable.__bases__ = (tune.Trainable,)
        accept_as_tune_config(AlgorithmConfig)
        _register_trainables()
        for name, creator in registered_envs().items():
            register_env(name, creator)
        add_post_init_hook(_register_trainables)
        # Algorithms registered from now on become Tune trainables as they are registered.
        on_register(_register_trainable)


def _register_trainables() -> None:
    from rlconf.registry import list_algorithms

    for name in list_algorithms():
        _register_trainable(name)


def _register_trainable(name: str) -> None:
    from ray.tune import register_trainable

    from rlconf.registry import get_algorithm_class

    register_trainable(name, get_algorithm_class(name), warn=False)


class _AfterImport(importlib.abc.MetaPathFinder):
    """Runs ``callback`` right after module ``name`` has been imported."""

    def __init__(self, name: str, callback: Callable[[], None]) -> None:
        self.name = name
        self.callback = callback
        self._finding = False

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != self.name or self._finding:
            return None
        self._finding = True
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            self._finding = False
        if spec is None or spec.loader is None:
            return None
        spec.loader = _CallbackLoader(spec.loader, self)
        return spec


class _CallbackLoader(importlib.abc.Loader):
    def __init__(self, loader: Any, finder: _AfterImport) -> None:
        self.loader = loader
        self.finder = finder

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        module: ModuleType | None = self.loader.create_module(spec)
        return module

    def __getattr__(self, name: str) -> Any:
        # get_source, is_package, get_resource_reader...: the real loader's.
        return getattr(self.loader, name)

    def exec_module(self, module: ModuleType) -> None:
        self.loader.exec_module(module)
        if self.finder in sys.meta_path:
            sys.meta_path.remove(self.finder)
        self.finder.callback()
