"""What an ``Algorithm`` checkpoint holds and how the algorithm is saved to and restored from
one: Tune's ``save_checkpoint`` / ``load_checkpoint`` hooks, ``save()`` / ``restore()`` outside
Tune, and ``from_checkpoint``.

A checkpoint is the algorithm's JSON state (config, iteration, counters, episode history,
filters, each policy's exploration and learner state) and tensor files per policy (weights,
optimizers, target networks);
``policy_state`` and ``load_policy_state`` are the per-policy part. The file format is
``runtime.training.checkpoint_files``. A subclass adds state of its own (an off-policy
algorithm's replay buffers) with ``extra_checkpoint_state`` / ``load_extra_checkpoint_state``:
JSON under ``state["extra"]`` and numpy arrays as ``.npz`` files (``write_arrays`` /
``read_arrays`` in ``checkpoint_files``: never pickled).

Under Tune, a class whose ``checkpoint_score_attr`` is set (``rlconf.sweep.run`` makes one per
sweep that ranks checkpoints) adds ``checkpoint_score`` to the metrics of each checkpoint it
saves: the score ``rlconf.checkpoint_keeper.ScoreTracker`` gives the result it was saved after
(the latest score when that result lacks the key, nan before any result had it). Tune ranks
the trial's checkpoints by that top-level key: Tune 2.60 finds a nested key such as
``evaluation/episode_reward_mean`` when it scores a checkpoint but not when it decides whether
to rank it at all, and keeps such checkpoints in the order they came instead."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from rlconf.algorithm_config import AlgorithmConfig
from rlconf.checkpoint_keeper import ScoreTracker
from rlconf.errors import ConfigError
from rlconf.registry import get_algorithm_class
from runtime.callbacks import DefaultCallbacks
from runtime.cluster.ray_private import checkpoint_result_metrics
from runtime.env.rollout_worker import RolloutWorker
from runtime.env.worker_set import WorkerSet
from runtime.hook_calls import call_hook
from runtime.results.metrics import EpisodeHistory
from runtime.results.metrics_logger import MetricsLogger
from runtime.results.result_logger import ResultLogger
from runtime.training import checkpoint_files as checkpoints
from runtime.training.counters import Counters
from runtime.training.policy_setup_state import decode_setup, encode_setup
from runtime.training.trainable import Trainable

if TYPE_CHECKING:
    from runtime.algorithm import Algorithm

logger = logging.getLogger(__name__)


def policy_state(worker: RolloutWorker) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """What a checkpoint holds for each policy of ``worker``: the JSON state (policy id ->
    ``get_state()``: exploration and learner state; saved as ``state["policies"]``) and the
    tensor files (file stem -> state dict): ``policies/<id>/module`` (the weights) and
    ``policies/<id>/learner/<name>`` for each of the learner's optimizers and target networks.
    The learners are those of the worker's learner group (the driver's worker), or a
    policy's own."""
    group = worker.learner_group
    worker.pull_learned_weights()
    json_state: dict[str, Any] = {}
    tensors: dict[str, dict[str, Any]] = {}
    for pid, policy in worker.policy_map.items():
        learns = policy.learner_class is not None and worker.is_policy_to_train(pid)
        if group is not None and learns:
            group.ensure(pid)  # made now, so that its (initial) state is saved
        elif learns:
            policy.learner  # noqa: B018 - made now, so that its (initial) state is saved
        json_state[pid] = policy.get_json_state()
        tensors[f"policies/{pid}/module"] = policy.module.state_dict()
        learner_tensors: dict[str, dict[str, Any]] = {}
        if group is not None and group.has_learner(pid):
            learner_tensors = group.tensor_state(pid)
        elif group is None and policy._learner is not None:
            learner_tensors = policy._learner.get_tensor_state()
        for name, tensor_state in learner_tensors.items():
            tensors[f"policies/{pid}/learner/{name}"] = tensor_state
    return json_state, tensors


def load_policy_state(worker: RolloutWorker, path: str, state: Mapping[str, Any]) -> None:
    """Restore each policy of ``worker`` from the checkpoint folder ``path``: the weights and
    the learner's tensors from their files, then ``set_state()`` with its entry in
    ``state["policies"]`` (``state``: the checkpoint's JSON state)."""
    group = worker.learner_group
    for pid, policy in worker.policy_map.items():
        module = checkpoints.read_tensors(path, f"policies/{pid}/module", policy.device)
        policy.module.load_state_dict(module)
        saved = state["policies"].get(pid, {})
        if policy.learner_class is not None and "learner" in saved:
            if group is not None:
                # The learner starts again from the restored weights.
                group.remove_policy(pid)
                policy.attach_learner_group(group, pid)
                names = group.tensor_state_names(pid)
                device = group.devices[0]
            else:
                names = list(policy.learner.get_tensor_state())
                device = str(policy.device)
            tensor_state = {
                name: checkpoints.read_tensors(path, f"policies/{pid}/learner/{name}", device)
                for name in names
            }
            if group is not None:
                group.set_tensor_state(pid, tensor_state)
            else:
                policy.learner.set_tensor_state(tensor_state)
        policy.set_state(saved)


#: The key of a Tune checkpoint's metrics that ranks it (see the module docstring).
CHECKPOINT_SCORE_KEY = "checkpoint_score"


class Checkpointing(Trainable):
    """The checkpoint part of ``Algorithm`` (mixed into it)."""

    #: Under Tune: the ``checkpoint_score_attr`` whose score each checkpoint's metrics carry as
    #: ``checkpoint_score``; set on the class a sweep runs (``runtime.sweeps.tune_run``).
    checkpoint_score_attr: ClassVar[str | None] = None

    config: AlgorithmConfig
    callbacks: DefaultCallbacks
    #: The algorithm's ``MetricsLogger`` (``runtime.training.results``).
    metrics: MetricsLogger
    workers: WorkerSet
    _counters: Counters
    _num_episodes: int
    _history: EpisodeHistory
    #: The scores of this build's results; None without a ``checkpoint_score_attr``.
    _score_tracker: ScoreTracker | None = None

    if TYPE_CHECKING:
        # Provided by ResultsFolder: the results folder's writer.
        def _open_results(self) -> ResultLogger: ...

    def _state(self) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
        """The checkpoint's JSON state and tensor files (file stem -> state dict)."""
        worker = self.workers.local_worker()
        try:
            config_json: str | None = self.config.to_json(indent=None)
            config_problem = None
        except ConfigError as error:
            config_json, config_problem = None, str(error)
        state: dict[str, Any] = {
            "algorithm": type(self).__name__,
            "algo_name": self.config.algo_name,
            "config": config_json,
            "config_problem": config_problem,
            "iteration": self._iteration,
            "time_total": self._time_total,
            "timesteps_total": self._counters.env_steps_sampled,
            "episodes_total": self._num_episodes,
            "counters": dict(self._counters),
            "episode_history": self._history.to_state(),
            "filters": worker.get_filter_states(),
        }
        state["policies"], tensors = policy_state(worker)
        state["policy_setup"] = encode_setup(worker.get_policy_setup())
        return state, tensors

    def extra_checkpoint_state(self) -> tuple[dict[str, Any], dict[str, checkpoints.Arrays]]:
        """Subclass hook: what a checkpoint holds beyond the algorithm's common state: JSON
        (saved as ``state["extra"]``) and array files (file stem -> named arrays, saved with
        ``write_arrays``). Nothing by default."""
        return {}, {}

    def load_extra_checkpoint_state(self, path: str, extra: Mapping[str, Any]) -> None:
        """Subclass hook: restore what ``extra_checkpoint_state`` saved; ``extra`` is its JSON
        and ``read_arrays(path, stem)`` reads its array files. Called after the policies and
        counters are restored."""

    def save_checkpoint(self, checkpoint_dir: str) -> None:
        """Tune's hook: write this algorithm's state into ``checkpoint_dir``."""
        state, tensors = self._state()
        state["extra"], arrays = self.extra_checkpoint_state()
        checkpoints.write_files(Path(checkpoint_dir), state, tensors, arrays)
        logger.info(
            "%s: checkpoint of iteration %d written to %s",
            type(self).__name__,
            self._iteration,
            checkpoint_dir,
        )

    def load_checkpoint(self, checkpoint: Any) -> None:
        """Tune's hook: restore from a checkpoint folder."""
        path = checkpoint if isinstance(checkpoint, str | os.PathLike) else str(checkpoint)
        self._load_state(str(path))

    def _start_checkpoint_scores(self) -> None:
        """No score seen yet (a new build: a trial's first, or the next trial's in a reused
        actor)."""
        attr = type(self).checkpoint_score_attr
        self._score_tracker = ScoreTracker(attr) if attr is not None else None

    def _observe_checkpoint_score(self, result: Mapping[str, Any]) -> None:
        """Note each result's score, for a checkpoint saved after a result without it."""
        if self._score_tracker is not None:
            self._score_tracker.observe(result)

    def save(self, checkpoint_dir: str | None = None) -> Any:
        """Write a checkpoint and return its path: ``<checkpoint_dir or logdir>/
        checkpoint_<iteration>``. Under Tune, Tune's own checkpointing is used."""
        if self._storage is not None and checkpoint_dir is None:
            saved = super().save()  # type: ignore[misc]
            if self._score_tracker is not None:
                score = self._score_tracker.observe(self._last_result or {})
                checkpoint_result_metrics(saved)[CHECKPOINT_SCORE_KEY] = (
                    float("nan") if score is None else score
                )
            return saved
        parent = Path(checkpoint_dir) if checkpoint_dir else self._open_results().logdir
        state, tensors = self._state()
        state["extra"], arrays = self.extra_checkpoint_state()
        target = parent / f"checkpoint_{self._iteration:06d}"
        try:
            path = checkpoints.write_checkpoint(target, state, tensors, arrays)
        except OSError as exc:
            # write_checkpoint removed its partial folder; the checkpoints before are as they were.
            raise checkpoints.CheckpointError(
                f"{type(self).__name__}: the checkpoint of iteration {self._iteration} could not "
                f"be written to {target} ({exc.strerror or exc}); the earlier checkpoints are "
                "as they were"
            ) from exc
        logger.info(
            "%s: checkpoint of iteration %d written to %s",
            type(self).__name__,
            self._iteration,
            path,
        )
        return path

    def save_to_path(self, path: str | os.PathLike[str] | None = None) -> str:
        """RLlib's new API stack name of ``save()``: writes ``<path>/checkpoint_<iteration>``
        (None: in the results folder) and returns that folder, which ``restore_from_path`` and
        ``from_checkpoint`` take."""
        saved = self.save(None if path is None else os.fspath(path))
        if isinstance(saved, str | os.PathLike):
            return os.fspath(saved)
        return str(getattr(getattr(saved, "checkpoint", saved), "path", saved))  # under Tune

    def restore_from_path(self, path: str | os.PathLike[str]) -> None:
        """RLlib's new API stack name of ``restore()``, of a folder ``save_to_path`` wrote."""
        self.restore(os.fspath(path))

    def restore(self, checkpoint_path: Any) -> None:
        """Load weights, optimizer state, filters, counters and the iteration from a
        checkpoint written by ``save()``."""
        if self._storage is not None and not isinstance(checkpoint_path, str | os.PathLike):
            super().restore(checkpoint_path)  # type: ignore[misc]
            return
        # A Tune Checkpoint of a local folder restores like its path.
        self._load_state(os.fspath(getattr(checkpoint_path, "path", checkpoint_path)))

    def _load_state(self, path: str) -> None:
        state = checkpoints.decode_floats(checkpoints.read_state(path))
        checkpoints.verify_checkpoint(path)
        worker = self.workers.local_worker()
        if "policy_setup" in state:
            worker.set_policy_setup(decode_setup(state["policy_setup"], worker.get_policy_setup()))
            self.workers.sync_policy_setup()
        load_policy_state(worker, path, state)
        worker.sync_filters(state.get("filters", {}))
        self._counters = Counters(state["counters"])
        self._num_episodes = int(state["episodes_total"])
        self._history.set_state(state["episode_history"])
        self._iteration = int(state["iteration"])
        self._time_total = float(state["time_total"])
        self._timesteps_total = int(state["timesteps_total"])
        if self._score_tracker is not None:
            # The scores seen were of weights now replaced (PBT's exploit, Tune's recovery).
            self._start_checkpoint_scores()
        self.load_extra_checkpoint_state(path, state.get("extra") or {})
        self.workers.sync_weights(global_vars={"timestep": self._counters["num_env_steps_sampled"]})
        self.workers.sync_filter_states()
        logger.info(
            "%s: restored iteration %d from the checkpoint %s",
            type(self).__name__,
            self._iteration,
            path,
        )
        call_hook(
            self.callbacks, "on_checkpoint_loaded", algorithm=self, metrics_logger=self.metrics
        )


def algorithm_from_checkpoint(
    algorithm_class: type[Algorithm],
    checkpoint: str | os.PathLike[str],
    config: AlgorithmConfig | None,
    *,
    generic: bool,
) -> Algorithm:
    """``Algorithm.from_checkpoint``: ``algorithm_class`` built with ``config`` (the one saved
    in the checkpoint when None), its state restored. The class registered for the config's
    ``algo_name`` is built instead when ``algorithm_class`` is the ``generic`` base or the
    config is not one of its ``config_class``."""
    path = os.fspath(checkpoint)
    if config is None:
        config = checkpoints.saved_config(path)
    algo_class = algorithm_class
    if (generic or not isinstance(config, algorithm_class.config_class)) and config.algo_name:
        algo_class = get_algorithm_class(config.algo_name)
    algo = algo_class(config=config, lazy_logdir=True)
    algo.restore(path)
    return algo
