"""Small envs for the runtime tests (module level, so remote workers can import them)."""

from __future__ import annotations

import time
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np

from runtime import DefaultCallbacks, EnvContext, TaskSettableEnv


class CorridorEnv(gym.Env[Any, Any]):
    """Walk right to the end of a corridor: reward 1 there (terminated), -0.01 per step;
    truncated after ``max_steps``. Observations are a Dict of a Discrete position and a Box."""

    def __init__(self, config: EnvContext | dict[str, Any] | None = None) -> None:
        config = config or {}
        self.length = int(config.get("length", 5))
        self.max_steps = int(config.get("max_steps", 20))
        self.context = config
        self.observation_space = gym.spaces.Dict(
            {
                "pos": gym.spaces.Discrete(self.length + 1),
                "frac": gym.spaces.Box(0.0, 1.0, (1,), np.float32),
            }
        )
        self.action_space = gym.spaces.Discrete(2)
        self.pos = 0
        self.steps = 0

    def _obs(self) -> dict[str, Any]:
        return {"pos": self.pos, "frac": np.array([self.pos / self.length], np.float32)}

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        self.pos = 0
        self.steps = 0
        return self._obs(), {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        self.steps += 1
        self.pos = max(0, self.pos + (1 if int(action) == 1 else -1))
        terminated = self.pos >= self.length
        truncated = not terminated and self.steps >= self.max_steps
        reward = 1.0 if terminated else -0.01
        return self._obs(), reward, terminated, truncated, {"pos": self.pos}


class ConstantRewardEnv(gym.Env[Any, Any]):
    """Reward ``reward`` every step, never terminates, truncated after ``max_steps``."""

    def __init__(self, config: dict[str, Any] | None = None) -> None:
        config = config or {}
        self.reward = float(config.get("reward", 1.0))
        self.max_steps = int(config.get("max_steps", 10))
        self.observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
        self.action_space = gym.spaces.Box(-2.0, 2.0, (1,), np.float32)
        self.steps = 0
        self.last_action: Any = None

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        self.steps = 0
        return np.zeros(2, np.float32), {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        self.steps += 1
        self.last_action = np.asarray(action).copy()
        obs = np.full(2, self.steps / self.max_steps, np.float32)
        return obs, self.reward, False, self.steps >= self.max_steps, {}


class CurriculumEnv(ConstantRewardEnv, TaskSettableEnv):
    """Reward equals the task level."""

    def __init__(self, config: dict[str, Any] | None = None) -> None:
        super().__init__(config)
        self.task = 1

    def get_task(self) -> int:
        return self.task

    def set_task(self, task: Any) -> None:
        self.task = int(task)

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        obs, _, terminated, truncated, info = super().step(action)
        return obs, float(self.task), terminated, truncated, info


def next_level(result: dict[str, Any], env: Any, ctx: EnvContext) -> int:
    """Curriculum: one level up per training iteration, at most 3."""
    return min(3, int(env.get_task()) + 1)


class RecordingCallbacks(DefaultCallbacks):
    """Counts every hook call in ``calls`` and sets a custom metric per episode."""

    calls: ClassVar[dict[str, int]] = {}

    def _count(self, name: str) -> None:
        RecordingCallbacks.calls[name] = RecordingCallbacks.calls.get(name, 0) + 1

    def on_algorithm_init(self, *, algorithm: Any, **kwargs: Any) -> None:
        self._count("on_algorithm_init")

    def on_environment_created(self, **kwargs: Any) -> None:
        self._count("on_environment_created")

    def on_episode_created(self, **kwargs: Any) -> None:
        self._count("on_episode_created")

    def on_episode_start(self, *, episode: Any, **kwargs: Any) -> None:
        self._count("on_episode_start")
        episode.user_data["steps"] = 0

    def on_episode_step(self, *, episode: Any, **kwargs: Any) -> None:
        self._count("on_episode_step")
        episode.user_data["steps"] += 1

    def on_episode_end(self, *, episode: Any, **kwargs: Any) -> None:
        self._count("on_episode_end")
        assert episode.user_data["steps"] == episode.length
        episode.custom_metrics["double_length"] = 2.0 * episode.length

    def on_postprocess_trajectory(self, *, postprocessed_batch: Any, **kwargs: Any) -> None:
        self._count("on_postprocess_trajectory")

    def on_sample_end(self, **kwargs: Any) -> None:
        self._count("on_sample_end")

    def on_learn_on_batch(self, *, result: dict[str, Any], **kwargs: Any) -> None:
        self._count("on_learn_on_batch")
        result["seen_by_callback"] = 1.0

    def on_train_result(self, *, result: dict[str, Any], **kwargs: Any) -> None:
        self._count("on_train_result")
        result["callback_ok"] = True

    def on_checkpoint_loaded(self, **kwargs: Any) -> None:
        self._count("on_checkpoint_loaded")


class RecreationCallbacks(DefaultCallbacks):
    recreated: ClassVar[list[int]] = []

    def on_workers_recreated(self, *, worker_ids: Any, **kwargs: Any) -> None:
        RecreationCallbacks.recreated.extend(worker_ids)


class SleepyEnv(ConstantRewardEnv):
    """``ConstantRewardEnv`` whose every step takes ``delay`` seconds (a slow simulator)."""

    def __init__(self, config: dict[str, Any] | None = None) -> None:
        super().__init__(config)
        self.delay = float((config or {}).get("delay", 0.005))

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        time.sleep(self.delay)
        return super().step(action)


class WorkerIndexCallbacks(DefaultCallbacks):
    """Records in each episode's hist data the index of the worker that ran it."""

    def on_episode_end(self, *, worker: Any, episode: Any, **kwargs: Any) -> None:
        episode.hist_data["worker_index"] = [worker.worker_index]


class PlacementReport(DefaultCallbacks):
    """Adds to each result the placement groups of the driver and of the remote workers."""

    def on_train_result(self, *, algorithm: Any, result: dict[str, Any], **kwargs: Any) -> None:
        import ray

        def group_of(_worker: Any = None) -> str:
            group = ray.util.get_current_placement_group()
            return group.id.hex() if group is not None else "none"

        result["placement"] = {
            "driver": group_of(),
            "workers": algorithm.workers.foreach_worker(group_of, local=False),
        }
