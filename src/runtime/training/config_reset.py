"""Giving a built ``Algorithm`` a new config in place: ``reset_config``, which Ray Tune calls to
reuse a trial actor for another trial (``TuneConfig(reuse_actors=True)``; PBT's exploits, which
then restore the cloned trial's checkpoint into it).

The algorithm afterwards is what a fresh one built with the new config would be: the config is
accepted exactly as ``Algorithm(config=...)`` accepts it (``accepted_config``), then everything
built from the old one is released (the workers and their actors, the evaluation workers, a
placement group the algorithm reserved itself, the results writer) and built again; counters,
episode history and iterations start from zero."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, cast

from rlconf.algorithm_config import AlgorithmConfig
from runtime.cluster.driver_environment import set_driver_environs
from runtime.core.exploration import check_exploration
from runtime.core.logs import configure_logs
from runtime.env.ale_vector import check_vectorize_mode
from runtime.results.result_logger import ResultLogger
from runtime.training.config_resolution import ConfigInput, resolve_config, split_tune_keys
from runtime.training.memory_models import refuse_memory_models
from runtime.training.placement_setup import learner_devices
from runtime.training.sample_size import note_oversized_sample
from runtime.training.trainable import Trainable
from runtime.training.unsupported import refuse_unsupported

if TYPE_CHECKING:
    from runtime.algorithm import Algorithm

#: What ``reset_config`` releases before it builds again (each set again by ``_build``).
_BUILT = ("workers", "evaluation_workers", "learner_group", "placement")


def accepted_config(
    algorithm_class: type[Algorithm], config: ConfigInput, env: Any
) -> tuple[AlgorithmConfig, dict[str, Any]]:
    """The frozen config ``algorithm_class`` runs ``config`` with (settings it can't carry out
    refused with a ``ConfigError``), and the keys Tune added to a trial's config dict. The
    config's ``log_level`` is applied, and the build's notes are logged (inert reference keys,
    an iteration that samples far more than ``train_batch_size``)."""
    rest, tune_keys = split_tune_keys(config)
    resolved = resolve_config(algorithm_class, rest, env)
    # First: the notes below (and everything the build logs) follow the config's log_level.
    configure_logs(resolved, algorithm_class.__name__)
    refuse_unsupported(resolved, algorithm_class.__name__)
    check_vectorize_mode(resolved, algorithm_class.__name__)
    resolved.check_input_paths()
    refuse_memory_models(resolved, algorithm_class)
    note_oversized_sample(resolved, algorithm_class.__name__)
    return resolved, tune_keys


class ConfigReset(Trainable):
    """The ``reset_config`` part of ``Algorithm`` (mixed into it)."""

    config: AlgorithmConfig
    _algo_config: AlgorithmConfig
    _result_logger: ResultLogger | None
    _logdir_claimed: bool
    explorations: ClassVar[tuple[str, ...]]

    def reset_config(self, new_config: ConfigInput) -> bool:
        """Rebuild this algorithm for ``new_config`` (a config, or a dict of its keys such as a
        Tune trial's config); returns True, as Tune expects of a successful reset.

        A config the algorithm refuses raises its ``ConfigError`` and leaves the algorithm as
        it was. A failure while building again (an env that can't be made, resources that
        can't be had) raises too, after releasing whatever was built: the algorithm can then
        only be stopped.

        ``env`` given to ``Algorithm(...)`` is not carried over: like a fresh trial actor, the
        algorithm runs the env ``new_config`` names.
        """
        algorithm_class = cast("type[Algorithm]", type(self))
        try:
            resolved, _ = accepted_config(algorithm_class, new_config, None)
            # The checks the build makes first, made before anything is released: a refused
            # setting leaves the old algorithm running.
            learner_devices(resolved, algorithm_class.__name__)
            check_exploration(resolved, self.explorations, algorithm_class.__name__)
        except BaseException:
            # Tune's reset() has already put the new config dict in its place.
            self.config = self._algo_config
            raise
        self._release_built()
        set_driver_environs(resolved)
        self._algo_config = resolved
        self._restart_progress()
        if self._storage is None:
            # A fresh algorithm writes to a results folder of its own (Tune's reset() has
            # already moved a trial's to the new trial's folder).
            self._logdir_claimed = False
            self._setup_logdir()
        self.setup({})
        return True

    def _release_built(self) -> None:
        # Released before building again: under Tune the new actors need the bundles of the
        # trial's placement group that the old ones hold.
        self.cleanup()
        for name in _BUILT:
            # Gone, so that a failed rebuild's own cleanup does not stop them a second time.
            self.__dict__.pop(name, None)
        self._result_logger = None
