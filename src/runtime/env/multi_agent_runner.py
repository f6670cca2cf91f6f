"""``MultiAgentRunner``: steps a worker's multi-agent sub-envs in lockstep, with one batched
forward pass per policy per step, and returns ``MultiAgentBatch``es (training) or runs exactly
N episodes or N env steps (evaluation).

Each step (``_step``):

1. the agents that have an observation act: they are grouped by the policy their episode maps
   them to, and each policy computes the actions of its agents of all sub-envs at once;
2. every sub-env steps with its agents' actions (the env output checked unless
   ``disable_env_checking``: fully in a sub-env's first ``FULLY_CHECKED_STEPS`` steps, then
   only what the sampler relies on); rewards add up on each agent's open transition (an agent
   with none, before its first action or once done, has them counted in the returns only); a
   sub-env that raises is made again (``restart_failed_sub_environments``) and its episode
   dropped: its rows and open transitions go, and it counts as a faulty episode;
3. the new observations are preprocessed and filtered per policy in one batch (reset
   observations of the sub-envs whose episode ended included); an agent's transition closes when
   it sees its next observation or is done, and its row goes to its policy's ``PolicyRows``.

A fragment's rows are postprocessed per policy, all its agents' trajectories at once in the
``(T, K)`` layout of ``agent_rows.Layout`` (GAE, n-step returns). With ``count_steps_by=
"agent_steps"`` a fragment is ``rollout_fragment_length`` agent steps per sub-env rather than
env steps.
"""

from __future__ import annotations

import itertools
import time
from collections import defaultdict
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from runtime.callbacks import DefaultCallbacks, overrides
from runtime.core.grouped_acting import GroupedActing
from runtime.core.multi_agent_batch import MultiAgentBatch
from runtime.core.sample_batch import SampleBatch
from runtime.env.action_processing import action_processor, reward_clipper
from runtime.env.agent_rows import AGENT_INDEX, Layout, PolicyRows, trajectory_starts
from runtime.env.episode import MappingFn, MultiAgentEpisode, faulty_episode
from runtime.env.episode_runner import EpisodeRunner
from runtime.env.multi_agent_checks import check_observations, check_reset, check_step

if TYPE_CHECKING:
    from rlconf.algorithm_config import AlgorithmConfig
    from runtime.core.policy import TorchPolicy
    from runtime.env.rollout_worker import RolloutWorker

Array = npt.NDArray[Any]
SB = SampleBatch

#: Unless ``disable_env_checking``, what a sub-env returns in its first this many steps (and
#: its resets until then) is checked fully: ``check_step`` and each observation against its
#: policy's space. Later steps are checked only for what the sampler relies on and costs
#: nothing to test (a 5-tuple whose terminateds and truncateds hold ``"__all__"``): the full
#: checks cost more than the rest of a step's bookkeeping, and an env's output is mostly wrong
#: from the start if at all.
FULLY_CHECKED_STEPS = 100

_PRIVATE = (SB.SEGMENT_ENDS, SB.BOOTSTRAP_VALUES)


class _Open:
    """An agent's transition from its action until its next observation."""

    __slots__ = ("g", "policy_id", "reward")

    def __init__(self, policy_id: str, g: int) -> None:
        self.policy_id = policy_id
        self.g = g
        self.reward = 0.0


class _AgentMemory:
    """What a policy with memory acts from for one agent of one sub-env: its state and the
    action and (summed) reward of its previous transition."""

    __slots__ = ("prev_action", "prev_reward", "state")

    def __init__(self, state: list[Array], prev_action: Any) -> None:
        self.state = state
        self.prev_action = prev_action
        self.prev_reward = 0.0


#: An observation (or an end without one) arriving for an agent: (sub-env, agent, the transition
#: it closes or None, terminated, truncated, info).
Arrival = tuple[int, Any, "_Open | None", bool, bool, Any]


class _Arrived:
    """One policy's arrivals of a step, in order: the raw observations and their ``Arrival``s;
    ``check``: whether the observations are to be checked against the policy's space."""

    __slots__ = ("arrivals", "check", "obs")

    def __init__(self) -> None:
        self.obs: list[Any] = []
        self.arrivals: list[Arrival] = []
        self.check = False


class _Arrivals:
    """What arrives in a step: observations by policy (``by_policy``, in arrival order: the
    order the policy's agents act in next), and ``ends``, transitions that end without an
    observation."""

    __slots__ = ("by_policy", "ends")

    def __init__(self) -> None:
        self.by_policy: defaultdict[str, _Arrived] = defaultdict(_Arrived)
        self.ends: list[Arrival] = []

    def add(self, policy_id: str, ob: Any, arrival: Arrival, check: bool) -> None:
        arrived = self.by_policy[policy_id]
        arrived.obs.append(ob)
        arrived.arrivals.append(arrival)
        arrived.check = arrived.check or check


class MultiAgentRunner(EpisodeRunner):
    def __init__(
        self,
        worker: RolloutWorker,
        envs: list[Any],
        config: AlgorithmConfig,
        callbacks: DefaultCallbacks,
    ) -> None:
        super().__init__(worker, envs, config, callbacks)
        settings = self.settings
        self.fragment = config.get_rollout_fragment_length()
        self.by_agent_steps = settings.count_steps_by == "agent_steps"
        self.complete_episodes = settings.batch_mode == "complete_episodes"
        self.no_done_at_end = bool(settings.no_done_at_end)
        self.horizon = int(settings.horizon or 0)
        #: At the horizon, a new episode goes on on the running env instead of a reset.
        self.soft_horizon = bool(settings.soft_horizon)
        self.observation_fn = settings.observation_fn
        # An observation_fn receives the episode at every step too.
        self._track_steps = self._track_steps or self.observation_fn is not None
        self.checking = not bool(settings.disable_env_checking)
        #: Per sub-env: the steps it has taken since it was made (``FULLY_CHECKED_STEPS``).
        self._env_steps = [0] * self.num_envs
        #: An evaluation runner: its samples are not recorded, its filters not updated.
        self.in_evaluation = bool(settings.in_evaluation)
        self._normalize = bool(settings.normalize_actions)
        self._clip = bool(settings.clip_actions)
        self._reward_clip = reward_clipper(settings.clip_rewards)
        self._postprocess_hook = overrides(callbacks, "on_postprocess_trajectory")
        self._labels = [type(getattr(env, "unwrapped", env)).__name__ for env in envs]
        #: Per sub-env: the open transition of each agent.
        self._open: list[dict[Any, _Open]] = [{} for _ in envs]
        #: Per policy: (sub-env, agent) pairs to act next and their processed observations.
        self._to_act: dict[str, tuple[list[tuple[int, Any]], Array, Array]] = {}
        self._rows: dict[str, PolicyRows] = defaultdict(PolicyRows)
        self._started = False
        self._action_fns: dict[str, Any] = {}
        #: Policies of one architecture act in one pass (``runtime.core.grouped_acting``).
        self._grouped = GroupedActing()
        self.agent_index: dict[Any, int] = {}
        #: Episodes finished in this fragment: id -> (env steps, agent steps).
        self._finished_ids: dict[int, tuple[int, int]] = {}
        #: complete_episodes: per policy, the rows of episodes still running.
        self._carried: dict[str, dict[str, Array]] = {}
        #: Episodes cut off by a policy's removal (never finished: their rows are dropped).
        self._dropped: set[int] = set()
        #: Policies with memory: each (sub-env, agent)'s state and previous inputs.
        self._memory: dict[tuple[int, Any], _AgentMemory] = {}

    def policies_changed(self) -> None:
        """Forget what was derived from the policies (called after add/remove policy)."""
        self._action_fns.clear()
        self._grouped.forget()

    def policy_removed(self, policy_id: str) -> None:
        """Drop a removed policy's rows, and restart the sub-envs whose running episode maps an
        agent to it (those episodes can't go on; they are not reported): their other agents'
        open transitions end truncated there, and their first observations of the new episode
        wait for actions."""
        self.policies_changed()
        self._rows.pop(policy_id, None)
        self._carried.pop(policy_id, None)
        self._to_act.pop(policy_id, None)
        if not self._started:
            return
        hit = {
            i
            for i, episode in enumerate(self.episodes)
            if policy_id in episode._agent_to_policy.values()
        }
        if not hit:
            return
        for waiting_id, (keys, obs, rows) in list(self._to_act.items()):
            keep = np.fromiter((i not in hit for i, _ in keys), dtype=bool, count=len(keys))
            if not keep.all():
                kept_keys = [key for key, k in zip(keys, keep, strict=True) if k]
                self._to_act[waiting_id] = (kept_keys, obs[keep], rows[keep])
        record = not self.in_evaluation
        arrivals = _Arrivals()
        for i in sorted(hit):
            self._dropped.add(self.episodes[i].episode_id)
            for agent, transition in self._open[i].items():
                if record and not self.complete_episodes and transition.policy_id != policy_id:
                    owner = self._rows[transition.policy_id]
                    self._close(owner, [(i, agent, transition, False, True, None)], None)
            self._open[i] = {}
            self._reset_into(arrivals, i, first=False)
        self._take_arrivals(arrivals, update=record, record=record)

    # ------------------------------------------------------------------ episodes

    def _mapping_fn(self) -> MappingFn:
        return self.worker.map_agent

    def _reset(self, index: int, first: bool) -> dict[Any, Any]:
        episode = self._new_episode(index)
        output, _ = self._reset_env(index, first)
        if self.checking or not (isinstance(output, tuple) and len(output) == 2):
            # Observations are checked per policy in one batch (_take_arrivals).
            output = check_reset(self._labels[index], output, None)
        obs, infos = output
        return self._begin_episode(index, episode, obs, infos)

    def _begin_episode(
        self, index: int, episode: MultiAgentEpisode, obs: dict[Any, Any], infos: dict[Any, Any]
    ) -> dict[Any, Any]:
        """Make ``episode`` sub-env ``index``'s, from its first observations (a reset's, or
        the running env's at a soft horizon): no open transitions, fresh memory; returns the
        observations (through ``observation_fn``)."""
        if index < len(self.episodes):
            self.episodes[index] = episode
        else:
            self.episodes.append(episode)
        self._open[index] = {}
        for key in [key for key in self._memory if key[0] == index]:
            del self._memory[key]
        if self.observation_fn is not None:
            obs = self._observe(obs, episode)
        episode._observe_agents(obs, infos)
        self._hook("on_episode_start", episode=episode, env_index=index)
        return obs

    def _observe(self, obs: dict[Any, Any], episode: MultiAgentEpisode) -> dict[Any, Any]:
        out = self.observation_fn(
            agent_obs=obs,
            worker=self.worker,
            base_env=self,
            policies=self.worker.policy_map,
            episode=episode,
        )
        if not isinstance(out, dict):
            raise ValueError(
                f"observation_fn returned {type(out).__name__}; it must return a dict of agent "
                "id -> observation"
            )
        return out

    def _finish_episode(self, index: int) -> int:
        episode = self.episodes[index]
        self._hook("on_episode_end", episode=episode, env_index=index)
        self.finished.append(self._metrics_of(episode, agent_rewards=True))
        self._finished_ids[episode.episode_id] = (episode.length, sum(episode.agent_steps.values()))
        return episode.length

    # ------------------------------------------------------------------ stepping

    def _action_fn(self, policy_id: str) -> Any:
        fn = self._action_fns.get(policy_id)
        if fn is None:
            space = self.worker.policy_map[policy_id].action_space
            fn = self._action_fns[policy_id] = action_processor(space, self._normalize, self._clip)
        return fn

    def _act(
        self, active: set[int] | None, explore: bool | None, record: bool
    ) -> tuple[list[dict[Any, Any]], int]:
        """The actions of the agents waiting to act (in the sub-envs ``active``; all for
        None): one forward pass per policy, or per group of policies of one architecture.
        Returns each sub-env's action dict and the number of agents that acted."""
        actions_by_env: list[dict[Any, Any]] = [{} for _ in range(self.num_envs)]
        acted = 0
        batches: list[tuple[str, list[tuple[int, Any]], Array, Array]] = []
        for policy_id, (keys, obs, obs_rows) in list(self._to_act.items()):
            mask = (
                None
                if active is None
                else np.fromiter((i in active for i, _ in keys), dtype=bool, count=len(keys))
            )
            if mask is None or mask.all():
                del self._to_act[policy_id]
            elif not mask.any():
                continue
            else:
                rest = ~mask
                self._to_act[policy_id] = (
                    [key for key, m in zip(keys, rest, strict=True) if m],
                    obs[rest],
                    obs_rows[rest],
                )
                keys = [key for key, m in zip(keys, mask, strict=True) if m]
                obs, obs_rows = obs[mask], obs_rows[mask]
            batches.append((policy_id, keys, obs, obs_rows))
        outputs = self._compute_actions(batches, explore)
        open_ = self._open
        for (policy_id, keys, _, obs_rows), (actions, extra) in zip(batches, outputs, strict=True):
            env_actions = self._action_fn(policy_id)(actions)
            acted += len(keys)
            # Without rows (evaluation) a transition has no action row: -1.
            g = (
                self._rows[policy_id].add_actions(obs_rows, {SB.ACTIONS: actions, **extra})
                if record
                else -1
            )
            step = 1 if record else 0
            for (i, agent), action in zip(keys, env_actions, strict=True):
                actions_by_env[i][agent] = action
                open_[i][agent] = _Open(policy_id, g)
                g += step
            if self._track_steps:
                self._record_actions(keys, env_actions, extra)
        return actions_by_env, acted

    def _compute_actions(
        self,
        batches: list[tuple[str, list[tuple[int, Any]], Array, Array]],
        explore: bool | None,
    ) -> list[tuple[Array, dict[str, Array]]]:
        """Each batch's ``(actions, extra)``: policies of one architecture together in one
        pass (``GroupedActing``), the others each with its own. Only policies in memory are
        grouped (``peek``: a policy evicted from the map is not reloaded to be looked at); the
        others are fetched right before they act, as a map with few places needs."""
        policy_map = self.worker.policy_map
        outputs: list[tuple[Array, dict[str, Array]] | None] = [None] * len(batches)
        if len(batches) > 1:
            groups: dict[tuple[Any, ...], list[tuple[int, list[Any]]]] = defaultdict(list)
            for j, (policy_id, _, _, _) in enumerate(batches):
                policy = policy_map.peek(policy_id)
                found = (
                    None
                    if policy is None
                    else self._grouped.member(
                        policy_id, policy, explore, not _batched_values(policy)
                    )
                )
                if found is not None:
                    groups[found[0]].append((j, found[1]))
            for members in groups.values():
                if len(members) < 2:
                    continue
                ids = tuple(batches[j][0] for j, _ in members)
                grouped = self._grouped.act(
                    [policy_map[policy_id] for policy_id in ids],
                    [layers for _, layers in members],
                    [batches[j][2] for j, _ in members],
                    ids,
                    explore,
                )
                for (j, _), pair in zip(members, grouped, strict=True):
                    outputs[j] = pair
        results: list[tuple[Array, dict[str, Array]]] = []
        for output, (policy_id, keys, obs, _) in zip(outputs, batches, strict=True):
            if output is not None:
                results.append(output)
                continue
            policy = policy_map[policy_id]
            if policy.is_recurrent():
                results.append(self._act_with_memory(policy, keys, obs, explore))
            else:
                actions, _, extra = policy.compute_actions(
                    obs, explore=explore, value_preds=not _batched_values(policy)
                )
                results.append((actions, extra))
        return results

    def _record_actions(
        self, keys: list[tuple[int, Any]], env_actions: Any, extra: dict[str, Array]
    ) -> None:
        """Some hook receives episodes: record each agent's action, its row of the policy's
        extra outputs and (a model with memory) the state it acts from next."""
        for j, (key, action) in enumerate(zip(keys, env_actions, strict=True)):
            memory = self._memory.get(key)
            self.episodes[key[0]]._act(
                key[1],
                action,
                {
                    name: values[j]
                    for name, values in extra.items()
                    if not name.startswith(("state_in_", "state_out_"))
                },
                None if memory is None else list(memory.state),
            )

    def _act_with_memory(
        self, policy: TorchPolicy, keys: list[tuple[int, Any]], obs: Array, explore: bool | None
    ) -> tuple[Array, dict[str, Array]]:
        """The actions of a policy with memory for the agents ``keys``, each from its own state
        and previous inputs (an agent's first action: the initial state and zeros). The extra
        columns add each row's inputs (``state_in_k``, ``prev_actions``, ``prev_rewards``) and
        its ``state_out_k`` (what a bootstrapped value reads after the row)."""
        memories = [self._memory.get(key) for key in keys]
        if any(m is None for m in memories):
            initial = policy.get_initial_state()
            space = policy.action_space
            zero = np.zeros(space.shape or (), dtype=space.dtype)
            for j, key in enumerate(keys):
                if memories[j] is None:
                    memories[j] = self._memory[key] = _AgentMemory(list(initial), zero)
        known = [m for m in memories if m is not None]
        state = [np.stack([m.state[k] for m in known]) for k in range(len(known[0].state))]
        prev_actions = np.stack([np.asarray(m.prev_action) for m in known])
        prev_rewards = np.asarray([m.prev_reward for m in known], dtype=np.float32)
        actions, state_out, extra = policy.compute_actions(
            obs, state, prev_actions, prev_rewards, explore=explore
        )
        model = policy.model
        extra.update({SB.state_in(k): s for k, s in enumerate(state)})
        extra.update({SB.state_out(k): s for k, s in enumerate(state_out)})
        if getattr(model, "uses_prev_actions", False):
            extra[SB.PREV_ACTIONS] = prev_actions
        if getattr(model, "uses_prev_rewards", False):
            extra[SB.PREV_REWARDS] = prev_rewards
        for j, memory in enumerate(known):
            memory.state = [s[j] for s in state_out]
            memory.prev_action = actions[j]
        return actions, extra

    def _step(
        self,
        envs: list[int],
        explore: bool | None,
        update: bool,
        record: bool,
        restart: set[int] | None = None,
    ) -> tuple[int, list[int]]:
        """One step of the sub-envs ``envs``; returns the agent steps taken and the sub-envs
        whose episode ended (reset unless they are not in ``restart``; None: all are)."""
        t0 = time.perf_counter()
        actions_by_env, agent_steps = self._act(
            None if len(envs) == self.num_envs else set(envs), explore, record
        )
        t1 = time.perf_counter()
        arrivals = _Arrivals()
        by_policy = arrivals.by_policy
        ended: list[int] = []
        #: Sub-envs cut by a soft horizon: the observations their next episode starts from.
        carried_on: dict[int, dict[Any, Any]] = {}
        faulty: list[int] = []
        env_wait = 0.0
        # Locals: the loop below runs once per sub-env per step.
        perf_counter = time.perf_counter
        checking = self.checking
        env_steps = self._env_steps
        sub_envs, episodes, opens = self.envs, self.episodes, self._open
        horizon, observation_fn, track = self.horizon, self.observation_fn, self._track_steps
        for i in envs:
            episode = episodes[i]
            action_dict = actions_by_env[i]
            s = perf_counter()
            try:
                output = sub_envs[i].step(action_dict)
            except Exception as error:
                self._restarts.restart(i, "step()", error)
                faulty.append(i)
                continue
            env_wait += perf_counter() - s
            full_check = checking and env_steps[i] < FULLY_CHECKED_STEPS
            env_steps[i] += 1
            if full_check or not (isinstance(output, tuple) and len(output) == 5):
                output = check_step(self._labels[i], output, None)
            obs, rewards, terms, truncs, infos = output
            episode.length += 1
            open_ = opens[i]
            for agent, reward in rewards.items():
                reward = float(reward)
                transition = open_.get(agent)
                if transition is not None:
                    transition.reward += reward
                    policy_id = transition.policy_id
                else:
                    policy_id = episode.policy_for(agent)
                episode.agent_rewards[(agent, policy_id)] += reward
                episode.total_reward += reward
            all_term = terms.get("__all__")
            all_trunc = truncs.get("__all__")
            if checking and (all_term is None or all_trunc is None):
                check_step(self._labels[i], output, None)  # (raises if one is missing)
            all_term = bool(all_term)
            all_done = all_term or bool(all_trunc)
            horizon_cut = bool(horizon) and episode.length >= horizon and not all_done
            ending = all_done or horizon_cut
            raw_obs = obs
            if observation_fn is not None and obs:
                obs = self._observe(obs, episode)
            for agent, ob in obs.items():
                term = bool(terms.get(agent, False))
                trunc = bool(truncs.get(agent, False))
                if ending:
                    term = term or all_term
                    trunc = not term
                transition = open_.pop(agent, None)
                arrived = by_policy[
                    episode.policy_for(agent) if transition is None else transition.policy_id
                ]
                arrived.obs.append(ob)
                arrived.arrivals.append((i, agent, transition, term, trunc, infos.get(agent)))
                if full_check:
                    arrived.check = True
            if ending:
                for agent, transition in open_.items():
                    term = bool(terms.get(agent, False)) or all_term
                    arrivals.ends.append((i, agent, transition, term, not term, infos.get(agent)))
                open_.clear()
                ended.append(i)
                if horizon_cut and self.soft_horizon:
                    carried_on[i] = {
                        a: ob for a, ob in raw_obs.items() if not _done(a, terms, truncs)
                    }
            elif open_:
                for agent in [a for a in open_ if terms.get(a) or truncs.get(a)]:
                    transition = open_.pop(agent)
                    term = bool(terms.get(agent))
                    arrivals.ends.append((i, agent, transition, term, not term, infos.get(agent)))
            if track:
                episode._observe_agents(obs, infos)
                if ending:
                    episode._end(all_term, not all_term)
                for agent, reward in rewards.items():
                    episode._reward(agent, reward, bool(terms.get(agent)), bool(truncs.get(agent)))
                self._hook("on_episode_step", episode=episode, env_index=i)
        # The ended episodes' last transitions close in their own episode, before the reset.
        self._take_arrivals(arrivals, update, record)
        for i in ended:
            self._finish_episode(i)
        resets = _Arrivals()
        for i in ended:
            if restart is not None and i not in restart:
                continue
            if i in carried_on:
                self._carry_on(resets, i, carried_on[i])
            else:
                self._reset_into(resets, i, first=False)
        for i in faulty:
            self._restart_episode(resets, i)
        if resets.by_policy:
            self._take_arrivals(resets, update, record)
        perf = self.perf
        perf["inference"] += t1 - t0
        perf["env_wait"] += env_wait
        perf["raw_obs_processing"] += time.perf_counter() - t1 - env_wait
        self.perf_steps += 1
        return agent_steps, ended

    def _restart_episode(self, arrivals: _Arrivals, index: int) -> None:
        """Drop the episode of sub-env ``index``, which failed and was made again (a faulty
        episode; no ``on_episode_end``: the episode did not end), with its rows and open
        transitions, and start the next one: its first observations go to ``arrivals``."""
        episode_id = self.episodes[index].episode_id
        self._faulty_ids.add(episode_id)
        if self.complete_episodes:
            self._dropped.add(episode_id)  # rows held back from earlier fragments go too
        self._open[index] = {}
        self.finished.append(faulty_episode())
        self._env_steps[index] = 0  # a new env: checked as the first was
        self._reset_into(arrivals, index, first=False)

    def _carry_on(self, arrivals: _Arrivals, index: int, obs: dict[Any, Any]) -> None:
        """Start the next episode of sub-env ``index`` on the running env (``soft_horizon``):
        its agents' last observations are the new episode's first."""
        episode = self._new_episode(index)
        self._first_arrivals(arrivals, index, self._begin_episode(index, episode, obs, {}))

    def _reset_into(self, arrivals: _Arrivals, index: int, first: bool) -> None:
        self._first_arrivals(arrivals, index, self._reset(index, first))

    def _first_arrivals(self, arrivals: _Arrivals, index: int, obs: dict[Any, Any]) -> None:
        """Add the first observations of sub-env ``index``'s episode to ``arrivals`` (no
        transition to close: every agent then acts)."""
        episode = self.episodes[index]
        check = self.checking and self._env_steps[index] < FULLY_CHECKED_STEPS
        for agent, ob in obs.items():
            arrival = (index, agent, None, False, False, None)
            arrivals.add(episode.policy_for(agent), ob, arrival, check)

    def _take_arrivals(self, arrivals: _Arrivals, update: bool, record: bool) -> None:
        """Process the arrived observations per policy, close the transitions they end and
        queue the agents that act next."""
        worker = self.worker
        for policy_id, arrived in arrivals.by_policy.items():
            raw: Any = arrived.obs
            arrivals_ = arrived.arrivals
            if arrived.check and self.observation_fn is None:
                # (With an observation_fn the observations need not be in the env's spaces.)
                raw = self._check(policy_id, raw, arrivals_)
            processed = worker.filters[policy_id](
                worker.preprocessors[policy_id].transform_many(raw), update
            )
            if self._memory:
                self._remember_rewards(arrivals_)
            first = 0
            if record:
                rows = self._rows[policy_id]
                first = rows.add_obs(processed)
                self._close(rows, arrivals_, first)
            keys: list[tuple[int, Any]] = []
            acting: list[int] = []
            for j, (i, agent, _, term, trunc, _) in enumerate(arrivals_):
                if not (term or trunc):
                    keys.append((i, agent))
                    acting.append(j)
            if len(acting) == len(raw):
                self._queue(policy_id, keys, processed, np.arange(first, first + len(raw)))
            elif acting:
                index = np.asarray(acting, dtype=np.int64)
                self._queue(policy_id, keys, processed[index], index + first)
        if record:
            for arrival in arrivals.ends:
                transition = arrival[2]
                assert transition is not None
                self._close(self._rows[transition.policy_id], [arrival], None)

    def _remember_rewards(self, arrivals: list[Arrival]) -> None:
        """Policies with memory: each closed transition's reward is its agent's next previous
        reward."""
        for i, agent, transition, *_ in arrivals:
            memory = self._memory.get((i, agent))
            if memory is not None and transition is not None:
                memory.prev_reward = transition.reward

    def _check(self, policy_id: str, raw: list[Any], arrivals: list[Arrival]) -> Any:
        """``check_observations``: returns the observations, maybe stacked into one array."""

        def owner(k: int) -> tuple[str, str, Any]:
            i, agent, transition, *_ = arrivals[k]
            call = "reset()" if transition is None and self.episodes[i].length == 0 else "step()"
            return self._labels[i], call, agent

        return check_observations(self.worker.policy_spaces[policy_id][0], raw, owner)

    def _queue(self, policy_id: str, keys: list[tuple[int, Any]], obs: Array, rows: Array) -> None:
        waiting = self._to_act.get(policy_id)
        if waiting is None:
            self._to_act[policy_id] = (keys, obs, rows)
        else:
            self._to_act[policy_id] = (
                waiting[0] + keys,
                np.concatenate([waiting[1], obs]),
                np.concatenate([waiting[2], rows]),
            )

    def _close(self, rows: PolicyRows, arrivals: list[Arrival], first_h: int | None) -> None:
        """Close the transitions of ``arrivals`` (those that have one) into ``rows``: the
        ``j``-th led to observation row ``first_h + j`` (None: no observation came)."""
        episodes = self.episodes
        agent_index = self.agent_index
        close = rows.close
        for j, (i, agent, transition, term, trunc, info) in enumerate(arrivals):
            if transition is None:
                continue
            index = agent_index.get(agent)
            if index is None:
                index = agent_index[agent] = len(agent_index)
            episode = episodes[i]
            episode.agent_steps[agent] += 1
            close(
                transition.g,
                -1 if first_h is None else first_h + j,
                transition.reward,
                term,
                trunc,
                info,
                episode.episode_id,
                i,
                index,
                # RLlib's `t`: the index of the env step that closed the transition (the
                # agent's own step count is episode.agent_steps).
                episode.length - 1,
            )

    def _start(self) -> None:
        arrivals = _Arrivals()
        start = time.perf_counter()
        for i in range(self.num_envs):
            self._reset_into(arrivals, i, first=not self._started)
        self._started = True
        self._take_arrivals(arrivals, update=not self.in_evaluation, record=False)
        self.perf["env_reset"] += time.perf_counter() - start

    # ------------------------------------------------------------------ sampling

    def sample(self, explore: bool | None = None) -> MultiAgentBatch:
        """A fragment: ``rollout_fragment_length`` env steps (or agent steps) of every sub-env,
        or at least that many of complete episodes, as a ``MultiAgentBatch``."""
        if not self._started:
            self._start()
            # The first observations were processed before rows were kept: keep them now.
            self._rekeep_waiting()
        self._recent = {e.episode_id: e for e in self.episodes}
        self._grouped.replan()
        self._finished_ids = {}
        target = self.fragment * self.num_envs
        everything = list(range(self.num_envs))
        steps = agent_steps = completed = 0
        while True:
            taken, _ = self._step(everything, explore, update=True, record=True)
            steps += 1
            agent_steps += taken
            if self.complete_episodes:
                completed = sum(v[int(self.by_agent_steps)] for v in self._finished_ids.values())
                if completed >= target:
                    break
            elif (agent_steps if self.by_agent_steps else steps * self.num_envs) >= target:
                break
        env_steps = (
            sum(v[0] for v in self._finished_ids.values())
            if self.complete_episodes
            else steps * self.num_envs
        )
        batch = self._build(env_steps)
        self._sample_end(batch)
        return batch

    def _rekeep_waiting(self) -> None:
        """Put the observations of the agents waiting to act into this fragment's rows."""
        for policy_id, (keys, obs, _) in list(self._to_act.items()):
            first = self._rows[policy_id].add_obs(obs)
            self._to_act[policy_id] = (keys, obs, np.arange(first, first + len(keys)))

    def _build(self, env_steps: int) -> MultiAgentBatch:
        """This fragment's closed rows as one postprocessed batch per policy; what stays open
        (and, with complete_episodes, the rows of unfinished episodes) moves on to the next."""
        old_rows = self._rows
        self._rows = defaultdict(PolicyRows)
        self._carry_open(old_rows)
        self._rekeep_waiting()
        batches: dict[str, SampleBatch] = {}
        faulty = list(self._faulty_ids)
        self._faulty_ids.clear()
        for policy_id, rows in old_rows.items():
            if len(rows) == 0:
                continue
            columns = rows.take()
            if faulty and not self.complete_episodes:
                # (complete_episodes drops them with the rows held back: _keep_finished)
                kept = ~np.isin(columns[SB.EPS_ID], faulty)
                columns = {k: v[kept] for k, v in columns.items()}
                if len(columns[SB.OBS]) == 0:
                    continue
            if self.complete_episodes:
                columns = self._keep_finished(policy_id, columns)
                if len(columns[SB.OBS]) == 0:
                    continue
            batches[policy_id] = self._postprocess(policy_id, columns)
        return MultiAgentBatch(batches, env_steps)

    def _carry_open(self, old_rows: dict[str, PolicyRows]) -> None:
        """Open transitions (an agent that acted and waits for its next observation) keep their
        action rows in the next fragment."""
        by_policy: dict[str, list[_Open]] = defaultdict(list)
        for open_ in self._open:
            for transition in open_.values():
                by_policy[transition.policy_id].append(transition)
        for policy_id, transitions in by_policy.items():
            g = np.asarray([t.g for t in transitions], dtype=np.int64)
            obs, acts = old_rows[policy_id].action_rows(g)
            new = self._rows[policy_id]
            first_h = new.add_obs(obs)
            first_g = new.add_actions(np.arange(first_h, first_h + len(g)), acts)
            for k, transition in enumerate(transitions):
                transition.g = first_g + k

    def _keep_finished(self, policy_id: str, columns: dict[str, Array]) -> dict[str, Array]:
        """complete_episodes: the rows of finished episodes, with those carried from earlier
        fragments; the rows of running episodes wait for the next fragment."""
        carried = self._carried.pop(policy_id, None)
        if carried is not None:
            columns = {k: np.concatenate([carried[k], columns[k]]) for k in columns}
            order = np.lexsort((columns[SB.T], columns[AGENT_INDEX], columns[SB.EPS_ID]))
            columns = {k: v[order] for k, v in columns.items()}
        done = np.isin(columns[SB.EPS_ID], list(self._finished_ids))
        running = ~done & ~np.isin(columns[SB.EPS_ID], list(self._dropped))
        if running.any():
            self._carried[policy_id] = {k: v[running] for k, v in columns.items()}
        return {k: v[done] for k, v in columns.items()}

    def _postprocess(self, policy_id: str, columns: dict[str, Array]) -> SampleBatch:
        policy = self.worker.policy_map[policy_id]
        starts = trajectory_starts(columns)
        layout = Layout(starts, len(columns[SB.OBS]))
        terms = columns[SB.TERMINATEDS]
        if self.no_done_at_end:
            terms = columns[SB.TERMINATEDS] = np.zeros_like(terms)
        ends = terms | columns[SB.TRUNCATEDS]
        ends[layout.last] = True
        bootstrap = np.flatnonzero(ends & ~terms)
        batched = _batched_values(policy)
        obs = columns[SB.OBS]
        parts = ([obs] if batched else []) + [columns[SB.NEXT_OBS][bootstrap]]
        if policy.is_recurrent():
            # Each bootstrapped observation is valued from the state after its row's action.
            states = [columns.pop(k)[bootstrap] for k in sorted(_state_outs(columns))]
            values = policy.compute_values(
                columns[SB.NEXT_OBS][bootstrap],
                states,
                columns[SB.ACTIONS][bootstrap],
                columns[SB.REWARDS][bootstrap],
            )
        else:
            values = policy.compute_values(np.concatenate(parts))
        if batched:
            columns[SB.VF_PREDS] = values[: len(obs)]
            values = values[len(obs) :]
        next_values = np.zeros(len(obs), dtype=np.float32)
        next_values[bootstrap] = values
        columns[SB.REWARDS] = self._reward_clip(columns[SB.REWARDS])
        padded = {k: layout.padded(v) for k, v in columns.items() if k != SB.INFOS}
        padded[SB.SEGMENT_ENDS] = layout.padded(ends, fill=True)
        padded[SB.BOOTSTRAP_VALUES] = layout.padded(next_values)
        policy.postprocess_fragment(padded)
        out = {k: layout.unpadded(v) for k, v in padded.items() if k not in _PRIVATE}
        out[SB.INFOS] = columns[SB.INFOS]
        batch = SampleBatch(out)
        if self._postprocess_hook:
            reverse = {index: agent for agent, index in self.agent_index.items()}
            bounds = [*starts.tolist(), len(batch)]
            for a, b in itertools.pairwise(bounds):
                segment = batch[a:b]
                episode_id = int(segment[SB.EPS_ID][0])
                self.callbacks.on_postprocess_trajectory(
                    worker=self.worker,
                    episode=self._recent.get(episode_id),
                    agent_id=reverse.get(int(segment[AGENT_INDEX][0])),
                    policy_id=policy_id,
                    policies=self.worker.policy_map,
                    postprocessed_batch=segment,
                    original_batches={},
                )
        return batch

    # ------------------------------------------------------------------ evaluation

    def _start_evaluation(self, active: list[int], reset: bool) -> None:
        self._grouped.replan()
        if reset or not self._started:
            self._to_act.clear()
            self._start()

    def _evaluation_step(self, envs: list[int], explore: bool | None, last: set[int]) -> list[int]:
        restart = {i for i in envs if i not in last}
        _, ended = self._step(envs, explore, update=False, record=False, restart=restart)
        return ended


def _batched_values(policy: Any) -> bool:
    """A separate value network is left out of the steps: V(s) for all rows in one batch."""
    return bool(policy.has_critic) and bool(
        getattr(getattr(policy, "module", None), "separate_value_network", False)
    )


def _state_outs(columns: dict[str, Array]) -> list[str]:
    return [name for name in columns if name.startswith("state_out_")]


def _done(agent: Any, terms: dict[Any, Any], truncs: dict[Any, Any]) -> bool:
    return bool(terms.get(agent)) or bool(truncs.get(agent))
