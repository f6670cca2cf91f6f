"""``EpisodeRunner``: what the single- and multi-agent runners share.

A worker's sub-envs and their running episodes (one agent-keyed ``Episode`` per sub-env: a
single-agent env's is the one-agent case), the callbacks' episode hooks (each called only where
the callbacks override it: episode boundaries are frequent; each step is recorded in its episode
only while some hook receives episodes, ``_track_steps``), resets (seeded on a sub-env's first,
a sub-env that fails remade: ``SubEnvRestarts``), the finished episodes' metrics and the step
timers (``RunnerMetrics``), and the settings every runner reads (``RunnerSettings``).

Evaluation is shared too: ``run()`` runs exactly N episodes (each sub-env its share up front,
``split_evenly``) or N env steps. How a step goes is the subclass's: ``StepLoop``
(``EnvRunner``) steps single-agent envs in lockstep on arrays; ``MultiAgentRunner`` steps agent
dicts, one forward pass per policy. Each samples training fragments (``sample()``) too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from runtime.callbacks import DefaultCallbacks, overrides
from runtime.core.settings import settings_of
from runtime.env.episode import Episode, EpisodeMetrics, MappingFn, faulty_episode
from runtime.env.runner_metrics import RunnerMetrics
from runtime.env.sub_env_restarts import SubEnvRestarts
from runtime.hook_calls import keyword_filtered, may_read_history

if TYPE_CHECKING:
    from rlconf.algorithm_config import AlgorithmConfig
    from runtime.env.rollout_worker import RolloutWorker

_EPISODE_HOOKS = ("on_episode_created", "on_episode_start", "on_episode_step", "on_episode_end")


def split_evenly(total: int, parts: int) -> list[int]:
    """``total`` spread over ``parts``: the first ``total % parts`` get one more (each sub-env's
    quota of evaluation episodes)."""
    base, extra = divmod(total, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


@dataclass(frozen=True)
class RunnerSettings:
    """What the env runners (``EnvRunner``, ``MultiAgentRunner``) read of
    the config, built once when a runner is built; the runners keep what they use in
    attributes."""

    batch_mode: str
    count_steps_by: str
    horizon: int | None
    soft_horizon: bool
    no_done_at_end: bool
    seed: int | None
    observation_fn: Any
    disable_env_checking: bool
    normalize_actions: bool
    clip_actions: bool
    clip_rewards: Any
    in_evaluation: bool
    restart_failed_sub_environments: bool


class EpisodeRunner(RunnerMetrics):
    """A worker's sub-envs and their episodes; ``episodes[i]`` is sub-env ``i``'s running one."""

    def __init__(
        self,
        worker: RolloutWorker,
        envs: list[Any],
        config: AlgorithmConfig,
        callbacks: DefaultCallbacks,
    ) -> None:
        super().__init__()
        self.worker = worker
        self.envs = envs
        self.num_envs = len(envs)
        self.config = config
        self.settings = settings_of(RunnerSettings, config, type(self).__name__)
        self.callbacks = callbacks
        self.seed = self.settings.seed
        self._overridden = {hook for hook in _EPISODE_HOOKS if overrides(callbacks, hook)}
        #: The overridden episode hooks, each taking the keywords of both dialects.
        self._hooks: dict[str, Callable[..., Any]] = {
            hook: keyword_filtered(getattr(callbacks, hook)) for hook in self._overridden
        }
        self._sample_end_hook = (
            keyword_filtered(callbacks.on_sample_end)
            if overrides(callbacks, "on_sample_end")
            else None
        )
        #: Whether some hook receives episodes (an episode hook or ``on_postprocess_trajectory``
        #: is overridden): only then do the runners record each step in its episode (length,
        #: rewards, the last-step accessors), so that what a hook reads never depends on which
        #: other hooks are overridden, and sampling without such hooks skips the bookkeeping.
        self._track_steps = bool(self._overridden) or overrides(
            callbacks, "on_postprocess_trajectory"
        )
        #: Whether the episodes keep every observation (some hook may read them through the
        #: new stack's getters), or only the last (hooks written for RLlib 2.x).
        self._keeps_observations = any(
            may_read_history(getattr(callbacks, hook))
            for hook in (*self._overridden, "on_postprocess_trajectory")
            if hook in self._overridden or overrides(callbacks, hook)
        )
        self._next_episode = 0
        self.episodes: list[Episode] = []
        #: The episodes of this fragment by id (for ``on_postprocess_trajectory``).
        self._recent: dict[int, Episode] = {}
        self._restarts = SubEnvRestarts(
            worker, envs, bool(self.settings.restart_failed_sub_environments)
        )
        #: Episodes cut off by a failed sub-env whose rows are still to be dropped.
        self._faulty_ids: set[int] = set()

    def get_sub_environments(self) -> list[Any]:
        return self.envs

    def _mapping_fn(self) -> MappingFn | None:
        """How a new episode maps its agents to policies (None: a single-agent env's one agent
        acts with ``default_policy``)."""
        return None

    def _rl_module(self) -> Any:
        """What hooks get as ``rl_module``: the modules of the worker's policies by policy id
        (RLlib's multi-agent module); a single-agent runner's is its policy's module."""
        return PolicyModules(self.worker.policy_map)

    def _hook(self, name: str, **kwargs: Any) -> None:
        """An episode hook (``on_episode_start``, ...) where overridden, with 2.x's keywords
        (``worker``, ``base_env``, ``policies``) and the new stack's (``env_runner``: the
        worker, ``metrics_logger``: its logger, ``env``: this runner, whose ``envs`` are the
        sub-envs, ``rl_module``)."""
        hook = self._hooks.get(name)
        if hook is not None:
            worker = self.worker
            hook(
                worker=worker,
                base_env=self,
                policies=worker.policy_map,
                env_runner=worker,
                metrics_logger=worker.metrics,
                env=self,
                rl_module=self._rl_module(),
                **kwargs,
            )

    def _sample_end(self, samples: Any) -> None:
        """``on_sample_end`` with the fragment, where overridden."""
        if self._sample_end_hook is not None:
            worker = self.worker
            self._sample_end_hook(
                worker=worker, env_runner=worker, metrics_logger=worker.metrics, samples=samples
            )

    def _new_episode(self, index: int) -> Episode:
        """A new episode of sub-env ``index`` (``on_episode_created``); ids are unique across
        workers."""
        episode_id = (self.worker.worker_index << 40) + self._next_episode
        self._next_episode += 1
        episode = Episode(
            episode_id, index, self.worker.worker_index, self._mapping_fn(), self.worker
        )
        episode._keeps_observations = self._keeps_observations
        self._recent[episode_id] = episode
        self._hook("on_episode_created", env_index=index, episode=episode)
        return episode

    def _reset_env(self, index: int, first: bool) -> tuple[Any, int | None]:
        """Reset sub-env ``index`` (seeded from ``seed``, the worker and the sub-env on its
        first reset); one that raises is made again (each failure a faulty episode). Returns
        what ``reset()`` returned and the seed it was given."""
        first_seed = None
        if self.seed is not None:
            first_seed = int(self.seed) + 1000 * self.worker.worker_index + index
        output, seed, failed = self._restarts.reset(
            index, first_seed if first else None, first_seed
        )
        for _ in range(failed):
            self.finished.append(faulty_episode())
        return output, seed

    # ------------------------------------------------------------------ evaluation

    def run(
        self,
        *,
        episodes: int = 0,
        timesteps: int = 0,
        reset: bool = True,
        explore: bool | None = None,
    ) -> tuple[list[EpisodeMetrics], int]:
        """Run ``episodes`` complete episodes, or ``timesteps`` env steps (episodes then go on
        across calls made with ``reset=False``); returns the finished episodes and the env steps
        taken. No rows are kept and observation filters are not updated.

        Each sub-env is given its share of the episodes up front (``split_evenly``) and stops
        once it has run them: taking the first N episodes to finish out of many running
        sub-envs would favour short ones. ``reset`` starts the sub-envs on fresh episodes
        (always when counting episodes)."""
        self.pop_metrics()
        quota = split_evenly(episodes, self.num_envs) if episodes else [0] * self.num_envs
        active = [i for i in range(self.num_envs) if quota[i] > 0 or not episodes]
        self._start_evaluation(active, reset=reset or bool(episodes))
        steps = 0
        while active and (episodes or steps < timesteps):
            envs = active if episodes else active[: timesteps - steps]
            # A sub-env whose episode ending now is its last one is not reset.
            last = {i for i in envs if quota[i] == 1}
            ended = self._evaluation_step(envs, explore, last)
            steps += len(envs)
            if episodes:
                for i in ended:
                    quota[i] -= 1
                active = [i for i in active if quota[i] > 0]
        self._faulty_ids.clear()  # (no rows are kept here)
        return self.pop_metrics(), steps

    def _start_evaluation(self, active: list[int], reset: bool) -> None:
        """Before ``run()`` steps the sub-envs ``active``: start them on fresh episodes with
        ``reset`` (and on a runner's first use)."""
        raise NotImplementedError

    def _evaluation_step(self, envs: list[int], explore: bool | None, last: set[int]) -> list[int]:
        """One evaluation step of the sub-envs ``envs`` (sampled rows are not kept); returns
        those whose episode ended (a failed sub-env's does not count: it runs another). Those
        in ``last`` are not reset when their episode ends."""
        raise NotImplementedError

    @staticmethod
    def _metrics_of(episode: Episode, agent_rewards: bool) -> EpisodeMetrics:
        """What the worker reports of a finished episode (each agent's rewards with
        ``agent_rewards``: a multi-agent env's)."""
        return EpisodeMetrics(
            episode.length,
            episode.total_reward,
            dict(episode.custom_metrics),
            {k: list(v) for k, v in episode.hist_data.items()},
            dict(episode.agent_rewards) if agent_rewards else {},
        )


class PolicyModules(Mapping[str, Any]):
    """The modules of a worker's policies by policy id, read as they are asked for (a policy
    stored out of memory is loaded then)."""

    def __init__(self, policy_map: Any) -> None:
        self._policy_map = policy_map

    def __getitem__(self, policy_id: str) -> Any:
        return self._policy_map[policy_id].module

    def __iter__(self) -> Iterator[str]:
        return iter(self._policy_map)

    def __len__(self) -> int:
        return len(self._policy_map)
