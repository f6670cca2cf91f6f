"""The noise exploration strategies of deterministic actors (GaussianNoise,
OrnsteinUhlenbeckNoise and their per-worker variants): the random phase, the scale schedule,
the noise itself, clipping, per-sub-env OU state reset at episode starts, per-worker scales,
state, building by name; and the action space an exploration acts in (the policy's
coordinates: ``[-1, 1]`` under ``normalize_actions``), for these and for the random actions of
StochasticSampling and Random."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, TypeVar

import gymnasium as gym
import numpy as np
import numpy.typing as npt
import pytest
import torch

import rlconf
from rlconf import PGConfig, PPOConfig
from runtime import PolicyBuilder, RLModule, RolloutWorker
from runtime.core.distributions import Deterministic, SquashedGaussian
from runtime.core.exploration import (
    BUILTIN,
    Exploration,
    GaussianNoise,
    OrnsteinUhlenbeckNoise,
    PerWorkerGaussianNoise,
    PerWorkerOrnsteinUhlenbeckNoise,
    build_exploration,
    policy_action_space,
)
from runtime.core.sample_batch import SampleBatch as SB
from runtime.env.env_registry import env_creator_for
from runtime.env.episode import Episode

Tensors = dict[str, torch.Tensor]
ROWS = 20_000
N = TypeVar("N", bound=GaussianNoise)
NOISE_CLASSES = (
    GaussianNoise,
    OrnsteinUhlenbeckNoise,
    PerWorkerGaussianNoise,
    PerWorkerOrnsteinUhlenbeckNoise,
)


@pytest.fixture(autouse=True)
def _seeded() -> None:
    torch.manual_seed(0)


def _box(low: Any = -1.0, high: Any = 1.0, shape: tuple[int, ...] = (2,)) -> gym.spaces.Box:
    space = gym.spaces.Box(
        np.broadcast_to(np.float32(low), shape), np.broadcast_to(np.float32(high), shape)
    )
    space.seed(0)
    return space


def _det(rows: int, values: Any = 0.0, dim: int = 2) -> Deterministic:
    return Deterministic(torch.broadcast_to(torch.as_tensor(values), (rows, dim)).float().clone())


def _held(cls: type[N], scale: float, **kwargs: Any) -> N:
    """``cls`` past its random phase at once (random_timesteps=0), its scale held at ``scale``."""
    return cls(
        kwargs.pop("space", _box(-10.0, 10.0)),
        random_timesteps=0,
        initial_scale=scale,
        final_scale=scale,
        **kwargs,
    )


def _lag1(series: npt.NDArray[Any]) -> float:
    return float(np.corrcoef(series[:-1], series[1:])[0, 1])


# ---------------------------------------------------------------------------- the random phase


@pytest.mark.parametrize("cls", NOISE_CLASSES, ids=lambda c: c.__name__)
def test_random_phase_is_uniform_within_the_bounds(cls: type[GaussianNoise]) -> None:
    exploration = cls(_box([-2.0, 0.0], [2.0, 1.0]), random_timesteps=1000)
    rows = ROWS // 2  # (a draw at a time from the space)
    dist = _det(rows, [0.5, 0.5])
    actions = exploration.get_exploration_action(action_distribution=dist, timestep=999).numpy()
    assert actions.shape == (rows, 2) and actions.dtype == np.float32
    assert np.all(actions >= [-2.0, 0.0]) and np.all(actions <= [2.0, 1.0])
    # Uniform: the mean and the standard deviation of U(low, high) on each dimension (standard
    # errors of the mean 0.012 and 0.003, of the std 0.5%).
    assert abs(float(actions[:, 0].mean())) < 0.05
    assert float(actions[:, 1].mean()) == pytest.approx(0.5, abs=0.012)
    np.testing.assert_allclose(actions.std(0), [4.0 / 12**0.5, 1.0 / 12**0.5], rtol=0.02)
    # From random_timesteps on: the actor's actions plus noise (std 0.1 at scale 1, not 1.15).
    past = exploration.get_exploration_action(action_distribution=_det(ROWS, 0.5), timestep=1000)
    assert float((past[:, 0] - 0.5).std()) < 0.2


@pytest.mark.parametrize("cls", NOISE_CLASSES, ids=lambda c: c.__name__)
def test_not_exploring_gives_the_deterministic_actions_and_changes_nothing(
    cls: type[GaussianNoise],
) -> None:
    exploration = cls(_box(), random_timesteps=100)
    dist = _det(8, torch.linspace(-0.9, 0.9, 16).reshape(8, 2))
    for timestep in (0, 50, 100, 10**6):  # in the random phase and after it
        actions = exploration.get_exploration_action(
            action_distribution=dist, timestep=timestep, explore=False
        )
        assert torch.equal(actions, dist.inputs)
    assert exploration.get_state() == {"cur_scale": 1.0, "last_timestep": 0}
    if isinstance(exploration, OrnsteinUhlenbeckNoise):
        assert exploration.ou_state is None


# ---------------------------------------------------------------------------- the scale


def test_defaults_are_the_references() -> None:
    gaussian = GaussianNoise(_box())
    assert (gaussian.random_timesteps, gaussian.stddev) == (1000, 0.1)
    assert (gaussian.initial_scale, gaussian.final_scale, gaussian.scale_timesteps) == (
        1.0,
        0.02,
        10000,
    )
    ou = OrnsteinUhlenbeckNoise(_box())
    assert (ou.ou_theta, ou.ou_sigma, ou.ou_base_scale) == (0.15, 0.2, 0.1)
    assert (ou.random_timesteps, ou.initial_scale, ou.final_scale) == (1000, 1.0, 0.02)


@pytest.mark.parametrize(
    ("timestep", "scale"),
    [
        (0, 1.0),  # the random phase (the scale is not used there)
        (99, 1.0),
        (100, 1.0),  # the schedule starts after the random phase
        (350, 0.775),  # a quarter of the way from 1.0 to 0.1
        (600, 0.55),  # half way
        (1100, 0.1),  # the end
        (50_000, 0.1),  # and constant after it
    ],
)
@pytest.mark.parametrize("cls", [GaussianNoise, OrnsteinUhlenbeckNoise], ids=lambda c: c.__name__)
def test_scale_is_linear_after_the_random_phase_then_constant(
    cls: type[GaussianNoise], timestep: int, scale: float
) -> None:
    exploration = cls(
        _box(), random_timesteps=100, initial_scale=1.0, final_scale=0.1, scale_timesteps=1000
    )
    assert exploration.scale_at(timestep) == pytest.approx(scale)
    exploration.get_exploration_action(action_distribution=_det(2), timestep=timestep)
    assert exploration.cur_scale == pytest.approx(scale)
    assert exploration.stats() == {"cur_scale": pytest.approx(scale)}
    assert exploration.get_state() == {"cur_scale": pytest.approx(scale), "last_timestep": timestep}
    # A worker that never acts follows the timestep it is sent.
    idle = cls(
        _box(), random_timesteps=100, initial_scale=1.0, final_scale=0.1, scale_timesteps=1000
    )
    idle.on_timestep(timestep)
    assert idle.stats() == exploration.stats()


# ---------------------------------------------------------------------------- the noise


@pytest.mark.parametrize(("stddev", "scale"), [(0.1, 1.0), (0.5, 0.3), (0.2, 2.0)])
def test_gaussian_noise_has_stddev_times_scale(stddev: float, scale: float) -> None:
    exploration = _held(GaussianNoise, scale, stddev=stddev)
    dist = _det(ROWS, [1.0, -3.0])
    noise = exploration.get_exploration_action(action_distribution=dist, timestep=5) - dist.inputs
    # Standard errors: of the mean 0.007 * sigma, of the std 0.005 * sigma.
    np.testing.assert_allclose(noise.mean(0).numpy(), [0.0, 0.0], atol=0.03 * stddev * scale)
    np.testing.assert_allclose(noise.std(0).numpy(), [stddev * scale] * 2, rtol=0.03)
    # Independent between rows and dimensions.
    assert abs(float(np.corrcoef(noise.numpy().T)[0, 1])) < 0.03


@pytest.mark.parametrize("cls", NOISE_CLASSES, ids=lambda c: c.__name__)
def test_noisy_actions_are_clipped_to_the_bounds(cls: type[GaussianNoise]) -> None:
    space = _box([-1.0, 0.0], [1.0, 0.5])
    exploration = _held(cls, 1.0, space=space, stddev=0.5)
    # The actor at the upper bound of the first dimension and the lower of the second: the
    # noise pushes half of the actions past the bounds, where they are clipped.
    dist = _det(ROWS, [1.0, 0.0])
    for timestep in range(5):  # (the OU noise needs a few steps to grow)
        actions = exploration.get_exploration_action(action_distribution=dist, timestep=timestep)
    assert torch.all(actions[:, 0] <= 1.0) and torch.all(actions[:, 1] >= 0.0)
    on_bounds = ((actions[:, 0] == 1.0) & (actions[:, 1] == 0.0)).double().mean()
    assert 0.2 < float(on_bounds) < 0.3  # both clipped: about a quarter
    assert float((actions[:, 0] < 0.99).double().mean()) > 0.4  # the rest moved inside


def test_noise_on_an_unbounded_box_is_not_clipped() -> None:
    exploration = _held(GaussianNoise, 1.0, space=_box(-np.inf, np.inf), stddev=1.0)
    actions = exploration.get_exploration_action(action_distribution=_det(ROWS), timestep=0)
    assert torch.isfinite(actions).all()
    assert float(actions.std()) == pytest.approx(1.0, rel=0.03)


def test_noise_needs_a_box_action_space() -> None:
    for cls in NOISE_CLASSES:
        with pytest.raises(rlconf.ConfigError, match="needs a Box action space"):
            cls(gym.spaces.Discrete(3))


def _noise_series(exploration: GaussianNoise, steps: int = 3000) -> npt.NDArray[Any]:
    """The noise of one sub-env's action over ``steps`` successive steps."""
    dist = _det(1)
    return np.array(
        [
            float(exploration.get_exploration_action(action_distribution=dist, timestep=t)[0, 0])
            for t in range(steps)
        ]
    )


def test_ou_noise_is_temporally_correlated_and_gaussian_noise_is_not() -> None:
    ou = _noise_series(_held(OrnsteinUhlenbeckNoise, 1.0, space=_box(-100.0, 100.0)))
    gaussian = _noise_series(_held(GaussianNoise, 1.0, space=_box(-100.0, 100.0)))
    # An OU process with theta 0.15 has lag-1 autocorrelation 1 - theta = 0.85.
    assert _lag1(ou) > 0.8
    assert abs(_lag1(gaussian)) < 0.1


def test_ou_noise_is_scaled_by_base_scale_scale_and_the_range_of_the_bounds() -> None:
    # Stationary OU: x has variance sigma^2 / (1 - (1 - theta)^2).
    x_std = 0.2 / (1 - 0.85**2) ** 0.5
    for width, scale in ((200.0, 1.0), (20.0, 0.5)):
        ou = _held(OrnsteinUhlenbeckNoise, scale, space=_box(-width / 2, width / 2))
        dist = _det(ROWS // 2)
        for t in range(40):  # to stationarity (0.85^80 of the start is left), all rows at once
            actions = ou.get_exploration_action(action_distribution=dist, timestep=t)
        expected = scale * 0.1 * x_std * width
        assert float(actions.std()) == pytest.approx(expected, rel=0.04)


# ---------------------------------------------------------------------------- OU state per sub-env


def _ou_rows(exploration: OrnsteinUhlenbeckNoise) -> npt.NDArray[Any]:
    assert exploration.ou_state is not None
    return exploration.ou_state.numpy().copy()


def test_an_episode_start_resets_only_its_sub_envs_ou_state() -> None:
    ou = _held(OrnsteinUhlenbeckNoise, 1.0)
    for t in range(20):
        ou.get_exploration_action(action_distribution=_det(3), timestep=t)
    before = _ou_rows(ou)
    assert before.shape == (3, 2) and np.all(np.abs(before) > 0)

    ou.on_episode_start(None, environment=None, episode=Episode(7, 1, 0))
    after = _ou_rows(ou)
    np.testing.assert_array_equal(after[1], [0.0, 0.0])
    np.testing.assert_array_equal(after[[0, 2]], before[[0, 2]])

    # The next step of that sub-env starts the process afresh: one step of sigma-sized noise.
    ou.get_exploration_action(action_distribution=_det(3), timestep=20)
    assert np.all(np.abs(_ou_rows(ou)[1]) < 5 * 0.2)


def test_the_rows_of_a_batch_are_the_sub_envs_of_env_indices() -> None:
    ou = _held(OrnsteinUhlenbeckNoise, 1.0)
    ou.get_exploration_action(action_distribution=_det(3), timestep=0)  # rows 0, 1, 2
    before = _ou_rows(ou)
    ou.env_indices = [2, 0]
    ou.get_exploration_action(action_distribution=_det(2), timestep=1)
    after = _ou_rows(ou)
    np.testing.assert_array_equal(after[1], before[1])  # sub-env 1 did not step
    assert np.all(after[[0, 2]] != before[[0, 2]])
    ou.env_indices = [4]  # a sub-env not seen yet: a new row, the ones between stay zero
    ou.get_exploration_action(action_distribution=_det(1), timestep=2)
    after_new = _ou_rows(ou)
    assert after_new.shape == (5, 2)
    np.testing.assert_array_equal(after_new[3], [0.0, 0.0])
    np.testing.assert_array_equal(after_new[:3], after)
    ou.env_indices = [0, 1]
    with pytest.raises(ValueError, match="names 2 sub-envs for 3 rows"):
        ou.get_exploration_action(action_distribution=_det(3), timestep=3)


class DeterministicActor(RLModule):
    """Actions ``0.5`` on every dimension, whatever the observation."""

    def __init__(self, obs_space: gym.Space[Any], action_space: gym.Space[Any], config: Any):
        super().__init__(obs_space, action_space, config)
        self.action = torch.nn.Parameter(torch.full(action_space.shape or (1,), 0.5))

    def forward_train(self, batch: Tensors) -> Tensors:
        return {SB.ACTIONS: self.action.expand(len(batch[SB.OBS]), -1)}


def _actor_builder(kind: str) -> PolicyBuilder:
    return PolicyBuilder(
        learner_class=None, module_class=DeterministicActor, explorations=(kind,), algorithm="X"
    )


def _noise_config(kind: str, **args: Any) -> Any:
    return (
        PGConfig()
        .environment("Pendulum-v1")
        .rollouts(num_workers=0, num_envs_per_worker=2, rollout_fragment_length=12, horizon=5)
        .exploration(exploration_config={"type": kind, **args})
        .debugging(seed=3)
        .freeze()
    )


def test_the_sampler_resets_a_sub_envs_ou_state_when_its_episode_starts() -> None:
    config = _noise_config(
        "OrnsteinUhlenbeckNoise", random_timesteps=0, initial_scale=1.0, final_scale=1.0
    )
    worker = RolloutWorker(
        env_creator=env_creator_for(config["env"]),
        config=config,
        policy_class=_actor_builder("OrnsteinUhlenbeckNoise"),
    )
    ou = worker.get_policy().exploration
    assert isinstance(ou, OrnsteinUhlenbeckNoise)
    seen: list[tuple[int, int, list[float] | None]] = []
    steps = [0]
    reset, act = ou.on_episode_start, ou.get_exploration_action

    def start_spy(policy: Any = None, **kwargs: Any) -> None:
        reset(policy, **kwargs)
        assert policy is worker.get_policy()
        env_id = kwargs["episode"].env_id
        row = None if ou.ou_state is None else ou.ou_state[env_id].tolist()
        seen.append((env_id, steps[0], row))

    def act_spy(**kwargs: Any) -> torch.Tensor:
        steps[0] += 1
        assert ou.env_indices is None  # the sub-envs step in lockstep: rows 0..B-1
        return act(**kwargs)

    ou.on_episode_start = start_spy  # type: ignore[method-assign]
    ou.get_exploration_action = act_spy  # type: ignore[method-assign]
    batch = worker.sample()
    # Two sub-envs stepped in lockstep, 12 steps each, episodes of 5: starts before the first
    # step (no noise state yet), then after steps 5 and 10, each with its sub-env's row zeroed.
    assert [(env, step) for env, step, _ in seen] == [
        (0, 0),
        (1, 0),
        (0, 5),
        (1, 5),
        (0, 10),
        (1, 10),
    ]
    assert [row for _, _, row in seen] == [None, None] + [[0.0]] * 4
    # The noise of a sub-env's first step in an episode is one OU step from zero: small.
    noise = np.abs(batch[SB.ACTIONS][:, 0] - 0.5)
    first_steps = batch["t"] == 0
    assert first_steps.sum() == 6
    # x = sigma * N(0, 1) after one step, times base scale and range 2: |noise| < 5 * 0.04.
    assert np.all(noise[first_steps] < 0.2)


def test_compute_actions_hands_env_indices_to_the_exploration() -> None:
    config = _noise_config("OrnsteinUhlenbeckNoise", random_timesteps=0)
    policy = _actor_builder("OrnsteinUhlenbeckNoise")(
        gym.spaces.Box(-1.0, 1.0, (3,), np.float32), _box(-2.0, 2.0, (1,)), config
    )
    obs = np.zeros((3, 3), np.float32)
    ou = policy.exploration
    assert isinstance(ou, OrnsteinUhlenbeckNoise)

    def env_indices() -> Sequence[int] | None:
        return ou.env_indices

    policy.compute_actions(obs)
    assert env_indices() is None
    before = _ou_rows(ou)
    policy.compute_actions(obs[:1], env_indices=[1])
    assert env_indices() == [1]
    after = _ou_rows(ou)
    np.testing.assert_array_equal(after[[0, 2]], before[[0, 2]])
    assert np.all(after[1] != before[1])
    policy.compute_actions(obs)  # nothing given: rows 0..B-1 again
    assert env_indices() is None


# ---------------------------------------------------------------------------- per worker


@pytest.mark.parametrize(
    "cls", [PerWorkerGaussianNoise, PerWorkerOrnsteinUhlenbeckNoise], ids=lambda c: c.__name__
)
def test_per_worker_scales_are_fixed_over_three_workers(cls: type[GaussianNoise]) -> None:
    def scale(worker_index: int, timestep: int = 0) -> float:
        exploration = cls(_box(), num_workers=3, worker_index=worker_index, random_timesteps=10)
        exploration.get_exploration_action(action_distribution=_det(2), timestep=timestep)
        return exploration.cur_scale

    assert scale(0) == 0.0  # the local worker only learns
    assert scale(1) == pytest.approx(0.4)
    assert scale(2) == pytest.approx(0.4**4.5)
    assert scale(3) == pytest.approx(0.4**8)
    assert scale(1, 10**6) == pytest.approx(0.4)  # whatever the timestep
    # And the noise follows it: worker 1's noise has std 0.4 * stddev.
    gaussian = PerWorkerGaussianNoise(_box(-5, 5), num_workers=3, worker_index=1, stddev=0.5)
    dist = _det(ROWS)
    noise = gaussian.get_exploration_action(action_distribution=dist, timestep=10**5)
    assert float(noise.std()) == pytest.approx(0.2, rel=0.03)


@pytest.mark.parametrize(
    "cls", [PerWorkerGaussianNoise, PerWorkerOrnsteinUhlenbeckNoise], ids=lambda c: c.__name__
)
@pytest.mark.parametrize("num_workers", [0, 1])
def test_per_worker_noise_with_one_worker_or_none_follows_the_schedule(
    cls: type[GaussianNoise], num_workers: int
) -> None:
    # The OU variant's own arguments pass on to OrnsteinUhlenbeckNoise.
    ou_args = {"ou_theta": 0.1} if cls is PerWorkerOrnsteinUhlenbeckNoise else {}
    exploration = cls(
        _box(),
        num_workers=num_workers,
        worker_index=num_workers,
        random_timesteps=10,
        initial_scale=0.8,
        final_scale=0.2,
        scale_timesteps=100,
        **ou_args,
    )
    assert exploration.cur_scale == pytest.approx(0.8)
    exploration.on_timestep(60)
    assert exploration.cur_scale == pytest.approx(0.5)
    exploration.on_timestep(500)
    assert exploration.cur_scale == pytest.approx(0.2)
    if isinstance(exploration, OrnsteinUhlenbeckNoise):
        assert exploration.ou_theta == 0.1


# ---------------------------------------------------------------------------- state


@pytest.mark.parametrize("cls", NOISE_CLASSES, ids=lambda c: c.__name__)
def test_state_is_json_and_round_trips(cls: type[GaussianNoise]) -> None:
    def make() -> GaussianNoise:
        return cls(_box(), random_timesteps=100, final_scale=0.1, scale_timesteps=1000)

    exploration = make()
    exploration.get_exploration_action(action_distribution=_det(2), timestep=600)
    state = json.loads(json.dumps(exploration.get_state()))
    assert state == {"cur_scale": pytest.approx(0.55), "last_timestep": 600}
    restored = make()
    assert restored.cur_scale == 1.0
    restored.set_state(state)
    assert restored.get_state() == exploration.get_state()
    assert restored.stats() == exploration.stats() == {"cur_scale": pytest.approx(0.55)}


def test_per_worker_state_keeps_the_workers_own_scale() -> None:
    worker = PerWorkerOrnsteinUhlenbeckNoise(_box(), num_workers=3, worker_index=3)
    worker.on_timestep(1234)
    other = PerWorkerOrnsteinUhlenbeckNoise(_box(), num_workers=3, worker_index=1)
    other.set_state(json.loads(json.dumps(worker.get_state())))
    assert other.get_state() == {"cur_scale": pytest.approx(0.4), "last_timestep": 1234}


# ---------------------------------------------------------------------------- building


@pytest.mark.parametrize(
    ("kind", "cls"),
    [
        ("GaussianNoise", GaussianNoise),
        ("PerWorkerGaussianNoise", PerWorkerGaussianNoise),
        ("OrnsteinUhlenbeckNoise", OrnsteinUhlenbeckNoise),
        ("PerWorkerOrnsteinUhlenbeckNoise", PerWorkerOrnsteinUhlenbeckNoise),
    ],
)
def test_factory_builds_each_noise_by_name_with_its_arguments(
    kind: str, cls: type[GaussianNoise]
) -> None:
    assert BUILTIN[kind] is cls
    args: dict[str, Any] = {"stddev": 0.3, "random_timesteps": 7, "final_scale": 0.05}
    if "OrnsteinUhlenbeck" in kind:
        args["ou_sigma"] = 0.4
    config = (
        PPOConfig()
        .rollouts(num_workers=3)
        .exploration(exploration_config={"type": kind, **args})
        .freeze()
    )
    exploration = build_exploration(
        config, _box(-2.0, 2.0), allowed=(kind,), algorithm="X", worker_index=2
    )
    assert type(exploration) is cls
    assert (exploration.stddev, exploration.random_timesteps, exploration.final_scale) == (
        0.3,
        7,
        0.05,
    )
    assert (exploration.num_workers, exploration.worker_index) == (3, 2)
    if isinstance(exploration, OrnsteinUhlenbeckNoise):
        assert exploration.ou_sigma == 0.4
    expected = pytest.approx(0.4**4.5) if kind.startswith("PerWorker") else 1.0
    assert exploration.cur_scale == expected


# ---------------------------------------------------------------------------- policy coordinates


def _config(normalize_actions: bool = True, seed: int | None = 5, **exploration: Any) -> Any:
    return (
        rlconf.SACConfig()
        .environment("Pendulum-v1", normalize_actions=normalize_actions)
        .exploration(exploration_config=exploration or {"type": "Random"})
        .debugging(seed=seed)
        .freeze()
    )


PENDULUM = gym.spaces.Box(-2.0, 2.0, (1,), np.float32)
SAMPLING = ("StochasticSampling", "Random", "GaussianNoise", "OrnsteinUhlenbeckNoise")


def _build(config: Any, space: gym.Space[Any] = PENDULUM, worker_index: int = 0) -> Exploration:
    return build_exploration(
        config, space, allowed=SAMPLING, algorithm="SAC", worker_index=worker_index
    )


def _random_draws(exploration: Exploration, rows: int = 2000) -> npt.NDArray[Any]:
    dist = SquashedGaussian(torch.zeros(rows, 2))
    actions = exploration.get_exploration_action(action_distribution=dist, timestep=0)
    assert isinstance(actions, torch.Tensor)  # the built-in strategies return no logp
    return actions.numpy()


def test_the_exploration_acts_in_the_policys_coordinates() -> None:
    normalized = _build(_config()).action_space
    assert isinstance(normalized, gym.spaces.Box)
    assert normalized == gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
    assert _build(_config(normalize_actions=False)).action_space is PENDULUM
    unbounded = gym.spaces.Box(-np.inf, np.inf, (2,), np.float32)
    assert _build(_config(), unbounded).action_space is unbounded
    discrete = gym.spaces.Discrete(3)
    assert policy_action_space(discrete, True, 0) is discrete


@pytest.mark.parametrize(
    "exploration_config",
    [
        {"type": "Random"},
        {"type": "StochasticSampling", "random_timesteps": 100},
        {"type": "GaussianNoise"},
        {"type": "OrnsteinUhlenbeckNoise"},
    ],
    ids=lambda c: c["type"],
)
def test_normalized_random_actions_are_uniform_in_minus_one_one(
    exploration_config: dict[str, Any],
) -> None:
    actions = _random_draws(_build(_config(**exploration_config)))
    assert np.all(actions >= -1.0) and np.all(actions <= 1.0)
    # Not piled on the bounds (drawn from the env's [-2, 2] and clipped, half would be).
    assert float(np.mean(np.abs(actions) >= 0.999)) < 0.01
    assert float(actions.std()) == pytest.approx(1 / 3**0.5, rel=0.05)
    # Without normalize_actions: the env's bounds.
    raw = _random_draws(_build(_config(normalize_actions=False, **exploration_config)))
    assert raw.min() < -1.5 and raw.max() > 1.5


def test_normalized_random_actions_repeat_with_the_seed_and_differ_by_worker() -> None:
    first = _random_draws(_build(_config(seed=5), worker_index=1), 50)
    np.testing.assert_array_equal(first, _random_draws(_build(_config(seed=5), worker_index=1), 50))
    assert not np.array_equal(first, _random_draws(_build(_config(seed=5), worker_index=2), 50))
    assert not np.array_equal(first, _random_draws(_build(_config(seed=6), worker_index=1), 50))


def test_sac_samples_random_actions_inside_minus_one_one() -> None:
    config = (
        rlconf.SACConfig()
        .environment("Pendulum-v1")
        .exploration(exploration_config={"type": "StochasticSampling", "random_timesteps": 100})
        .debugging(seed=3)
    )
    algo = config.build()
    try:
        worker = algo.workers.local_worker()
        actions = np.concatenate([worker.sample()[SB.ACTIONS] for _ in range(200)])
    finally:
        algo.stop()
    assert len(actions) == 200
    assert np.all(actions >= -1.0) and np.all(actions <= 1.0)
    assert float(np.mean(np.abs(actions) >= 0.999)) < 0.05
    assert actions.min() < -0.7 and actions.max() > 0.7
