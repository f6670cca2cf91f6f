"""The one place that touches Ray's private APIs; each use says what it is for, so a Ray
upgrade that moves one breaks here and nowhere else."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator
from typing import Any

#: The logger of Ray's token authentication set-up, and the start of its notice that a Ray
#: started here has token authentication on by default.
_TOKEN_SETUP_LOGGER = "ray._private.authentication.authentication_token_setup"
_TOKEN_ON_BY_DEFAULT = "Token authentication is enabled for this Ray cluster."


def add_post_init_hook(hook: Callable[[], None]) -> None:
    """Run ``hook`` after every ``ray.init()`` in this process (also in Ray workers): Tune's
    trainable registry lives in the cluster, so a new session needs the algorithms again."""
    import ray._private.worker as ray_worker

    if hook not in ray_worker._post_init_hooks:
        ray_worker._post_init_hooks.append(hook)


def accept_as_tune_config(config_class: type[Any]) -> None:
    """Let Tune take instances of ``config_class`` as a param space: Tune turns any registered
    ``_Config`` into a dict with ``to_dict()``, which is what our configs with search spaces
    give."""
    from ray.tune.tune import _Config

    _Config.register(config_class)


def tune_env_creator(name: str) -> Any:
    """The env creator Tune's registry holds for ``name``, or None (in a Tune trial, envs the
    driver registered arrive through that registry)."""
    from ray.tune.registry import ENV_CREATOR, _global_registry

    if not _global_registry.contains(ENV_CREATOR, name):  # type: ignore[no-untyped-call]
        return None
    return _global_registry.get(ENV_CREATOR, name)  # type: ignore[no-untyped-call]


def launched_with_autoscaler() -> bool:
    """Tune's test for a cluster that Ray's cluster launcher started, with its autoscaler (the
    launcher's ``~/ray_bootstrap_config.yaml`` on the head node); Tune uses it to tell pending
    trials that an autoscaler may yet place from those that no node can ever hold."""
    from ray.tune.execution.cluster_info import _is_ray_cluster

    return bool(_is_ray_cluster())


def checkpoint_result_metrics(training_result: Any) -> dict[str, Any]:
    """The metrics dict (to add to) of what ``ray.tune.Trainable.save()`` returns, a private
    ``_TrainingResult``: Tune's checkpoint manager ranks the trial's checkpoints by these
    metrics (``CheckpointConfig.checkpoint_score_attribute``), so a key added here before the
    result leaves the trial actor ranks its checkpoint."""
    metrics: dict[str, Any] = training_result.metrics
    return metrics


class _TokenOnByDefaultNotice(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith(_TOKEN_ON_BY_DEFAULT)


@contextlib.contextmanager
def without_token_default_notice() -> Iterator[None]:
    """Leave out Ray's warning that a Ray started on this machine authenticates with a token
    (on by default where ``RAY_AUTH_MODE`` is unset): the cluster is this process's own, its
    token made and read by Ray alone, so the warning asks nothing of the user. Ray's warning
    that authentication is *off* still shows."""
    logger = logging.getLogger(_TOKEN_SETUP_LOGGER)
    notice = _TokenOnByDefaultNotice()
    logger.addFilter(notice)
    try:
        yield
    finally:
        logger.removeFilter(notice)
