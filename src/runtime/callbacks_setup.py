"""The callbacks object of an algorithm or a rollout worker, from the config: the callbacks
class (``None``: ``DefaultCallbacks``), a list of classes (their hooks run in order:
``make_multi_callbacks``), and Ray 2.40's functions per hook (``callbacks(on_episode_end=fn)``),
which run after the class's hook, in the order given."""

from __future__ import annotations

import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from rlconf.callback_hooks import CALLBACK_HOOKS
from runtime.callbacks import DefaultCallbacks, make_multi_callbacks, overrides_class
from runtime.core.settings import settings_of
from runtime.hook_calls import call_hook, keyword_filtered


@dataclass(frozen=True)
class CallbackSettings:
    """What makes the callbacks object: the class (or classes) and the functions per hook."""

    callbacks: Any
    on_algorithm_init: Any
    on_evaluate_start: Any
    on_evaluate_end: Any
    on_env_runners_recreated: Any
    on_checkpoint_loaded: Any
    on_environment_created: Any
    on_episode_created: Any
    on_episode_start: Any
    on_episode_step: Any
    on_episode_end: Any
    on_sample_end: Any
    on_train_result: Any

    def functions(self) -> dict[str, list[Callable[..., Any]]]:
        """The functions given per hook (hooks without any left out)."""
        out: dict[str, list[Callable[..., Any]]] = {}
        for hook in CALLBACK_HOOKS:
            value = getattr(self, hook)
            if value is not None:
                out[hook] = list(value) if isinstance(value, list | tuple) else [value]
        return out


def make_callbacks(config: Any, component: str) -> DefaultCallbacks:
    """The callbacks object ``component`` (the algorithm, a rollout worker) calls."""
    settings = settings_of(CallbackSettings, config, component)
    given = settings.callbacks
    cls: type[DefaultCallbacks]
    if given is None:
        cls = DefaultCallbacks
    elif isinstance(given, list | tuple):
        cls = make_multi_callbacks(list(given)) if given else DefaultCallbacks
    else:
        cls = given
    functions = settings.functions()
    if functions:
        cls = with_functions(cls, functions)
    return cls()


def with_functions(
    cls: type[DefaultCallbacks], functions: dict[str, list[Callable[..., Any]]]
) -> type[DefaultCallbacks]:
    """A subclass of ``cls`` whose hooks named in ``functions`` run ``cls``'s hook (where it
    has one of its own), then each function, every one with the keywords it takes."""
    hooks = {hook: _hook_running(cls, hook, fns) for hook, fns in functions.items()}
    named = ", ".join(f"{hook}={len(fns)} function(s)" for hook, fns in functions.items())
    subclass = type(f"{cls.__name__}WithFunctions", (cls,), hooks)
    subclass.__qualname__ = f"{cls.__qualname__}({named})"
    return subclass


def _hook_running(
    cls: type[DefaultCallbacks], hook: str, functions: Sequence[Callable[..., Any]]
) -> Callable[..., None]:
    own = getattr(cls, hook) if overrides_class(cls, hook) else None

    def run(self: DefaultCallbacks, **kwargs: Any) -> None:
        if own is not None:
            keyword_filtered(types.MethodType(own, self))(**kwargs)
        for function in functions:
            keyword_filtered(function)(**kwargs)

    run.__name__ = run.__qualname__ = hook
    return run


def workers_recreated(
    algorithm: Any, worker_set: Any, indices: list[int], *, is_evaluation: bool
) -> None:
    """``on_workers_recreated`` (2.x) and ``on_env_runners_recreated`` (the new stack's name),
    each with the keywords of both."""
    kwargs = {
        "algorithm": algorithm,
        "worker_set": worker_set,
        "worker_ids": indices,
        "is_evaluation_workers": is_evaluation,
        "env_runner_group": worker_set,
        "env_runner_indices": indices,
        "is_evaluation": is_evaluation,
        "metrics_logger": algorithm.metrics,
    }
    for hook in ("on_workers_recreated", "on_env_runners_recreated"):
        if overrides_class(type(algorithm.callbacks), hook):
            call_hook(algorithm.callbacks, hook, **kwargs)


def environment_created(worker: Any, env: Any, context: Any, index: int) -> None:
    """``on_environment_created`` of ``worker``'s callbacks for its new sub-env ``index``."""
    if overrides_class(type(worker.callbacks), "on_environment_created"):
        call_hook(
            worker.callbacks,
            "on_environment_created",
            worker=worker,
            sub_environment=env,
            env_context=context,
            env_index=index,
            env_runner=worker,
            metrics_logger=worker.metrics,
            env=env,
        )
