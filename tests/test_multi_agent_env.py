"""The multi-agent env API: ``MultiAgentEnv`` (spaces, agent ids), ``make_multi_agent``
(copies, seeding, done handling, ``"__all__"``), the checks the sampler runs on ``reset()`` /
``step()`` output, and the PettingZoo wrappers (skipped without PettingZoo)."""

from __future__ import annotations

import itertools
import random
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import cloudpickle  # type: ignore[import-untyped]
import gymnasium as gym
import numpy as np
import pytest

from runtime.env.env_context import EnvContext
from runtime.env.multi_agent_checks import MultiAgentEnvError, check_reset, check_step
from runtime.env.multi_agent_env import (
    MultiAgentDict,
    MultiAgentEnv,
    MultiAgentEnvCopies,
    make_multi_agent,
)
from runtime.env.pettingzoo_env import ParallelPettingZooEnv, PettingZooEnv

ALL = "__all__"
DISCRETE3 = gym.spaces.Discrete(3)
BOX4 = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)


# ------------------------------------------------------------------- a sampler-like driver


@dataclass
class Trace:
    """What ``play`` saw: each step's output and the totals."""

    steps: list[tuple[MultiAgentDict, ...]] = field(default_factory=list)
    returns: dict[Any, float] = field(default_factory=dict)
    first_obs: MultiAgentDict = field(default_factory=dict)


def play(
    env: MultiAgentEnv,
    *,
    seed: int | None = None,
    act: Callable[[Any, Any], Any] | None = None,
    max_steps: int = 1000,
) -> Trace:
    """Play one episode the way the sampler does: act for the agents in the last obs that are
    not done, run the checks on every output, stop at ``"__all__"``."""
    label = type(env).__name__
    obs, _ = check_reset(label, env.reset(seed=seed), env.get_observation_space)
    trace = Trace(first_obs=obs)
    done: set[Any] = set()
    for _ in range(max_steps):
        actions = {
            agent: (act(agent, ob) if act else env.get_action_space(agent).sample())
            for agent, ob in obs.items()
            if agent not in done
        }
        assert actions, "no agent left to act before __all__"
        assert not done & set(actions)
        output = check_step(label, env.step(actions), env.get_observation_space)
        obs, rewards, terminateds, truncateds, _ = output
        trace.steps.append(output)
        for agent, reward in rewards.items():
            assert agent not in done, f"reward for {agent!r} after it was done"
            trace.returns[agent] = trace.returns.get(agent, 0.0) + float(reward)
        for agent in obs:
            assert agent not in done, f"obs for {agent!r} after it was done"
        done.update(
            agent
            for agent in itertools.chain(terminateds, truncateds)
            if agent != ALL and (terminateds.get(agent) or truncateds.get(agent))
        )
        if terminateds[ALL] or truncateds[ALL]:
            assert not (terminateds[ALL] and truncateds[ALL])
            return trace
    raise AssertionError(f"no end of episode in {max_steps} steps")


# ------------------------------------------------------------------- a custom env


class ArrivalsEnv(MultiAgentEnv):
    """ "early" acts from the start and terminates at its 2nd action; "late" joins after the
    1st step and is truncated at its 2nd action. Obs: the step count. Rewards: 1 per action."""

    observation_spaces = {"early": DISCRETE3, "late": DISCRETE3}  # noqa: RUF012
    action_space = gym.spaces.Discrete(2)

    def __init__(self, config: dict[str, Any] | None = None) -> None:
        super().__init__(config)
        self.possible_agents = ["early", "late"]
        self.t = 0
        self.actions_seen: list[MultiAgentDict] = []

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[MultiAgentDict, MultiAgentDict]:
        self.t = 0
        return {"early": 0}, {"early": {}}

    def step(
        self, action_dict: MultiAgentDict
    ) -> tuple[MultiAgentDict, MultiAgentDict, MultiAgentDict, MultiAgentDict, MultiAgentDict]:
        self.actions_seen.append(dict(action_dict))
        self.t += 1
        rewards = dict.fromkeys(action_dict, 1.0)
        if self.t == 1:
            return {"early": 1, "late": 0}, rewards, {ALL: False}, {ALL: False}, {}
        if self.t == 2:
            terminateds = {"early": True, "late": False, ALL: False}
            return {"early": 2, "late": 1}, rewards, terminateds, {ALL: False}, {}
        truncateds = {"late": True, ALL: True}
        return {"late": 2}, rewards, {"late": False, ALL: False}, truncateds, {}


def test_agents_join_late_and_leave_early() -> None:
    env = ArrivalsEnv()
    trace = play(env, act=lambda agent, ob: 1)
    assert env.actions_seen == [{"early": 1}, {"early": 1, "late": 1}, {"late": 1}]
    assert trace.returns == {"early": 2.0, "late": 2.0}
    assert trace.steps[-1][3] == {"late": True, ALL: True}


def test_spaces_per_agent_win_over_shared_and_missing_ones_name_the_agent() -> None:
    env = ArrivalsEnv()
    assert env.get_observation_space("late") is DISCRETE3
    assert env.get_action_space("late") is ArrivalsEnv.action_space
    with pytest.raises(MultiAgentEnvError) as info:
        env.get_observation_space("ghost")
    message = str(info.value)
    assert "'ArrivalsEnv'" in message and "'ghost'" in message
    assert "observation_spaces has no key 'ghost'" in message
    assert "['early', 'late']" in message and "observation_space is None" in message

    class Shared(MultiAgentEnv):
        observation_space = BOX4

    shared = Shared()
    shared.observation_spaces = {"a": DISCRETE3}
    assert shared.get_observation_space("a") is DISCRETE3
    assert shared.get_observation_space("b") is BOX4
    with pytest.raises(MultiAgentEnvError, match=r"action_spaces is not set and the shared"):
        shared.get_action_space("b")


def test_agent_ids_and_defaults() -> None:
    plain, other = MultiAgentEnv(), MultiAgentEnv()
    assert plain.possible_agents == [] and plain.get_agent_ids() == []
    plain.possible_agents.append("x")
    assert other.possible_agents == []  # not a shared mutable default
    assert ArrivalsEnv().get_agent_ids() == ["early", "late"]

    class ByClass(MultiAgentEnv):
        possible_agents = ["p", "q"]  # noqa: RUF012

    assert ByClass().possible_agents == ["p", "q"]

    class BySpaces(MultiAgentEnv):
        observation_spaces = {3: BOX4}  # noqa: RUF012

    assert BySpaces().get_agent_ids() == [3]
    assert plain.unwrapped is plain and plain.render() is None
    plain.close()
    assert plain.get_sub_environments() == []
    with pytest.raises(NotImplementedError):
        plain.reset()
    with pytest.raises(NotImplementedError):
        plain.step({})


# ------------------------------------------------------------------- make_multi_agent


def test_make_multi_agent_from_a_gymnasium_id() -> None:
    cls = make_multi_agent("CartPole-v1")
    assert isinstance(cls, type) and issubclass(cls, MultiAgentEnv)
    assert cls.__name__ == "MultiAgentCartPoleV1"
    env = cls({"num_agents": 2})
    assert env.possible_agents == [0, 1] and env.get_agent_ids() == [0, 1]
    assert env.observation_spaces is None
    assert env.get_observation_space(1) is env.observation_space
    assert isinstance(env.observation_space, gym.spaces.Box)
    assert env.observation_space.shape == (4,)
    assert env.get_action_space(0) == gym.spaces.Discrete(2)
    assert len(env.get_sub_environments()) == 2
    for seed in range(3):
        trace = play(env, seed=seed)
        assert set(trace.first_obs) == {0, 1}
        assert set(trace.returns) == {0, 1}
        last = trace.steps[-1]
        assert last[2][ALL] is True and last[3][ALL] is False  # CartPole terminates
    assert cls().possible_agents == [0]  # num_agents defaults to 1
    env.close()


def test_reset_seeds_copy_i_with_seed_plus_i() -> None:
    env = make_multi_agent("CartPole-v1")({"num_agents": 3})
    obs, infos = env.reset(seed=10)
    assert set(obs) == set(infos) == {0, 1, 2}
    again, _ = env.reset(seed=10)
    shifted, _ = env.reset(seed=11)
    for i in range(3):
        np.testing.assert_array_equal(obs[i], again[i])
    np.testing.assert_array_equal(obs[1], shifted[0])
    np.testing.assert_array_equal(obs[2], shifted[1])
    assert not np.array_equal(obs[0], obs[1])


def test_done_agents_leave_and_cannot_act() -> None:
    env = make_multi_agent("CartPole-v1")({"num_agents": 2})
    with pytest.raises(MultiAgentEnvError, match=r"reset\(\) has not been called"):
        env.step({0: 0})
    env.reset(seed=0)
    # Push agent 0 over: it terminates long before agent 1, which keeps balancing.
    steps = 0
    while True:
        obs, rewards, terminateds, truncateds, _ = env.step({0: 1, 1: steps % 2})
        steps += 1
        if terminateds[0]:
            break
    assert terminateds[ALL] is False and truncateds[ALL] is False
    assert set(obs) == {0, 1} and set(rewards) == {0, 1}  # agent 0's last obs is there
    obs, rewards, terminateds, truncateds, _ = env.step({1: 0})
    assert set(obs) == set(rewards) == {1} and set(terminateds) == {1, ALL}
    with pytest.raises(MultiAgentEnvError) as info:
        env.step({0: 0, 1: 0})
    assert "agent 0 is done" in str(info.value) and "until reset()" in str(info.value)
    with pytest.raises(MultiAgentEnvError, match=r"there is no agent 'x' \(agent ids are"):
        env.step({"x": 0})


class Countdown(gym.Env[np.ndarray, np.int64]):
    """Ends after ``length`` steps: terminated, or truncated when ``truncate``."""

    observation_space = gym.spaces.Box(0.0, 10.0, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, length: int, truncate: bool) -> None:
        self.length, self.truncate, self.left = length, truncate, length

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        self.left = self.length
        return np.array([self.left], np.float32), {"seed": seed}

    def step(self, action: np.int64) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        self.left -= 1
        over = self.left == 0
        ob = np.array([self.left], np.float32)
        return ob, 0.5, over and not self.truncate, over and self.truncate, {}


def countdowns(plan: list[tuple[int, bool]]) -> Callable[[Any], Countdown]:
    """A creator whose i-th call makes ``Countdown(*plan[i])``; records the configs it got."""
    calls = itertools.count()
    seen: list[Any] = []

    def make_countdown(config: Any) -> Countdown:
        seen.append(config)
        return Countdown(*plan[next(calls)])

    make_countdown.seen = seen  # type: ignore[attr-defined]
    return make_countdown


def test_make_multi_agent_from_a_creator_passes_the_config_as_is() -> None:
    creator = countdowns([(2, False), (3, False), (1, False)])
    cls = make_multi_agent(creator)
    assert cls.__name__ == "MultiAgentMakeCountdown"
    context = EnvContext({"num_agents": 3, "other": 1}, worker_index=2)
    env = cls(context)
    assert all(config is context for config in creator.seen)  # type: ignore[attr-defined]
    _, infos = env.reset(seed=5)
    assert [infos[i]["seed"] for i in range(3)] == [5, 6, 7]
    trace = play(env)
    assert [sorted(step[0]) for step in trace.steps] == [[0, 1, 2], [0, 1], [1]]
    assert trace.steps[-1][2] == {1: True, ALL: True}
    assert trace.steps[-1][3] == {1: False, ALL: False}
    assert trace.returns == {0: 1.0, 1: 1.5, 2: 0.5}


def test_all_is_truncated_when_some_agent_was_truncated() -> None:
    env = make_multi_agent(countdowns([(1, True), (2, False)]))({"num_agents": 2})
    trace = play(env)
    first, last = trace.steps
    assert first[3] == {0: True, 1: False, ALL: False}
    assert last[2] == {1: True, ALL: False} and last[3] == {1: False, ALL: True}
    env.reset()  # a new episode starts clean
    both_terminate = make_multi_agent(countdowns([(1, False), (1, False)]))({"num_agents": 2})
    (last,) = play(both_terminate).steps
    assert last[2][ALL] is True and last[3][ALL] is False


@pytest.mark.parametrize("num_agents", [0, -1, "2", 2.0, True, None])
def test_num_agents_must_be_a_positive_int(num_agents: Any) -> None:
    with pytest.raises(MultiAgentEnvError, match=r"config\['num_agents'\] = .*an int >= 1"):
        make_multi_agent("CartPole-v1")({"num_agents": num_agents})


def test_make_multi_agent_refuses_what_is_not_a_single_agent_env() -> None:
    with pytest.raises(MultiAgentEnvError, match="a gymnasium env id"):
        make_multi_agent(42)  # type: ignore[arg-type]
    with pytest.raises(MultiAgentEnvError, match="needs a single-agent gymnasium env"):
        make_multi_agent(lambda config: ArrivalsEnv())()
    with pytest.raises(MultiAgentEnvError, match="has no env_source"):
        MultiAgentEnvCopies()


def test_the_class_travels_with_cloudpickle() -> None:
    cls = make_multi_agent("CartPole-v1")
    copy = cloudpickle.loads(cloudpickle.dumps(cls))
    assert copy.__name__ == "MultiAgentCartPoleV1"
    env = copy({"num_agents": 2})
    obs, _ = env.reset(seed=3)
    expected, _ = cls({"num_agents": 2}).reset(seed=3)
    np.testing.assert_array_equal(obs[1], expected[1])
    lambda_cls = make_multi_agent(lambda config: Countdown(2, False))
    assert lambda_cls.__name__ == "MultiAgentLambda"
    assert play(cloudpickle.loads(cloudpickle.dumps(lambda_cls))({"num_agents": 2})).steps


# ------------------------------------------------------------------- the checks


def spaces(agent: Any) -> gym.Space[Any] | None:
    return {0: BOX4, 1: DISCRETE3}.get(agent)


def step_output(**parts: Any) -> tuple[Any, ...]:
    out: dict[str, Any] = {
        "obs": {0: np.zeros(4, np.float32), 1: 2},
        "rewards": {0: 1.0, 1: np.float32(0.5)},
        "terminateds": {0: False, 1: False, ALL: False},
        "truncateds": {0: False, 1: False, ALL: False},
        "infos": {0: {}},
    }
    out.update(parts)
    return tuple(out.values())


def step_error(output: Any) -> str:
    with pytest.raises(MultiAgentEnvError) as info:
        check_step("MyEnv", output, spaces)
    return str(info.value)


def test_good_output_passes_and_comes_back() -> None:
    output = step_output()
    assert check_step("MyEnv", output, spaces) == output
    assert check_step("MyEnv", output, None) == output
    assert check_step("MyEnv", step_output(obs={5: "anything"}), spaces)  # no space
    reset: tuple[MultiAgentDict, MultiAgentDict] = ({0: np.ones(4, np.float32)}, {})
    assert check_reset("MyEnv", reset, spaces) == reset


def test_missing_all_in_terminateds_or_truncateds() -> None:
    message = step_error(step_output(terminateds={0: True, 1: False}))
    assert message == (
        "env 'MyEnv': step() returned terminateds without the key \"__all__\" "
        '(got keys [0, 1]); terminateds and truncateds must each hold "__all__": '
        "whether the episode ended for every agent"
    ).replace('"', "'")
    message = step_error(step_output(truncateds={"a": False}))
    assert "returned truncateds without the key '__all__' (got keys ['a'])" in message


def test_a_reward_for_an_agent_that_has_not_acted_is_accepted() -> None:
    # (A turn-based env rewards agents while others move, before their first action too.)
    output = step_output(rewards={0: 1.0, "late": 3.0})
    assert check_step("MyEnv", output, spaces) == output


@pytest.mark.parametrize("reward", [None, "1", True, [1.0]])
def test_rewards_must_be_real_numbers(reward: Any) -> None:
    message = step_error(step_output(rewards={1: reward}))
    assert f"rewards[1] = {reward!r}" in message and "must be a real number" in message


@pytest.mark.filterwarnings("ignore:.*Casting input x to numpy array")
def test_obs_outside_its_space() -> None:
    message = step_error(step_output(obs={1: 7}))
    assert "env 'MyEnv': step() returned obs[1] = 7, which is outside" in message
    assert "allowed: values in Discrete(3)" in message
    long = np.arange(1000, dtype=np.float32)
    message = step_error(step_output(obs={0: long}))
    assert "obs[0] = array([" in message and "shape=(1000,)" in message
    assert len(message) < 400
    assert "the shape is (1000,), the space's is (4,)" in message
    message = step_error(step_output(obs={0: np.zeros(4)}))
    assert "the dtype is float64, the space's is float32" in message
    with pytest.raises(MultiAgentEnvError, match=r"reset\(\) returned obs\[0\] = 'x'"):
        check_reset("MyEnv", ({0: "x"}, {}), spaces)


def test_a_space_that_raises_counts_as_outside() -> None:
    class Raising(gym.spaces.Discrete):
        def contains(self, x: Any) -> bool:
            raise TypeError("no")

    with pytest.raises(MultiAgentEnvError, match=r"contains raised TypeError: no"):
        check_step("MyEnv", step_output(obs={2: 1}), lambda agent: Raising(2))


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        ({0: 1}, "reset() returned {0: 1} (dict); it must return a tuple of 2 dicts"),
        (({0: 1},), "reset() returned a tuple of 1 (dict); it must return a tuple of 2"),
        (([0], {}), "reset() returned obs = [0] (list); obs must be a dict keyed by agent id"),
        (({}, None), "reset() returned infos = None (NoneType); infos must be a dict"),
    ],
)
def test_reset_output_shape(output: Any, expected: str) -> None:
    with pytest.raises(MultiAgentEnvError) as info:
        check_reset("MyEnv", output, None)
    assert str(info.value).startswith("env 'MyEnv': " + expected)


def test_step_output_shape() -> None:
    message = step_error(step_output()[:4])
    assert message.startswith(
        "env 'MyEnv': step() returned a tuple of 4 (dict, dict, dict, dict); it must return "
        "a tuple of 5 dicts keyed by agent id: (obs, rewards, terminateds, truncateds, infos)"
    )
    message = step_error(list(step_output()))
    assert "step() returned a list of 5" in message
    message = step_error(step_output(rewards=[1.0, 2.0]))
    assert "step() returned rewards = [1.0, 2.0] (list); rewards must be a dict" in message
    from collections import defaultdict

    subclassed = step_output(rewards=defaultdict(float, {0: 1.0}))
    assert check_step("MyEnv", subclassed, spaces) == subclassed


# ------------------------------------------------------------------- an AEC env, duck-typed


class TurnGame:
    """A 3-player AEC env with PettingZoo's semantics, written out (no PettingZoo needed):
    turns cycle p0, p1, p2 over the agents left; a done agent is removed when stepped with
    None. Turn 1 (p0) gives p2, who has not acted, a reward of 5; turn 2 (p1) terminates p0,
    which stays selected-later, not at once; turn 4 (p1) truncates p1 and p2."""

    possible_agents: ClassVar[list[str]] = ["p0", "p1", "p2"]
    metadata: ClassVar[dict[str, Any]] = {"name": "turn_game"}

    def observation_space(self, agent: str) -> gym.Space[Any]:
        return gym.spaces.Discrete(10)

    def action_space(self, agent: str) -> gym.Space[Any]:
        return gym.spaces.Discrete(2)

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        self.agents = list(self.possible_agents)
        self.rewards = dict.fromkeys(self.agents, 0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.infos: dict[str, dict[str, Any]] = {agent: {} for agent in self.agents}
        self.agent_selection = "p0"
        self.t = 0
        self.none_steps: list[str] = []

    def observe(self, agent: str) -> int:
        return self.t

    def _after(self, agent: str) -> str:
        order = self.possible_agents
        start = order.index(agent)
        for k in range(1, len(order) + 1):
            candidate = order[(start + k) % len(order)]
            if candidate in self.agents:
                return candidate
        return agent

    def step(self, action: Any) -> None:
        agent = self.agent_selection
        for key in self.rewards:
            self.rewards[key] = 0
        if self.terminations[agent] or self.truncations[agent]:
            assert action is None
            self.none_steps.append(agent)
            nxt = self._after(agent)
            for table in (self.rewards, self.terminations, self.truncations, self.infos):
                del table[agent]
            self.agents.remove(agent)
            self.agent_selection = nxt
            return
        assert action is not None
        self.t += 1
        if self.t == 1:
            self.rewards.update(p0=1, p2=5)
        elif self.t == 2:
            self.rewards.update(p0=-1, p1=2)
            self.terminations["p0"] = True
        elif self.t == 4:
            self.rewards.update(p1=3, p2=4)
            self.truncations.update(p1=True, p2=True)
        self.agent_selection = self._after(agent)

    def close(self) -> None:
        self.closed = True

    def render(self) -> str:
        return "frame"

    def __str__(self) -> str:
        return "turn_game"


def test_aec_wrapper_steps_done_agents_and_times_rewards() -> None:
    game = TurnGame()
    env = PettingZooEnv(game)
    assert env.possible_agents == ["p0", "p1", "p2"] and env.env is game
    assert env.get_observation_space("p2") == gym.spaces.Discrete(10)
    with pytest.raises(MultiAgentEnvError, match=r"before reset\(\)"):
        env.step({"p0": 0})
    obs, infos = check_reset("TurnGame", env.reset(seed=1), env.get_observation_space)
    assert obs == {"p0": 0} and infos == {"p0": {}}
    with pytest.raises(MultiAgentEnvError, match=r"got actions for \['p1'\], but it is agent"):
        env.step({"p1": 0})

    with pytest.warns(RuntimeWarning, match=r"agent 'p2' got reward 5 before it ever acted"):
        out = check_step("TurnGame", env.step({"p0": 1}), env.get_observation_space)
    assert out[:4] == ({"p1": 1}, {"p0": 1}, {"p0": False, ALL: False}, {"p0": False, ALL: False})

    # p1 terminates p0, but p2 plays before p0 is removed
    out = check_step("TurnGame", env.step({"p1": 1}), env.get_observation_space)
    assert out[:3] == ({"p2": 2}, {"p0": -1, "p1": 2}, {"p1": False, ALL: False})

    # p0 is removed now: its last obs and its flag come with this step
    out = check_step("TurnGame", env.step({"p2": 1}), env.get_observation_space)
    assert game.none_steps == ["p0"]
    assert out[0] == {"p0": 3, "p1": 3}
    assert out[2] == {"p2": False, "p0": True, ALL: False}

    out = check_step("TurnGame", env.step({"p1": 1}), env.get_observation_space)
    assert game.none_steps == ["p0", "p2", "p1"] and game.agents == []
    assert out[0] == {"p2": 4, "p1": 4} and out[1] == {"p1": 3, "p2": 4}
    assert out[2] == {"p1": False, "p2": False, ALL: False}
    assert out[3] == {"p1": True, "p2": True, ALL: True}
    with pytest.raises(MultiAgentEnvError, match="after the episode ended"):
        env.step({"p1": 0})
    assert env.render() == "frame" and env.get_sub_environments() == [game]
    env.close()
    assert game.closed


# ------------------------------------------------------------------- PettingZoo


@pytest.fixture
def rps() -> Any:
    pytest.importorskip("pettingzoo")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # "create envs with the registry"
        return pytest.importorskip("pettingzoo.classic.rps_v2")


def test_parallel_rock_paper_scissors(rps: Any) -> None:
    env = ParallelPettingZooEnv(rps.parallel_env())
    assert env.possible_agents == ["player_0", "player_1"]
    assert env.get_observation_space("player_1") == gym.spaces.Discrete(4)
    assert env.get_action_space("player_0") == gym.spaces.Discrete(3)
    assert env.get_sub_environments() == [env.env]
    for seed in range(3):
        trace = play(env, seed=seed)
        assert len(trace.steps) == 15  # max_cycles
        obs, _, terminateds, truncateds, _ = trace.steps[-1]
        assert set(obs) == {"player_0", "player_1"}  # their last obs
        assert terminateds[ALL] is False and truncateds[ALL] is True
        assert trace.returns["player_0"] == -trace.returns["player_1"]
    env.close()


def test_aec_rock_paper_scissors(rps: Any) -> None:
    env = PettingZooEnv(rps.env())
    for seed in range(3):
        trace = play(env, seed=seed)
        assert len(trace.steps) == 30  # 15 rounds of 2 turns
        assert list(trace.first_obs) == ["player_0"]
        turns = [list(step[0]) for step in trace.steps[:-1]]
        assert turns == [["player_1"], ["player_0"]] * 14 + [["player_1"]]
        obs, rewards, terminateds, truncateds, _ = trace.steps[-1]
        assert set(obs) == set(rewards) == {"player_0", "player_1"}
        assert truncateds == {"player_0": True, "player_1": True, ALL: True}
        assert terminateds[ALL] is False
    env.close()


def test_aec_and_parallel_rock_paper_scissors_give_the_same_returns(rps: Any) -> None:
    rng = random.Random(0)
    rounds = [(rng.randrange(3), rng.randrange(3)) for _ in range(15)]
    rounds[:3] = [(0, 2), (0, 2), (1, 1)]  # player_0 wins twice: the totals are not all 0
    moves = iter(itertools.chain.from_iterable(rounds))
    aec = play(PettingZooEnv(rps.env()), seed=0, act=lambda agent, ob: next(moves))
    played = iter(rounds)
    current: dict[str, int] = {}

    def act(agent: Any, ob: Any) -> int:
        if agent == "player_0":  # asked first in each round
            current.update(zip(("player_0", "player_1"), next(played), strict=True))
        return current[agent]

    parallel = play(ParallelPettingZooEnv(rps.parallel_env()), seed=0, act=act)
    assert aec.returns == parallel.returns
    # In the AEC env both players get a round's reward when player_1 moves.
    assert aec.steps[1][1] == {"player_0": 1, "player_1": -1}
    assert aec.steps[0][1] == {"player_0": 0}  # player_1 has not acted yet: no entry
