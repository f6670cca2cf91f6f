"""External envs: the application runs the episodes and asks the policy for actions, instead of
the sampler stepping a gymnasium env (the reference's ``ExternalEnv`` and
``ExternalMultiAgentEnv``), and ``ExternalEnvSampler``, which turns those calls into experience
rows.

Control is inverted: a user's ``run()`` loop (in a thread of its own) calls
``start_episode``, then ``get_action(obs)`` (on-policy) or ``log_action(obs, action)``
(off-policy, the application chose the action), ``log_returns(reward)`` any number of times,
and ``end_episode(obs)``. As in the reference, a reward is attributed to the previous action,
rewards accumulate until the next action, and no reward logged before an action means 0.0; the
rewards logged before an episode's first action count in its return only (no transition holds
them). Episodes may run concurrently, but the calls of one episode must be serial: a call for
an episode that has one in flight is refused (``EpisodeConflictError``).

The sampler acts with the worker's policies as the env runners do: each observation is
preprocessed (``worker.preprocessors[pid]``) and filtered (``worker.filters[pid]``), and each
action goes to the application in the env's space (unsquashed or clipped,
``action_processing``) but is recorded as the policy computed it. Concurrent calls are batched
into one forward pass per policy, without a thread of the sampler's own: the first caller to
find the sampler idle computes the actions of every call waiting at that moment, the others
wait for it (so one client pays no thread hand-off, and many share forward passes).

Rows are raw (no advantages or n-step returns: the worker's input postprocesses them):
``obs, new_obs, actions, rewards (float32, clip_rewards applied), terminateds, truncateds,
eps_id (int64), t (each agent's own step), action_logp, action_dist_inputs`` and the policy's
other extra outputs (``vf_preds``); multi-agent rows add ``agent_index``. ``end_episode``
terminates an episode (the reference has no truncation). Rows of one agent's episode are
contiguous and in time order in every batch. With ``batch_mode="truncate_episodes"`` a batch is
cut once the finished and running rows reach ``rollout_fragment_length`` (a cut segment
bootstraps from V(``new_obs``) of its last row); with ``"complete_episodes"`` only finished
episodes are returned. ``training_enabled=False`` episodes act and report metrics but record no
rows. A model with memory (``use_lstm``, ``use_attention``) is refused: the state of every
external episode would have to be kept.

An episode with no call for ``episode_timeout`` seconds is dropped (its client is taken to have
vanished): its rows not handed out yet go, it counts as a faulty episode, and later calls for
it are refused with a reason; the other episodes lose nothing.
"""

from __future__ import annotations

import itertools
import threading
import time
import uuid
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import gymnasium as gym
import numpy as np
import numpy.typing as npt

from rlconf.config_checks import DEFAULT_POLICY_ID
from runtime.core.multi_agent_batch import MultiAgentBatch
from runtime.core.sample_batch import SampleBatch
from runtime.core.settings import settings_of
from runtime.env.action_processing import action_processor, reward_clipper
from runtime.env.agent_rows import AGENT_INDEX
from runtime.env.episode import EpisodeMetrics, MultiAgentEpisode, faulty_episode
from runtime.offline.input_reader import InputReader

if TYPE_CHECKING:
    from runtime.core.policy import TorchPolicy

Array = npt.NDArray[Any]
SB = SampleBatch

#: How long a call of an ExternalEnv that no sampler serves yet waits for one.
ATTACH_TIMEOUT_S = 60.0
#: How many finished or dropped episode ids are remembered (to refuse their reuse by name).
REMEMBERED_IDS = 100_000
#: The agent key of a single-agent episode.
_SINGLE: Any = None


class ExternalEnvClosed(RuntimeError):
    """The sampler of this env was closed (its worker stopped): no more calls are served."""


class EpisodeError(ValueError):
    """A call that does not fit the state of its episode; ``status`` is the HTTP status the
    policy server answers it with."""

    status: ClassVar[int] = 400


class UnknownEpisodeError(EpisodeError):
    status = 404


class EpisodeConflictError(EpisodeError):
    status = 409


class TooManyEpisodesError(EpisodeError):
    status = 503


_previous_excepthook = threading.excepthook


def _quiet_when_closed(args: threading.ExceptHookArgs) -> None:
    """A ``run()`` loop ended by its worker's stop (``ExternalEnvClosed``) is no error to
    print; anything else goes to the hook that was there before."""
    if isinstance(args.thread, ExternalEnv) and isinstance(args.exc_value, ExternalEnvClosed):
        return
    _previous_excepthook(args)


threading.excepthook = _quiet_when_closed


# ---------------------------------------------------------------------- the user's classes


class ExternalEnv(threading.Thread):
    """An env whose episodes the application drives: override ``run()`` with a loop that calls
    ``start_episode``, ``get_action`` / ``log_action``, ``log_returns`` and ``end_episode``.

    ``run()`` runs in this (daemon) thread, started by the sampler that serves the env
    (``ExternalEnvSampler``); calls made before one serves it wait for it (up to a minute).
    ``max_concurrent`` bounds the episodes running at once (``TooManyEpisodesError`` beyond).
    """

    #: Whether the episodes' observations, actions and rewards are dicts keyed by agent id.
    multi_agent: ClassVar[bool] = False

    def __init__(
        self,
        action_space: gym.Space[Any],
        observation_space: gym.Space[Any],
        max_concurrent: int = 100,
    ) -> None:
        threading.Thread.__init__(self, name=type(self).__name__, daemon=True)
        self.action_space = action_space
        self.observation_space = observation_space
        self.max_concurrent = int(max_concurrent)
        self._sampler: ExternalEnvSampler | None = None
        self._attached = threading.Event()

    def run(self) -> None:
        """Override: the application's loop (see the class doc). Several episodes may run at
        once; the calls of one episode must be serial."""
        raise NotImplementedError(
            f"{type(self).__name__}.run(): override it with the loop that drives the episodes "
            "(start_episode, get_action / log_action, log_returns, end_episode)"
        )

    def start_episode(self, episode_id: str | None = None, training_enabled: bool = True) -> str:
        """Record the start of an episode; returns its id (a fresh one for None).
        ``training_enabled=False``: act and report its metrics, but learn nothing from it."""
        return self._served().start_episode(episode_id, training_enabled)

    def get_action(self, episode_id: str, observation: Any) -> Any:
        """Record an observation and return the on-policy action (in the env's action space)."""
        return self._served().act(episode_id, observation)

    def log_action(self, episode_id: str, observation: Any, action: Any) -> None:
        """Record an observation and the (off-policy) action the application took for it."""
        self._served().act(episode_id, observation, action, off_policy=True)

    def log_returns(self, episode_id: str, reward: float, info: Any = None) -> None:
        """Record a reward: it goes to the previous action; rewards add up until the next one."""
        self._served().log_returns(episode_id, {_SINGLE: reward}, {_SINGLE: info}, None)

    def end_episode(self, episode_id: str, observation: Any) -> None:
        """Record the end of an episode (terminated) with its last observation."""
        self._served().end_episode(episode_id, observation)

    # ------------------------------------------------------------------ sampler

    def _attach(self, sampler: ExternalEnvSampler) -> None:
        self._sampler = sampler
        self._attached.set()

    def _served(self) -> ExternalEnvSampler:
        if not self._attached.wait(ATTACH_TIMEOUT_S):
            raise RuntimeError(
                f"{type(self).__name__}: no sampler serves this env after {ATTACH_TIMEOUT_S:g} "
                "s; a RolloutWorker serves an ExternalEnv that its env creator made (or make "
                "runtime.env.external_env.ExternalEnvSampler(env, worker, fragment))"
            )
        assert self._sampler is not None
        return self._sampler


class ExternalMultiAgentEnv(ExternalEnv):
    """``ExternalEnv`` with dicts keyed by agent id: ``get_action(episode_id, obs_dict)``
    returns the actions of the agents in ``obs_dict``; each agent is mapped to its policy
    (``policy_mapping_fn``) when it first appears; ``log_returns`` takes a reward dict (each
    agent's rewards go to its previous action), and a ``multiagent_done_dict`` whose True
    entries close those agents' transitions (terminated) at the next call
    (``"__all__": True``: every agent's)."""

    multi_agent = True

    def get_action(self, episode_id: str, observation_dict: Any) -> Any:
        """Record the observations of the agents that act and return their actions."""
        return self._served().act(episode_id, observation_dict)

    def log_action(self, episode_id: str, observation_dict: Any, action_dict: Any) -> None:
        """Record the observations and the (off-policy) actions the application took."""
        self._served().act(episode_id, observation_dict, action_dict, off_policy=True)

    def log_returns(  # type: ignore[override]
        self,
        episode_id: str,
        reward_dict: Mapping[Any, float],
        info_dict: Mapping[Any, Any] | None = None,
        multiagent_done_dict: Mapping[Any, bool] | None = None,
    ) -> None:
        """Record rewards per agent (each to that agent's previous action) and which agents are
        done."""
        self._served().log_returns(episode_id, reward_dict, info_dict, multiagent_done_dict)

    def end_episode(self, episode_id: str, observation_dict: Any) -> None:
        """Record the end of an episode: every agent's transition closes (terminated), with its
        observation in ``observation_dict`` (or its last one)."""
        self._served().end_episode(episode_id, observation_dict)


# ---------------------------------------------------------------------- the sampler's state


@dataclass(frozen=True)
class ExternalSamplerSettings:
    """What ``ExternalEnvSampler`` reads of the worker's config."""

    batch_mode: str
    normalize_actions: bool
    clip_actions: bool
    clip_rewards: Any


class _Open:
    """An agent's transition from its action until its next observation."""

    __slots__ = ("action", "extra", "obs")

    def __init__(self, obs: Array, action: Array, extra: dict[str, Array]) -> None:
        self.obs = obs
        self.action = action
        self.extra = extra


class _Agent:
    """One agent of one episode: its policy, its open transition and its rows not cut yet."""

    __slots__ = ("done", "index", "open", "policy_id", "rows", "steps")

    def __init__(self, policy_id: str, index: int) -> None:
        self.policy_id = policy_id
        self.index = index
        self.open: _Open | None = None
        self.steps = 0
        self.rows: list[dict[str, Any]] = []
        self.done = False


class _Episode:
    __slots__ = (
        "agent_rewards",
        "agents",
        "busy",
        "done_next",
        "ended",
        "eps_id",
        "id",
        "infos",
        "last_active",
        "length",
        "mapping",
        "pending",
        "total_reward",
        "training",
        "uncut_steps",
    )

    def __init__(self, episode_id: str, eps_id: int, training: bool, mapping: Any) -> None:
        self.id = episode_id
        self.eps_id = eps_id
        self.training = training
        #: Multi-agent: the episode that maps agents to policies (fixed once mapped).
        self.mapping: MultiAgentEpisode | None = mapping
        self.agents: dict[Any, _Agent] = {}
        #: Rewards logged since each agent's last action.
        self.pending: dict[Any, float] = defaultdict(float)
        self.done_next: set[Any] = set()
        self.infos: dict[Any, Any] = {}
        self.agent_rewards: dict[tuple[Any, str], float] = defaultdict(float)
        self.total_reward = 0.0
        self.length = 0
        self.uncut_steps = 0
        self.busy = False
        self.ended = False
        self.last_active = time.monotonic()


class _Request:
    """One act or end call waiting to be processed (by whichever caller leads)."""

    __slots__ = ("actions", "done", "end", "episode", "error", "obs", "result")

    def __init__(
        self, episode: _Episode, obs: dict[Any, Any], actions: dict[Any, Any] | None, end: bool
    ) -> None:
        self.episode = episode
        self.obs = obs
        self.actions = actions
        self.end = end
        self.result: dict[Any, Any] = {}
        self.error: BaseException | None = None
        self.done = False


# ---------------------------------------------------------------------- the sampler


class ExternalEnvSampler(InputReader):
    """Serves an ``ExternalEnv`` (or ``ExternalMultiAgentEnv``) with ``worker``'s policies and
    collects its episodes' rows; ``next()`` returns at least ``rollout_fragment_length`` rows
    (see the module doc), ``pop_metrics()`` the episodes finished since the last call.

    Made, it attaches itself to ``env`` and starts the env's thread (``start_env``). ``close()``
    stops serving: every later call of the env (and a waiting ``next()``) raises
    ``ExternalEnvClosed``, which ends a ``run()`` loop that does not catch it.
    ``episode_timeout``: seconds without a call after which a running episode is dropped (None:
    never).
    """

    #: The rows' actions are in the policy's coordinates already (as the env runners record
    #: them): an input must not normalise them again.
    rows_in_policy_space: ClassVar[bool] = True

    def __init__(
        self,
        env: ExternalEnv,
        worker: Any,
        rollout_fragment_length: int,
        *,
        episode_timeout: float | None = None,
        start_env: bool = True,
    ) -> None:
        if not isinstance(env, ExternalEnv):
            raise TypeError(
                f"ExternalEnvSampler serves an ExternalEnv or ExternalMultiAgentEnv, not a "
                f"{type(env).__name__}"
            )
        if int(rollout_fragment_length) < 1:
            raise ValueError(
                f"rollout_fragment_length={rollout_fragment_length!r}; allowed: an int >= 1"
            )
        self.env = env
        self.worker = worker
        self.multi_agent = bool(env.multi_agent)
        self.fragment = int(rollout_fragment_length)
        self.episode_timeout = None if episode_timeout is None else float(episode_timeout)
        settings = settings_of(ExternalSamplerSettings, worker.config, type(self).__name__)
        self.complete_episodes = settings.batch_mode == "complete_episodes"
        self._normalize = bool(settings.normalize_actions)
        self._clip = bool(settings.clip_actions)
        self._reward_clip: Callable[[Array], Array] = reward_clipper(settings.clip_rewards)
        policy_ids = list(worker.policy_map.keys())
        if not self.multi_agent:
            if len(policy_ids) != 1:
                raise ValueError(
                    f"a single-agent {type(env).__name__} is served by one policy; the worker "
                    f"has {sorted(policy_ids)} (use an ExternalMultiAgentEnv)"
                )
            self.single_policy: str = policy_ids[0]
        else:
            self.single_policy = DEFAULT_POLICY_ID
        for pid in policy_ids:
            if worker.policy_map[pid].is_recurrent():
                raise ValueError(
                    f"policy {pid!r} has a model with memory (use_lstm / use_attention); an "
                    "ExternalEnv does not keep each external episode's state: use a model "
                    "without memory"
                )
        self._eps_ids = itertools.count((int(worker.worker_index) << 40) + (1 << 39))
        self._agent_index: dict[Any, int] = {}
        self._schemas: dict[str, dict[str, tuple[np.dtype[Any], tuple[int, ...]]]] = {}
        self._action_fns: dict[str, Any] = {}

        self._lock = threading.Lock()
        #: Callers waiting for the leader, and the leader's hand-back.
        self._turn = threading.Condition(self._lock)
        #: next() waiting for rows.
        self._rows_ready = threading.Condition(self._lock)
        self._pending: list[_Request] = []
        self._leading = False
        self._closed = False
        self._episodes: dict[str, _Episode] = {}
        #: Finished or dropped episode ids -> why they are gone.
        self._gone: OrderedDict[str, str] = OrderedDict()
        self._ready: dict[str, list[dict[str, Array]]] = defaultdict(list)
        self._ready_rows = 0
        self._ready_env_steps = 0
        self._running_rows = 0
        self._metrics: list[EpisodeMetrics] = []

        env._attach(self)
        if start_env and env.ident is None:
            env.start()

    # ------------------------------------------------------------------ spaces and policies

    def policy(self, policy_id: str) -> TorchPolicy:
        policy: TorchPolicy = self.worker.policy_map[policy_id]
        return policy

    def observation_space(self, policy_id: str) -> gym.Space[Any]:
        """The raw observation space of a policy (what the application observes)."""
        space: gym.Space[Any] = self.worker.policy_spaces[policy_id][0]
        return space

    def action_space(self, policy_id: str) -> gym.Space[Any]:
        """The env's action space of a policy (what the application gets and logs)."""
        space: gym.Space[Any] = self.worker.policy_spaces[policy_id][1]
        return space

    def policy_for(self, episode_id: str, agent_id: Any) -> str:
        """The policy ``agent_id`` acts with in the running episode ``episode_id`` (mapped on
        first use, as the multi-agent runner does)."""
        if not self.multi_agent:
            return self.single_policy
        with self._lock:
            episode = self._running(episode_id)
            return self._policy_of(episode, agent_id)

    def row_schema(self, policy_id: str) -> dict[str, tuple[np.dtype[Any], tuple[int, ...]]]:
        """Each column of a policy's rows: its dtype and the shape of one row (from one forward
        pass on a zero observation, made once)."""
        schema = self._schemas.get(policy_id)
        if schema is not None:
            return schema
        policy = self.policy(policy_id)
        shape = tuple(self.worker.preprocessors[policy_id].shape)
        actions, _, extra = policy.compute_actions(
            np.zeros((1, *shape), dtype=np.float32), explore=False
        )
        schema = {
            SB.OBS: (np.dtype(np.float32), shape),
            SB.NEXT_OBS: (np.dtype(np.float32), shape),
            SB.ACTIONS: (actions.dtype, tuple(actions.shape[1:])),
            SB.REWARDS: (np.dtype(np.float32), ()),
            SB.TERMINATEDS: (np.dtype(np.bool_), ()),
            SB.TRUNCATEDS: (np.dtype(np.bool_), ()),
            SB.EPS_ID: (np.dtype(np.int64), ()),
            SB.T: (np.dtype(np.int64), ()),
        }
        if self.multi_agent:
            schema[AGENT_INDEX] = (np.dtype(np.int64), ())
        for name, values in extra.items():
            schema[name] = (values.dtype, tuple(values.shape[1:]))
        self._schemas[policy_id] = schema
        return schema

    def new_episode_ids(self, count: int) -> list[int]:
        """``count`` fresh ``eps_id`` values (for rows that come from elsewhere)."""
        with self._lock:
            return [next(self._eps_ids) for _ in range(count)]

    # ------------------------------------------------------------------ the env's calls

    def start_episode(self, episode_id: str | None, training_enabled: bool) -> str:
        if episode_id is None:
            episode_id = uuid.uuid4().hex
        if not isinstance(episode_id, str):
            raise EpisodeError(
                f"episode_id {episode_id!r} is a {type(episode_id).__name__}; allowed: a str, "
                "or None for a fresh id"
            )
        with self._lock:
            self._check_open()
            if episode_id in self._episodes:
                raise EpisodeConflictError(f"episode {episode_id!r} is already started")
            if episode_id in self._gone:
                raise EpisodeConflictError(
                    f"episode {episode_id!r} {self._gone[episode_id]}; start a new one"
                )
            if len(self._episodes) >= self.env.max_concurrent:
                self._drop_idle(time.monotonic())
            if len(self._episodes) >= self.env.max_concurrent:
                raise TooManyEpisodesError(
                    f"{len(self._episodes)} episodes are running, the most allowed "
                    f"(max_concurrent={self.env.max_concurrent}); end one first"
                )
            mapping = None
            if self.multi_agent:
                mapping = MultiAgentEpisode(
                    0, 0, int(self.worker.worker_index), self.worker.map_agent, self.worker
                )
            episode = _Episode(episode_id, next(self._eps_ids), bool(training_enabled), mapping)
            if mapping is not None:
                mapping.episode_id = episode.eps_id
            self._episodes[episode_id] = episode
        return episode_id

    def act(
        self,
        episode_id: str,
        observation: Any,
        action: Any = None,
        *,
        off_policy: bool = False,
        checked: bool = False,
    ) -> Any:
        """``get_action`` (``off_policy=False``: returns the action) or ``log_action``.
        ``checked``: the values are known to be in their spaces (the server decoded them so)."""
        episode = self._claim(episode_id)
        try:
            obs = self._agent_values(episode, observation, "observation")
            actions = None
            if off_policy:
                actions = self._agent_values(episode, action, "action")
                missing = set(obs) - set(actions)
                if missing or set(actions) - set(obs):
                    raise EpisodeError(
                        f"log_action of episode {episode_id!r}: the actions are of agents "
                        f"{sorted(map(repr, actions))}, the observations of "
                        f"{sorted(map(repr, obs))}; give one action per observation"
                    )
            if not checked:
                obs = {a: self._checked_obs(episode, a, o) for a, o in obs.items()}
                if actions is not None:
                    actions = {a: self._checked_action(episode, a, v) for a, v in actions.items()}
            request = _Request(episode, obs, actions, end=False)
            self._submit(request)
        finally:
            self._release(episode)
        if off_policy:
            return None
        return request.result if self.multi_agent else request.result.get(_SINGLE)

    def log_returns(
        self,
        episode_id: str,
        rewards: Mapping[Any, Any],
        infos: Mapping[Any, Any] | None,
        dones: Mapping[Any, Any] | None,
    ) -> None:
        checked: dict[Any, float] = {}
        for agent, reward in rewards.items():
            if isinstance(reward, bool) or not isinstance(reward, int | float | np.number):
                raise EpisodeError(
                    f"log_returns of episode {episode_id!r}: reward {reward!r} is a "
                    f"{type(reward).__name__}; allowed: a number"
                )
            checked[agent] = float(reward)
            if not np.isfinite(checked[agent]):
                raise EpisodeError(
                    f"log_returns of episode {episode_id!r}: reward {reward!r} is not finite"
                )
        if self.multi_agent and infos is not None and not isinstance(infos, Mapping):
            raise EpisodeError(f"log_returns of episode {episode_id!r}: info_dict is not a dict")
        with self._lock:
            episode = self._running(episode_id)
            if episode.busy:
                raise EpisodeConflictError(
                    f"episode {episode_id!r} has a call in flight; the calls of one episode "
                    "must be serial"
                )
            episode.last_active = time.monotonic()
            for agent, reward in checked.items():
                episode.pending[agent] += reward
                episode.total_reward += reward
                if self.multi_agent:
                    episode.agent_rewards[(agent, self._policy_of(episode, agent))] += reward
            for agent, info in (infos or {}).items():
                if info is not None:
                    episode.infos[agent] = info
            for agent, done in (dones or {}).items():
                if not done:
                    continue
                if agent == "__all__":
                    episode.done_next.update(episode.agents)
                else:
                    episode.done_next.add(agent)

    def end_episode(self, episode_id: str, observation: Any, *, checked: bool = False) -> None:
        episode = self._claim(episode_id)
        try:
            obs = self._agent_values(episode, observation, "observation")
            if not checked:
                obs = {a: self._checked_obs(episode, a, o) for a, o in obs.items()}
            self._submit(_Request(episode, obs, None, end=True))
        finally:
            self._release(episode)

    # ------------------------------------------------------------------ checks

    def _check_open(self) -> None:
        if self._closed:
            raise ExternalEnvClosed(
                f"the sampler of {type(self.env).__name__} is closed (its worker stopped)"
            )

    def _running(self, episode_id: Any) -> _Episode:
        self._check_open()
        episode = self._episodes.get(episode_id) if isinstance(episode_id, str) else None
        if episode is None:
            why = self._gone.get(episode_id) if isinstance(episode_id, str) else None
            if why is not None:
                raise UnknownEpisodeError(f"episode {episode_id!r} {why}")
            raise UnknownEpisodeError(
                f"episode {episode_id!r} is not running (start it with start_episode first)"
            )
        return episode

    def _claim(self, episode_id: str) -> _Episode:
        with self._lock:
            episode = self._running(episode_id)
            if episode.busy:
                raise EpisodeConflictError(
                    f"episode {episode_id!r} has a call in flight; the calls of one episode "
                    "must be serial"
                )
            episode.busy = True
            episode.last_active = time.monotonic()
            return episode

    def _release(self, episode: _Episode) -> None:
        with self._lock:
            episode.busy = False
            episode.last_active = time.monotonic()

    def _agent_values(self, episode: _Episode, values: Any, what: str) -> dict[Any, Any]:
        if not self.multi_agent:
            return {_SINGLE: values}
        if not isinstance(values, Mapping):
            raise EpisodeError(
                f"episode {episode.id!r}: the {what} of a multi-agent episode is a "
                f"{type(values).__name__}; allowed: a dict keyed by agent id"
            )
        return dict(values)

    def _policy_of(self, episode: _Episode, agent: Any) -> str:
        if episode.mapping is None:
            return self.single_policy
        return episode.mapping.policy_for(agent)

    def _checked_obs(self, episode: _Episode, agent: Any, obs: Any) -> Any:
        policy_id = self._policy_of(episode, agent)
        return _in_space(
            self.observation_space(policy_id), obs, _whose("observation", episode, agent)
        )

    def _checked_action(self, episode: _Episode, agent: Any, action: Any) -> Any:
        policy_id = self._policy_of(episode, agent)
        return _in_space(self.action_space(policy_id), action, _whose("action", episode, agent))

    # ------------------------------------------------------------------ batching

    def _submit(self, request: _Request) -> None:
        """Queue ``request``; the first caller to find no leader processes every queued request
        at once (one forward pass per policy), the others wait for it."""
        with self._turn:
            self._check_open()
            self._pending.append(request)
            while not request.done:
                if not self._leading:
                    self._leading = True
                    batch, self._pending = self._pending, []
                    break
                self._turn.wait()
            else:
                batch = []
        if batch:
            try:
                self._process(batch)
            except BaseException as error:
                for r in batch:
                    if r.error is None and not r.result:
                        r.error = error
            finally:
                with self._turn:
                    self._leading = False
                    for r in batch:
                        r.done = True
                    self._turn.notify_all()
        if request.error is not None:
            raise request.error

    def _process(self, batch: list[_Request]) -> None:
        """Close the transitions the observations end, compute the actions of the agents that
        act (one forward pass per policy), open their transitions, finish ended episodes."""
        # 1. The observations per policy: (request, agent, raw observation).
        arrivals: dict[str, list[tuple[_Request, Any, Any]]] = defaultdict(list)
        for request in batch:
            episode = request.episode
            for agent, obs in request.obs.items():
                arrivals[self._policy_of(episode, agent)].append((request, agent, obs))
        # 2. Preprocess and filter; compute the actions of the agents that act.
        worker = self.worker
        computed: dict[str, tuple[Array, list[int], Array, dict[str, Array]]] = {}
        for policy_id, items in arrivals.items():
            try:
                raw = [obs for _, _, obs in items]
                processed = worker.filters[policy_id](
                    worker.preprocessors[policy_id].transform_many(raw), True
                )
                acting = [
                    k
                    for k, (request, agent, _) in enumerate(items)
                    if not request.end and not self._is_done(request.episode, agent)
                ]
                actions: Array = processed[:0]
                extra: dict[str, Array] = {}
                if acting:
                    acting_obs = processed if len(acting) == len(items) else processed[acting]
                    actions, extra = self._compute(
                        policy_id, acting_obs, [items[k][:2] for k in acting]
                    )
                computed[policy_id] = (processed, acting, actions, extra)
            except Exception as error:
                for request, _, _ in items:
                    request.error = error
        # 3. Bookkeeping, under the lock (log_returns and cuts touch the same state).
        finished: list[_Episode] = []
        with self._lock:
            for policy_id, items in arrivals.items():
                if policy_id not in computed:
                    continue
                processed, acting, actions, extra = computed[policy_id]
                for k, (request, agent, _) in enumerate(items):
                    if request.error is None:
                        self._arrive(request, agent, policy_id, processed[k])
                action_fn = self._action_fn(policy_id)
                for j, k in enumerate(acting):
                    request, agent, _ = items[k]
                    if request.error is not None:
                        continue
                    request.episode.agents[agent].open = _Open(
                        processed[k], actions[j], {name: v[j] for name, v in extra.items()}
                    )
                    if request.actions is None:
                        request.result[agent] = action_fn(actions[j : j + 1])[0]
            for request in batch:
                episode = request.episode
                if request.error is not None:
                    continue
                if request.end:
                    for agent, state in episode.agents.items():
                        if state.open is not None:
                            self._close(episode, agent, state, None, terminated=True)
                    finished.append(episode)
                else:
                    episode.length += 1
                    if episode.training:
                        episode.uncut_steps += 1
                    # Agents marked done but not observed close on their last observation.
                    for agent in list(episode.done_next):
                        marked = episode.agents.get(agent)
                        if marked is not None and marked.open is not None:
                            self._close(episode, agent, marked, None, terminated=True)
                            marked.done = True
                    episode.done_next.clear()
            for episode in finished:
                self._finish(episode)
            self._notify_rows()

    def _is_done(self, episode: _Episode, agent: Any) -> bool:
        return agent in episode.done_next

    def _compute(
        self, policy_id: str, obs: Array, keys: list[tuple[_Request, Any]]
    ) -> tuple[Array, dict[str, Array]]:
        """The policy's actions and extra outputs for ``obs``; rows whose request logged an
        off-policy action get that action (in the policy's coordinates) and its
        log-likelihood under the policy."""
        policy = self.policy(policy_id)
        actions, _, extra = policy.compute_actions(obs)
        logged = [j for j, (request, _) in enumerate(keys) if request.actions is not None]
        if logged:
            actions = actions.copy()
            for j in logged:
                request, agent = keys[j]
                assert request.actions is not None
                actions[j] = self._policy_action(policy_id, request.actions[agent], actions.dtype)
            rows = np.asarray(logged)
            logp = extra.get(SB.ACTION_LOGP)
            if logp is not None:
                logp = logp.copy()
                if policy.dist_class is not None:
                    logp[rows] = policy.compute_log_likelihoods(actions[rows], obs[rows])
                else:
                    logp[rows] = 0.0
                extra = {**extra, SB.ACTION_LOGP: logp}
        return actions, extra

    def _policy_action(self, policy_id: str, action: Any, dtype: np.dtype[Any]) -> Array:
        """An env action in the policy's coordinates: with ``normalize_actions`` a bounded Box
        action is mapped into [-1, 1] (the inverse of the unsquashing)."""
        space = self.action_space(policy_id)
        value = np.asarray(action, dtype=np.float64)
        if (
            self._normalize
            and isinstance(space, gym.spaces.Box)
            and np.all(np.isfinite(space.low))
            and np.all(np.isfinite(space.high))
        ):
            value = 2.0 * (value - space.low) / (space.high - space.low) - 1.0
        return value.astype(dtype)

    def _action_fn(self, policy_id: str) -> Any:
        fn = self._action_fns.get(policy_id)
        if fn is None:
            fn = action_processor(self.action_space(policy_id), self._normalize, self._clip)
            self._action_fns[policy_id] = fn
        return fn

    # ------------------------------------------------------------------ rows (under the lock)

    def _arrive(self, request: _Request, agent: Any, policy_id: str, obs: Array) -> None:
        """An observation of ``agent``: it closes the agent's open transition."""
        episode = request.episode
        state = episode.agents.get(agent)
        if state is None:
            index = self._agent_index.get(agent)
            if index is None:
                index = self._agent_index[agent] = len(self._agent_index)
            state = episode.agents[agent] = _Agent(policy_id, index)
        if state.open is not None:
            terminated = request.end or agent in episode.done_next
            self._close(episode, agent, state, obs, terminated=terminated)
            if agent in episode.done_next:
                episode.done_next.discard(agent)
                state.done = True
        else:
            # Rewards before an agent's first action (or after it was done) count in the
            # returns only: no transition holds them.
            episode.pending.pop(agent, None)
            state.done = False

    def _close(
        self, episode: _Episode, agent: Any, state: _Agent, new_obs: Array | None, terminated: bool
    ) -> None:
        transition = state.open
        assert transition is not None
        state.open = None
        reward = episode.pending.pop(agent, 0.0)
        if not episode.training:
            state.steps += 1
            return
        row: dict[str, Any] = {
            SB.OBS: transition.obs,
            SB.NEXT_OBS: transition.obs if new_obs is None else new_obs,
            SB.ACTIONS: transition.action,
            SB.REWARDS: reward,
            SB.TERMINATEDS: terminated,
            SB.TRUNCATEDS: False,
            SB.EPS_ID: episode.eps_id,
            SB.T: state.steps,
            **transition.extra,
        }
        if self.multi_agent:
            row[AGENT_INDEX] = state.index
        state.steps += 1
        state.rows.append(row)
        self._running_rows += 1

    def _finish(self, episode: _Episode) -> None:
        for state in episode.agents.values():
            self._cut_agent(state)
        self._ready_env_steps += episode.uncut_steps
        episode.uncut_steps = 0
        del self._episodes[episode.id]
        episode.ended = True
        self._remember(episode.id, "has already completed")
        agent_rewards = dict(episode.agent_rewards) if self.multi_agent else {}
        self._metrics.append(
            EpisodeMetrics(episode.length, episode.total_reward, agent_rewards=agent_rewards)
        )

    def _cut_agent(self, state: _Agent) -> None:
        if not state.rows:
            return
        rows, state.rows = state.rows, []
        schema = self.row_schema(state.policy_id)
        columns = {
            name: np.asarray([row[name] for row in rows], dtype=schema[name][0]) for name in schema
        }
        columns[SB.REWARDS] = self._reward_clip(
            np.asarray([row[SB.REWARDS] for row in rows], dtype=np.float64)
        ).astype(np.float32)
        self._ready[state.policy_id].append(columns)
        self._running_rows -= len(rows)
        self._ready_rows += len(rows)

    def _cut_running(self) -> None:
        for episode in self._episodes.values():
            for state in episode.agents.values():
                self._cut_agent(state)
            self._ready_env_steps += episode.uncut_steps
            episode.uncut_steps = 0

    def _remember(self, episode_id: str, why: str) -> None:
        self._gone[episode_id] = why
        while len(self._gone) > REMEMBERED_IDS:
            self._gone.popitem(last=False)

    def _notify_rows(self) -> None:
        enough = self._ready_rows + (0 if self.complete_episodes else self._running_rows)
        if enough >= self.fragment:
            self._rows_ready.notify_all()

    def _drop_idle(self, now: float) -> None:
        """Drop the episodes without a call for ``episode_timeout`` seconds (their clients are
        taken to have vanished): their rows not cut yet go, each counts as a faulty episode."""
        if self.episode_timeout is None:
            return
        for episode in list(self._episodes.values()):
            idle = now - episode.last_active
            if episode.busy or idle < self.episode_timeout:
                continue
            for state in episode.agents.values():
                self._running_rows -= len(state.rows)
                state.rows = []
            del self._episodes[episode.id]
            self._remember(
                episode.id,
                f"was dropped after {idle:.1f} s without a call "
                f"(episode_timeout={self.episode_timeout:g} s)",
            )
            self._metrics.append(faulty_episode())

    # ------------------------------------------------------------------ rows to the worker

    def add_rows(self, policy_id: str, columns: dict[str, Array], env_steps: int) -> None:
        """Rows collected elsewhere (a local-inference client's), already checked against
        ``row_schema``: handed out with the next batch."""
        rows = len(columns[SB.OBS])
        if rows == 0:
            return
        with self._lock:
            self._check_open()
            self._ready[policy_id].append(columns)
            self._ready_rows += rows
            self._ready_env_steps += int(env_steps)
            self._notify_rows()

    def add_metrics(self, metrics: list[EpisodeMetrics]) -> None:
        """Episode summaries from elsewhere, for ``pop_metrics``."""
        with self._lock:
            self._metrics.extend(metrics)

    def poll(self, timeout: float | None, *, partial: bool = False) -> Any:
        """Wait up to ``timeout`` seconds (None: as long as it takes) for a fragment's rows and
        return them as a batch; when the time is up, None, or with ``partial`` whatever there is
        (running episodes cut, with ``truncate_episodes``), None if nothing."""
        deadline = None if timeout is None else time.monotonic() + float(timeout)
        with self._lock:
            while True:
                now = time.monotonic()
                self._drop_idle(now)
                self._check_open()
                if not self.complete_episodes:
                    if self._ready_rows + self._running_rows >= self.fragment:
                        self._cut_running()
                        break
                elif self._ready_rows >= self.fragment:
                    break
                if deadline is not None and now >= deadline:
                    if not partial:
                        return None
                    if not self.complete_episodes:
                        self._cut_running()
                    if self._ready_rows == 0:
                        return None
                    break
                wait = 0.5 if deadline is None else min(0.5, deadline - now)
                self._rows_ready.wait(max(wait, 0.0))
            return self._take()

    def next(self) -> SampleBatch | MultiAgentBatch:
        """The next batch of at least ``rollout_fragment_length`` rows (blocks until then)."""
        batch: SampleBatch | MultiAgentBatch = self.poll(None)
        return batch

    def flush(self) -> SampleBatch | MultiAgentBatch | None:
        """Every row there is now (running episodes cut), or None when there are none."""
        result: SampleBatch | MultiAgentBatch | None = self.poll(0.0, partial=True)
        return result

    def pop_metrics(self) -> list[EpisodeMetrics]:
        with self._lock:
            out, self._metrics = self._metrics, []
        return out

    def empty_batch(self) -> SampleBatch | MultiAgentBatch:
        """A batch of no rows, with the columns of a real one (single-agent)."""
        if self.multi_agent:
            return MultiAgentBatch({}, 0)
        schema = self.row_schema(self.single_policy)
        return SampleBatch(
            {name: np.zeros((0, *shape), dtype=dtype) for name, (dtype, shape) in schema.items()}
        )

    def _take(self) -> SampleBatch | MultiAgentBatch:
        ready, self._ready = self._ready, defaultdict(list)
        env_steps = self._ready_env_steps
        self._ready_rows = self._ready_env_steps = 0
        batches: dict[str, SampleBatch] = {}
        for policy_id, parts in ready.items():
            columns = {name: np.concatenate([p[name] for p in parts]) for name in parts[0]}
            keys = [columns[SB.T]]
            if AGENT_INDEX in columns:
                keys.append(columns[AGENT_INDEX])
            keys.append(columns[SB.EPS_ID])
            # Each agent's episode contiguous and in time order, whatever arrived when.
            order = np.lexsort(keys)
            batches[policy_id] = SampleBatch({k: v[order] for k, v in columns.items()})
        if not self.multi_agent:
            single = batches.get(self.single_policy)
            return self.empty_batch() if single is None else single
        return MultiAgentBatch(batches, env_steps)

    # ------------------------------------------------------------------ lifecycle

    def close(self) -> None:
        """Stop serving: the env's later calls and a waiting ``next()`` raise
        ``ExternalEnvClosed``."""
        with self._lock:
            self._closed = True
            self._turn.notify_all()
            self._rows_ready.notify_all()

    @property
    def closed(self) -> bool:
        return self._closed

    def num_running_episodes(self) -> int:
        with self._lock:
            return len(self._episodes)


def _whose(what: str, episode: _Episode, agent: Any) -> str:
    if agent is _SINGLE:
        return f"the {what} of episode {episode.id!r}"
    return f"the {what} of agent {agent!r} in episode {episode.id!r}"


def _in_space(space: gym.Space[Any], value: Any, what: str) -> Any:
    """``value`` (lists made arrays of the space's dtype for Box / MultiDiscrete /
    MultiBinary) if it is in ``space``; else an ``EpisodeError`` naming it and the space."""
    if isinstance(
        space, gym.spaces.Box | gym.spaces.MultiDiscrete | gym.spaces.MultiBinary
    ) and not isinstance(value, np.ndarray):
        try:
            value = np.asarray(value, dtype=space.dtype)
        except (ValueError, TypeError):
            raise EpisodeError(f"{what} {value!r} is not an array of {space}") from None
    try:
        inside = bool(space.contains(value))
    except Exception:  # a space may raise on a value of the wrong kind
        inside = False
    if not inside:
        shown = repr(value) if len(repr(value)) <= 120 else f"a {type(value).__name__}"
        raise EpisodeError(f"{what} {shown} is not in {space}")
    return value
