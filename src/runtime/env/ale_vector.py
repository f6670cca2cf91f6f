"""``gym_env_vectorize_mode="vector_entry_point"``: a rollout worker's Atari sub-envs as one
ale-py ``AtariVectorEnv``, which steps them together in C++ threads and does the DeepMind
preprocessing there (what ``runtime.env.atari.wrap_deepmind`` does in Python, sub-env by
sub-env, in the ``"sync"`` mode):

- up to 30 no-op actions after a reset, FIRE pressed after a reset in games that need it;
- 4 frames per action max-pooled over the last two for ids that do not skip frames themselves
  (``*NoFrameskip-v4``), else the id's own frame skip, as ``wrap_deepmind`` steps such an env;
- ``dim x dim`` grayscale frames, the last 4 stacked on the channel axis (``framestack``);
- a lost life ends the episode for learning while the game goes on (ale-py's
  ``life_loss_info``); rewards are clipped by the worker (``clip_rewards``), as in ``"sync"``.

The worker's step loop steps all sub-envs with one call (``AleVectorBatch.step``); each sub-env
is an ``AleSubEnv`` view of one row, whose ``reset()`` starts that row's next episode. An
episode that ends is reset by ale-py in the same step (its final frame is the step's
observation); the next ``reset()`` of that row returns the new episode's first frame rather
than resetting again. Evaluation workers step their sub-envs one by one (``"sync"``): they run
some sub-envs and not others to end exactly N episodes.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import gymnasium as gym
import numpy as np
import numpy.typing as npt

from rlconf.errors import ConfigError, FieldIssue
from runtime.callbacks_setup import environment_created
from runtime.core.settings import settings_of
from runtime.env.atari import STACKED_FRAMES, is_atari_id

if TYPE_CHECKING:
    from runtime.env.rollout_worker import RolloutWorker

Array = npt.NDArray[Any]

VECTOR_MODE = "vector_entry_point"

#: ``env_config`` keys of an ALE id that the vector env takes (the others are refused).
_ID_KEYS = frozenset(
    {
        "game",
        "obs_type",
        "frameskip",
        "repeat_action_probability",
        "full_action_space",
        "max_num_frames_per_episode",
    }
)


@dataclass(frozen=True)
class VectorSettings:
    """What the vector mode reads of the config."""

    gym_env_vectorize_mode: str
    env: Any
    env_config: Mapping[str, Any]
    num_envs_per_worker: int
    num_cpus_per_worker: float
    preprocessor_pref: str | None
    model: Mapping[str, Any]
    record_env: Any
    restart_failed_sub_environments: bool
    in_evaluation: bool


def _issues(settings: VectorSettings) -> list[FieldIssue]:
    """Why ``settings`` can't run as one ale-py vector env (empty when they can)."""
    mode = "gym_env_vectorize_mode"
    env_config = dict(settings.env_config)
    if not is_atari_id(settings.env, env_config):
        return [
            FieldIssue(
                mode,
                f"acts on gymnasium ids of Atari games (ale-py's AtariVectorEnv), and env is "
                f"{settings.env!r}",
                VECTOR_MODE,
                True,
                "'sync', or an Atari id such as 'BreakoutNoFrameskip-v4' or 'ALE/Pong-v5'",
            )
        ]
    issues = []
    if settings.preprocessor_pref != "deepmind":
        issues.append(
            FieldIssue(
                "preprocessor_pref",
                "must be 'deepmind' with gym_env_vectorize_mode='vector_entry_point': the "
                "vector env does the DeepMind preprocessing",
                settings.preprocessor_pref,
                True,
                "'deepmind'",
            )
        )
    unknown = sorted(set(env_config) - _ID_KEYS)
    if unknown:
        issues.append(
            FieldIssue(
                "env_config",
                f"has keys ale-py's AtariVectorEnv does not take: {', '.join(unknown)}",
                env_config,
                True,
                f"keys among {', '.join(sorted(_ID_KEYS))}, or gym_env_vectorize_mode='sync'",
            )
        )
    if settings.record_env:
        issues.append(
            FieldIssue(
                "record_env",
                "records one gymnasium env, and gym_env_vectorize_mode='vector_entry_point' "
                "makes the sub-envs one ale-py vector env",
                settings.record_env,
                True,
                "False, or gym_env_vectorize_mode='sync'",
            )
        )
    if settings.restart_failed_sub_environments:
        issues.append(
            FieldIssue(
                "restart_failed_sub_environments",
                "makes one sub-env again, and gym_env_vectorize_mode='vector_entry_point' "
                "makes them one ale-py vector env",
                True,
                True,
                "False, or gym_env_vectorize_mode='sync'",
            )
        )
    return issues


def check_vectorize_mode(config: Any, where: str) -> None:
    """At build: a ConfigError for ``gym_env_vectorize_mode='async'``, and when
    ``'vector_entry_point'`` can't act on the config's env (with the reason)."""
    settings = settings_of(VectorSettings, config, where)
    if settings.gym_env_vectorize_mode == "async":
        raise ConfigError.single(
            where,
            "gym_env_vectorize_mode",
            "is not supported by the runtime: 'async' (a process per sub-env) is not "
            "available; sub-envs run in the worker process (use num_workers for more "
            "processes)",
            value="async",
            has_value=True,
            allowed="'sync', or 'vector_entry_point' for Atari ids",
        )
    if settings.gym_env_vectorize_mode == VECTOR_MODE:
        issues = _issues(settings)
        if issues:
            raise ConfigError(where, issues)


def vector_sub_envs(worker: RolloutWorker, config: Any) -> list[AleSubEnv] | None:
    """The worker's sub-envs as the rows of one ale-py vector env, or None when it steps them
    one by one (``"sync"``, and evaluation workers)."""
    settings = settings_of(VectorSettings, config, type(worker).__name__)
    if settings.gym_env_vectorize_mode != VECTOR_MODE or settings.in_evaluation:
        return None
    issues = _issues(settings)
    if issues:
        raise ConfigError(f"{type(worker).__name__} {worker.worker_index}", issues)
    num_envs = int(settings.num_envs_per_worker)
    # The local worker's envs step while its learner waits (sampling is synchronous): every
    # core; a remote worker, the CPUs it was given.
    cores = len(os.sched_getaffinity(0))
    cpus = cores if worker.worker_index == 0 else max(1, int(settings.num_cpus_per_worker))
    batch = AleVectorBatch(
        settings.env,
        dict(settings.env_config),
        num_envs,
        dim=int(settings.model.get("dim", 84)),
        framestack=bool(settings.model.get("framestack", True)),
        num_threads=min(num_envs, cpus, cores),
    )
    for index, env in enumerate(batch.sub_envs):
        context = worker.env_context.copy_with_overrides(vector_index=index)
        environment_created(worker, env, context, index)
    return batch.sub_envs


class AleVectorBatch:
    """One ale-py ``AtariVectorEnv`` for ``num_envs`` sub-envs of the Atari id ``env_id``."""

    def __init__(
        self,
        env_id: str,
        env_config: dict[str, Any],
        num_envs: int,
        dim: int = 84,
        framestack: bool = True,
        num_threads: int = 1,
    ) -> None:
        from ale_py.vector_env import AtariVectorEnv

        kwargs = {**gym.spec(env_id).kwargs, **env_config}
        own_skip = kwargs.get("frameskip", 1)
        if not isinstance(own_skip, int):
            raise ConfigError.single(
                "env_config",
                "frameskip",
                "must be an int with gym_env_vectorize_mode='vector_entry_point' (ale-py's "
                "vector env skips a fixed number of frames)",
                value=own_skip,
                has_value=True,
                allowed="an int, or gym_env_vectorize_mode='sync'",
            )
        self.vec = AtariVectorEnv(
            str(kwargs["game"]),
            num_envs,
            num_threads=num_threads,
            # An id that does not skip frames gets the DeepMind skip of 4 with max-pooling;
            # one that skips frames itself is stepped once per action (its own skip).
            frameskip=4 if own_skip == 1 else own_skip,
            maxpool=own_skip == 1,
            repeat_action_probability=float(kwargs.get("repeat_action_probability", 0.0)),
            full_action_space=bool(kwargs.get("full_action_space", False)),
            max_num_frames_per_episode=int(kwargs.get("max_num_frames_per_episode", 108_000)),
            img_height=dim,
            img_width=dim,
            grayscale=True,
            stack_num=STACKED_FRAMES if framestack else 1,
            noop_max=30,
            episodic_life=False,
            life_loss_info=True,
            reward_clipping=False,
            use_fire_reset=True,
            autoreset_mode="SameStep",
        )
        self.num_envs = num_envs
        self.observation_space = gym.spaces.Box(
            0, 255, (dim, dim, STACKED_FRAMES if framestack else 1), np.uint8
        )
        self.action_space = self.vec.single_action_space
        #: Each row's next episode's first observation, where ale-py reset it in a step.
        self._started: dict[int, tuple[Array, dict[str, Any]]] = {}
        self._reset_once = False
        self._closed = False
        self.sub_envs = [AleSubEnv(self, i) for i in range(num_envs)]

    def reset_row(self, index: int, seed: int | None) -> tuple[Array, dict[str, Any]]:
        """Row ``index``'s next episode: the one ale-py started when the last ended (no
        ``seed``), else a reset of that row alone."""
        started = self._started.pop(index, None)
        if started is not None and seed is None:
            return started
        if not self._reset_once:
            # ale-py resets rows alone only after a reset of all; the others are reset again
            # by their own first reset() (their seeds).
            self.vec.reset(seed=None if seed is None else int(seed))
            self._reset_once = True
        mask = np.zeros(self.num_envs, dtype=bool)
        mask[index] = True
        seeds = None if seed is None else np.array([int(seed)], dtype=np.int64)
        obs, info = self.vec.reset(seed=seeds, options={"reset_mask": mask})
        return _channels_last(obs[index]), _row_info(info, index)

    def step(self, actions: Array) -> tuple[Array, Array, Array, Array, list[dict[str, Any]]]:
        """All rows one step: observations (an ended episode's final one), rewards,
        terminateds, truncateds and each row's info."""
        obs, rewards, terms, truncs, info = self.vec.step(np.asarray(actions, dtype=np.int64))
        frames = _channels_last(obs)
        infos = [_row_info(info, j) for j in range(self.num_envs)]
        ended = np.flatnonzero(terms | truncs)
        if len(ended):
            final = _channels_last(info["final_obs"])
            for j in ended.tolist():
                self._started[j] = (frames[j].copy(), infos[j])
            # ale-py returns a new array each step: its rows can take the final frames.
            frames[ended] = final[ended]
        return (
            frames,
            rewards.astype(np.float64),
            terms.astype(bool),
            truncs.astype(bool),
            infos,
        )

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self.vec.close()


def _channels_last(frames: Array) -> Array:
    """ale-py's ``(..., stack, H, W)`` frames as the vision network's ``(..., H, W, stack)``."""
    return np.moveaxis(frames, -3, -1)


def _row_info(info: Mapping[str, Any], index: int) -> dict[str, Any]:
    return {"lives": int(info["lives"][index])}


class AleSubEnv:
    """Row ``index`` of an ``AleVectorBatch``: the spaces and ``reset()`` of one sub-env; it
    is stepped with the other rows (``AleVectorBatch.step``)."""

    metadata: ClassVar[dict[str, Any]] = {"render_modes": []}
    render_mode = None
    spec = None

    def __init__(self, batch: AleVectorBatch, index: int) -> None:
        self.vector_batch = batch
        self.index = index
        self.observation_space = batch.observation_space
        self.action_space = batch.action_space

    @property
    def unwrapped(self) -> AleSubEnv:
        return self

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Array, dict[str, Any]]:
        return self.vector_batch.reset_row(self.index, seed)

    def step(self, action: Any) -> Any:
        raise RuntimeError(
            "a sub-env of gym_env_vectorize_mode='vector_entry_point' is stepped together "
            "with its worker's other sub-envs (AleVectorBatch.step), not alone"
        )

    def close(self) -> None:
        self.vector_batch.close()
