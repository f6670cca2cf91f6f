"""``DefaultCallbacks`` (RLlib's new API stack name: ``RLlibCallback``): hooks into training,
sampling and episodes; override what you need.

Every hook takes keyword arguments only and should accept ``**kwargs`` so that new arguments
don't break it. Each hook is called with the keywords of both RLlib dialects
(``runtime.hook_calls``): 2.x's (``worker``, ``base_env``, ``policies``, ``episode``,
``env_index``, ``algorithm``, ``result``, ...) and the new stack's (``env_runner``: the rollout
worker, ``metrics_logger``, ``env``, ``rl_module``, ...); a hook without ``**kwargs`` gets the
ones it names. What a hook logs to ``metrics_logger`` lands in the results
(``runtime.results.metrics_logger``).
"""

from __future__ import annotations

import functools
import inspect
import types
import warnings
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from runtime.hook_calls import keyword_filtered

if TYPE_CHECKING:
    from runtime.results.metrics_logger import MetricsLogger


class DefaultCallbacks:
    """No-op hooks. Subclass and override; pass the class to ``config.callbacks(...)``.

    Hooks written for the reference's older names keep working, with a DeprecationWarning
    when the class is defined: a ``trainer`` parameter receives the algorithm, and
    ``on_trainer_init`` is ``on_algorithm_init``."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        old_init = cls.__dict__.get("on_trainer_init")
        if old_init is not None and "on_algorithm_init" not in cls.__dict__:
            warnings.warn(
                f"{cls.__name__}.on_trainer_init is deprecated: name it on_algorithm_init",
                DeprecationWarning,
                stacklevel=2,
            )
            cls.on_algorithm_init = old_init  # type: ignore[method-assign]
        for name, hook in list(cls.__dict__.items()):
            if name.startswith("on_") and callable(hook) and _takes_trainer(hook):
                warnings.warn(
                    f"{cls.__name__}.{name}(trainer=...) is deprecated: the parameter is "
                    "named algorithm",
                    DeprecationWarning,
                    stacklevel=2,
                )
                setattr(cls, name, _trainer_to_algorithm(hook))

    def on_algorithm_init(
        self, *, algorithm: Any, metrics_logger: MetricsLogger, **kwargs: Any
    ) -> None:
        """After the algorithm and its workers are built."""

    def on_environment_created(
        self,
        *,
        worker: Any,
        sub_environment: Any,
        env_context: Any,
        env_index: int,
        env_runner: Any,
        metrics_logger: MetricsLogger,
        env: Any,
        **kwargs: Any,
    ) -> None:
        """After a worker created one of its sub-environments (``env`` is that sub-env)."""

    def on_episode_created(
        self,
        *,
        episode: Any,
        env_index: int,
        worker: Any,
        base_env: Any,
        policies: Any,
        env_runner: Any,
        metrics_logger: MetricsLogger,
        env: Any,
        rl_module: Any,
        **kwargs: Any,
    ) -> None:
        """A new episode object exists; its env is about to be reset."""

    def on_episode_start(
        self,
        *,
        episode: Any,
        env_index: int,
        worker: Any,
        base_env: Any,
        policies: Any,
        env_runner: Any,
        metrics_logger: MetricsLogger,
        env: Any,
        rl_module: Any,
        **kwargs: Any,
    ) -> None:
        """After the env was reset for a new episode."""

    def on_episode_step(
        self,
        *,
        episode: Any,
        env_index: int,
        worker: Any,
        base_env: Any,
        policies: Any,
        env_runner: Any,
        metrics_logger: MetricsLogger,
        env: Any,
        rl_module: Any,
        **kwargs: Any,
    ) -> None:
        """After every env step of the episode (its last one included)."""

    def on_episode_end(
        self,
        *,
        episode: Any,
        env_index: int,
        worker: Any,
        base_env: Any,
        policies: Any,
        env_runner: Any,
        metrics_logger: MetricsLogger,
        env: Any,
        rl_module: Any,
        **kwargs: Any,
    ) -> None:
        """When the episode terminated or was truncated: log its metrics here
        (``metrics_logger.log_value(...)``, or 2.x's ``episode.custom_metrics``)."""

    def on_postprocess_trajectory(
        self,
        *,
        worker: Any,
        episode: Any,
        agent_id: Any,
        policy_id: str,
        policies: Any,
        postprocessed_batch: Any,
        original_batches: Any,
        **kwargs: Any,
    ) -> None:
        """After advantages were computed for one episode's rows (may change them in place)."""

    def on_sample_end(
        self,
        *,
        samples: Any,
        worker: Any,
        env_runner: Any,
        metrics_logger: MetricsLogger,
        **kwargs: Any,
    ) -> None:
        """At the end of ``RolloutWorker.sample()`` (``samples``: the sample batch)."""

    def on_learn_on_batch(
        self, *, policy: Any, train_batch: Any, result: dict[str, Any], **kwargs: Any
    ) -> None:
        """Before a policy learns on ``train_batch``; ``result`` may be extended."""

    def on_train_result(
        self,
        *,
        algorithm: Any,
        result: dict[str, Any],
        metrics_logger: MetricsLogger,
        **kwargs: Any,
    ) -> None:
        """After each ``algorithm.train()``; ``result`` may be changed in place, and what is
        logged to ``metrics_logger`` lands at its top level."""

    def on_checkpoint_loaded(
        self, *, algorithm: Any, metrics_logger: MetricsLogger, **kwargs: Any
    ) -> None:
        """After a checkpoint was restored into the algorithm."""

    def on_workers_recreated(
        self,
        *,
        algorithm: Any,
        worker_set: Any,
        worker_ids: Sequence[int],
        is_evaluation_workers: bool,
        **kwargs: Any,
    ) -> None:
        """After failed remote workers were replaced (and synced)."""

    def on_env_runners_recreated(
        self,
        *,
        algorithm: Any,
        env_runner_group: Any,
        env_runner_indices: Sequence[int],
        is_evaluation: bool,
        **kwargs: Any,
    ) -> None:
        """RLlib's new API stack name of ``on_workers_recreated`` (both are called)."""

    def on_evaluate_start(
        self, *, algorithm: Any, metrics_logger: MetricsLogger, **kwargs: Any
    ) -> None:
        """Before an evaluation round."""

    def on_evaluate_end(
        self,
        *,
        algorithm: Any,
        evaluation_metrics: dict[str, Any],
        metrics_logger: MetricsLogger,
        **kwargs: Any,
    ) -> None:
        """After an evaluation round, with its metrics."""


#: RLlib's new API stack name of the callbacks base class (``ray.rllib.callbacks.callbacks``):
#: the same class.
RLlibCallback = DefaultCallbacks


_HOOKS = [name for name in vars(DefaultCallbacks) if name.startswith("on_")]


def _takes_trainer(hook: Callable[..., Any]) -> bool:
    try:
        parameters = inspect.signature(hook).parameters
    except (TypeError, ValueError):
        return False
    return "trainer" in parameters and "algorithm" not in parameters


def _trainer_to_algorithm(hook: Callable[..., Any]) -> Callable[..., Any]:
    """``hook`` called with ``algorithm=`` passed on as ``trainer=``."""

    @functools.wraps(hook)
    def call(self: Any, **kwargs: Any) -> Any:
        if "algorithm" in kwargs:
            kwargs["trainer"] = kwargs.pop("algorithm")
        return keyword_filtered(types.MethodType(hook, self))(**kwargs)

    # (The wrapper takes every keyword: hook_calls must not read the hook's own signature.)
    del call.__wrapped__
    return call


def overrides(callbacks: DefaultCallbacks, hook: str) -> bool:
    """Whether ``callbacks`` does anything in ``hook`` (lets hot loops skip no-op calls)."""
    return overrides_class(type(callbacks), hook)


def MultiCallbacks(
    callback_class_list: Sequence[type[DefaultCallbacks]],
) -> type[DefaultCallbacks]:
    """The reference's ``MultiCallbacks([A, B])`` (deprecated): ``make_multi_callbacks``."""
    warnings.warn(
        "MultiCallbacks([...]) is deprecated: use runtime.make_multi_callbacks([...])",
        DeprecationWarning,
        stacklevel=2,
    )
    return make_multi_callbacks(callback_class_list)


def make_multi_callbacks(
    callback_classes: Sequence[type[DefaultCallbacks]],
) -> type[DefaultCallbacks]:
    """One callbacks class that runs each of ``callback_classes``' hooks, in order."""
    classes = list(callback_classes)
    for cls in classes:
        if not (isinstance(cls, type) and issubclass(cls, DefaultCallbacks)):
            raise ValueError(f"make_multi_callbacks: {cls!r} is not a subclass of DefaultCallbacks")

    class MultiCallbacks(DefaultCallbacks):
        def __init__(self) -> None:
            self.children = [cls() for cls in classes]

    def fan_out(hook: str) -> Any:
        def call(self: MultiCallbacks, **kwargs: Any) -> None:
            for child in self.children:
                keyword_filtered(getattr(child, hook))(**kwargs)

        call.__name__ = hook
        return call

    for hook in _HOOKS:
        if any(overrides_class(cls, hook) for cls in classes):
            setattr(MultiCallbacks, hook, fan_out(hook))
    MultiCallbacks.__qualname__ = "MultiCallbacks(" + ", ".join(c.__name__ for c in classes) + ")"
    return MultiCallbacks


def overrides_class(cls: type[DefaultCallbacks], hook: str) -> bool:
    return getattr(cls, hook) is not getattr(DefaultCallbacks, hook)
