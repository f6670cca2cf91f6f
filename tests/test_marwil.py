"""MARWIL and BC (MARWIL with ``beta=0.0``): the loss against arithmetic done by hand, the
returns postprocessing, the configs' defaults and refusals, the learner's moving average of the
squared advantages and its round trip through a checkpoint, and both imitating a hand-written
CartPole controller from the experience files it wrote."""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch
from torch import nn

from rlconf import BCConfig, ConfigError, MARWILConfig, get_config_class
from rlconf.registry import algorithm_class_path
from runtime import BC, MARWIL, Algorithm
from runtime.algorithms.marwil import MARWILLearner, MARWILModule, marwil_loss
from runtime.core.distributions import Categorical, DiagGaussian
from runtime.core.module import RLModule
from runtime.core.postprocessing import PRODUCES, RETURNS, add_returns
from runtime.core.sample_batch import SampleBatch
from runtime.core.sample_batch import SampleBatch as SB
from runtime.offline import JsonWriter, SampleBatchBuilder

Tensors = dict[str, torch.Tensor]

# ---------------------------------------------------------------------------- stub modules


class FixedOutputs(RLModule):
    """``forward_train`` returns the given distribution inputs (and values) whatever the
    observations, both parameters, so the loss and its gradients can be written out by hand.
    Without values it has no critic: reading one fails."""

    def __init__(
        self,
        dist_inputs: list[list[float]],
        values: list[float] | None = None,
        dist_class: Any = Categorical,
    ) -> None:
        super().__init__(
            gym.spaces.Box(-1.0, 1.0, (1,), np.float32), gym.spaces.Discrete(2), {"model": {}}
        )
        self.dist_class = dist_class
        self.inputs = nn.Parameter(torch.tensor(dist_inputs, dtype=torch.float32))
        self.values = None if values is None else nn.Parameter(torch.tensor(values))
        self.has_critic = values is not None

    def forward_train(self, batch: Tensors) -> Tensors:
        out: Tensors = {SB.ACTION_DIST_INPUTS: self.inputs}
        if self.values is not None:
            out[SB.VF_PREDS] = self.values
        return out


def num(tensor: torch.Tensor) -> float:
    return float(tensor.detach())


def log_softmax(logits: list[float]) -> list[float]:
    norm = math.log(sum(math.exp(x) for x in logits))
    return [x - norm for x in logits]


LOGITS = [[0.0, 1.0], [2.0, -1.0], [0.5, 0.5]]
ACTIONS = [1, 0, 1]
VALUES = [1.0, 2.0, -1.0]
RETURNS_ = [3.0, 1.0, 0.0]
#: log pi(a|s) of each row, by hand.
LOGP = [log_softmax(row)[a] for row, a in zip(LOGITS, ACTIONS, strict=True)]


def _batch(returns: list[float] | None = None) -> Tensors:
    batch = {SB.ACTIONS: torch.tensor(ACTIONS), SB.OBS: torch.zeros(3, 1)}
    if returns is not None:
        batch[RETURNS] = torch.tensor(returns)
    return batch


def _loss(module: RLModule, batch: Tensors, **kwargs: Any) -> tuple[torch.Tensor, dict[str, Any]]:
    settings: dict[str, Any] = {
        "beta": 1.0,
        "vf_coeff": 1.0,
        "bc_logstd_coeff": 0.0,
        "moving_average_sqd_adv_norm": 100.0,
        "update_rate": 1e-8,
    }
    settings.update(kwargs)
    return marwil_loss(module, batch, **settings)


# ---------------------------------------------------------------------------- the loss


def test_beta_0_is_behaviour_cloning_the_mean_negative_log_likelihood() -> None:
    # No critic: the loss must not read a value (the stub has none) nor the returns.
    module = FixedOutputs(LOGITS)
    loss, stats = _loss(module, _batch(), beta=0.0)
    expected = -sum(LOGP) / 3
    assert num(loss) == pytest.approx(expected, rel=1e-6)
    assert set(stats) == {"policy_loss", "total_loss"}
    assert num(stats["policy_loss"]) == pytest.approx(expected, rel=1e-6)


def test_beta_1_weighs_each_log_likelihood_by_its_exponentiated_normalised_advantage() -> None:
    module = FixedOutputs(LOGITS, VALUES)
    loss, stats = _loss(module, _batch(RETURNS_), vf_coeff=0.5)

    adv = [r - v for r, v in zip(RETURNS_, VALUES, strict=True)]  # [2, -1, 1]
    adv_sq = sum(a * a for a in adv) / 3  # 2.0
    norm = 100.0 + 1e-8 * (adv_sq - 100.0)  # the moving average, updated first
    weights = [math.exp(a / (1e-8 + math.sqrt(norm))) for a in adv]
    policy_loss = -sum(w * lp for w, lp in zip(weights, LOGP, strict=True)) / 3
    vf_loss = 0.5 * adv_sq
    assert num(stats["policy_loss"]) == pytest.approx(policy_loss, rel=1e-6)
    assert num(stats["vf_loss"]) == pytest.approx(vf_loss, rel=1e-6)
    assert num(loss) == pytest.approx(policy_loss + 0.5 * vf_loss, rel=1e-6)
    assert num(stats["total_loss"]) == pytest.approx(num(loss))
    assert num(stats["moving_average_sqd_adv_norm"]) == pytest.approx(norm, rel=1e-12)
    # 1 - Var(R - V) / Var(R)
    returns_var = float(np.var(RETURNS_))
    assert num(stats["vf_explained_var"]) == pytest.approx(
        1 - float(np.var(adv)) / returns_var, rel=1e-5
    )

    # The weights are constants: the values learn from the value loss only,
    # d(vf_coeff * 0.5 * mean(adv^2)) / dV_i = -vf_coeff * adv_i / n.
    loss.backward()  # type: ignore[no-untyped-call]
    assert module.values is not None and module.values.grad is not None
    expected = [-0.5 * a / 3 for a in adv]
    np.testing.assert_allclose(module.values.grad.numpy(), expected, rtol=1e-6)


def test_the_moving_average_steps_towards_the_batchs_mean_squared_advantage() -> None:
    module = FixedOutputs(LOGITS, VALUES)
    _, stats = _loss(module, _batch(RETURNS_), moving_average_sqd_adv_norm=4.0, update_rate=0.5)
    # 4 + 0.5 * (2 - 4) = 3: the advantages are divided by sqrt(3).
    assert num(stats["moving_average_sqd_adv_norm"]) == pytest.approx(3.0)
    adv = [2.0, -1.0, 1.0]
    weights = [math.exp(0.7 * a / (1e-8 + math.sqrt(3.0))) for a in adv]
    _, stats = _loss(
        module, _batch(RETURNS_), beta=0.7, moving_average_sqd_adv_norm=4.0, update_rate=0.5
    )
    expected = -sum(w * lp for w, lp in zip(weights, LOGP, strict=True)) / 3
    assert num(stats["policy_loss"]) == pytest.approx(expected, rel=1e-6)


def test_bc_logstd_coeff_adds_the_gaussians_mean_log_std_to_each_log_likelihood() -> None:
    # Two action dimensions: inputs are [mean_0, mean_1, log_std_0, log_std_1].
    inputs = [[0.0, 1.0, 0.0, -1.0], [0.5, 0.0, 0.5, 0.5]]
    actions = [[0.5, 0.0], [0.0, 1.0]]
    module = FixedOutputs(inputs, dist_class=DiagGaussian)
    batch = {SB.ACTIONS: torch.tensor(actions), SB.OBS: torch.zeros(2, 1)}

    def logp(row: list[float], action: list[float]) -> float:
        mean, log_std = row[:2], row[2:]
        return sum(
            -0.5 * ((a - m) / math.exp(s)) ** 2 - s - 0.5 * math.log(2 * math.pi)
            for a, m, s in zip(action, mean, log_std, strict=True)
        )

    terms = [
        logp(row, a) + 0.1 * (row[2] + row[3]) / 2 for row, a in zip(inputs, actions, strict=True)
    ]
    loss, _ = _loss(module, batch, beta=0.0, bc_logstd_coeff=0.1)
    assert num(loss) == pytest.approx(-sum(terms) / 2, rel=1e-6)


# ---------------------------------------------------------------------------- postprocessing


def test_add_returns_discounts_to_each_segments_end_and_bootstraps_where_it_is_cut() -> None:
    """Sub-env 0: an episode terminated at t=2 (nothing after it counts), then one cut by the
    fragment's end at t=4 (bootstraps from V=8). Sub-env 1: cut (truncated) at t=1 with V=4,
    then cut at t=4 with V=2."""
    columns: dict[str, Any] = {
        SB.REWARDS: np.array([[1, 2]] * 5, dtype=np.float32),
        SB.TERMINATEDS: np.array(
            [[False, False], [False, False], [True, False], [False, False], [False, False]]
        ),
        SB.SEGMENT_ENDS: np.array(
            [[False, False], [False, True], [False, False], [False, False], [True, True]]
        ),
        SB.BOOTSTRAP_VALUES: np.array([[0, 0], [0, 4], [0, 0], [0, 0], [8, 2]], dtype=np.float32),
    }
    add_returns(columns, SimpleNamespace(config={"gamma": 0.5}))
    expected = np.array(
        [
            [1 + 0.5 * 1.5, 2 + 0.5 * 4],  # 1.75, 4
            [1 + 0.5 * 1, 2 + 0.5 * 4],  # 1.5, 4 (bootstrapped from 4)
            [1, 2 + 0.5 * 3.5],  # terminated: 1; 3.75
            [1 + 0.5 * 5, 2 + 0.5 * 3],  # 3.5, 3.5
            [1 + 0.5 * 8, 2 + 0.5 * 2],  # 5, 3 (bootstrapped)
        ],
        dtype=np.float32,
    )
    np.testing.assert_allclose(columns[RETURNS], expected, rtol=1e-6)
    assert columns[RETURNS].dtype == np.float32
    # Input rows without the column are postprocessed when read (runtime.offline).
    assert PRODUCES[add_returns] == (RETURNS,)
    assert MARWIL.postprocessing == (add_returns,)


# ---------------------------------------------------------------------------- configs


def test_marwil_config_has_the_references_defaults() -> None:
    config = MARWILConfig()
    expected = {
        "beta": 1.0,
        "vf_coeff": 1.0,
        "bc_logstd_coeff": 0.0,
        "moving_average_sqd_adv_norm_update_rate": 1e-8,
        "moving_average_sqd_adv_norm_start": 100.0,
        "lr": 1e-4,
        "lr_schedule": None,
        "train_batch_size": 2000,
        "grad_clip": None,
        "num_workers": 0,
        "postprocess_inputs": True,
        "input": "sampler",
    }
    assert {key: config[key] for key in expected} == expected
    assert get_config_class("MARWIL") is MARWILConfig
    assert algorithm_class_path("MARWIL") == "runtime.algorithms.marwil:MARWIL"


def test_bc_config_is_marwil_with_beta_0_and_no_postprocessing() -> None:
    config = BCConfig()
    assert isinstance(config, MARWILConfig)
    assert config["beta"] == 0.0 and config["postprocess_inputs"] is False
    assert config["lr"] == 1e-4 and config["train_batch_size"] == 2000
    assert get_config_class("BC") is BCConfig
    assert issubclass(BC, MARWIL) and BC.config_class is BCConfig
    BCConfig().training(beta=0.0).validate()


def test_bc_refuses_a_beta_other_than_0() -> None:
    config = BCConfig().training(beta=0.5)
    with pytest.raises(ConfigError, match=r"beta=0.5.*must be 0.0 for BC.*MARWILConfig"):
        config.validate()
    # ... which MARWIL takes.
    MARWILConfig().training(beta=0.5).validate()


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("beta", 1.5),
        ("beta", -0.1),
        ("vf_coeff", -1.0),
        ("bc_logstd_coeff", -0.1),
        ("moving_average_sqd_adv_norm_start", 0.0),
        ("moving_average_sqd_adv_norm_update_rate", 2.0),
    ],
)
def test_out_of_range_values_are_refused_with_the_setting_named(key: str, value: float) -> None:
    with pytest.raises(ConfigError, match=key):
        settings: dict[str, Any] = {key: value}
        MARWILConfig().training(**settings)


def test_bc_logstd_coeff_is_refused_without_a_gaussian_policy() -> None:
    config = MARWILConfig().training(bc_logstd_coeff=0.1, model={"fcnet_hiddens": [4]}).freeze()
    obs = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    with pytest.raises(ConfigError, match=r"bc_logstd_coeff=0.1.*needs a Gaussian policy"):
        MARWILModule(obs, gym.spaces.Discrete(2), config)
    module = MARWILModule(obs, gym.spaces.Box(-1.0, 1.0, (1,), np.float32), config)
    assert module.dist_class is DiagGaussian


def test_the_module_has_a_critic_only_when_beta_is_not_0() -> None:
    obs = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    for config, critic in ((MARWILConfig(), True), (BCConfig(), False)):
        frozen = config.training(model={"fcnet_hiddens": [4]}).freeze()
        assert MARWILModule(obs, gym.spaces.Discrete(2), frozen).has_critic is critic


# ---------------------------------------------------------------------------- the learner

OBS_SPACE = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)


def _learner(config: Any) -> MARWILLearner:
    torch.manual_seed(0)
    frozen = config.training(model={"fcnet_hiddens": [8]}).freeze()
    return MARWILLearner(MARWILModule(OBS_SPACE, gym.spaces.Discrete(2), frozen), frozen)


def _train_batch() -> SampleBatch:
    rng = np.random.default_rng(0)
    return SampleBatch(
        {
            SB.OBS: rng.normal(size=(16, 2)).astype(np.float32),
            SB.ACTIONS: rng.integers(0, 2, 16),
            RETURNS: rng.normal(3.0, 2.0, size=16).astype(np.float32),
        }
    )


def test_the_learner_steps_the_moving_average_with_each_batch() -> None:
    learner = _learner(MARWILConfig().training(moving_average_sqd_adv_norm_update_rate=0.1))
    batch = _train_batch()
    with torch.no_grad():
        values = learner.module.forward_train({SB.OBS: torch.from_numpy(batch[SB.OBS])})
    adv_sq = float(np.mean((batch[RETURNS] - values[SB.VF_PREDS].numpy()) ** 2))
    stats = learner.update(batch)["learner_stats"]
    expected = 100.0 + 0.1 * (adv_sq - 100.0)
    assert learner.sqd_adv_norm == pytest.approx(expected, rel=1e-6)
    assert stats["moving_average_sqd_adv_norm"] == learner.sqd_adv_norm
    assert {"policy_loss", "vf_loss", "total_loss", "vf_explained_var"} <= set(stats)
    # The reference's rate, 1e-8, still moves it (the average is a float64).
    slow = _learner(MARWILConfig())
    slow.update(batch)
    assert slow.sqd_adv_norm != 100.0


def test_bc_leaves_the_value_function_and_the_moving_average_alone() -> None:
    learner = _learner(BCConfig())
    stats = learner.update(_train_batch())["learner_stats"]
    assert set(stats) == {"policy_loss", "total_loss", "cur_lr"}
    assert learner.sqd_adv_norm == 100.0


def test_the_moving_average_goes_through_the_learner_state() -> None:
    original = _learner(MARWILConfig().training(moving_average_sqd_adv_norm_update_rate=0.1))
    original.update(_train_batch())
    state = json.loads(json.dumps(original.get_state()))
    restored = _learner(MARWILConfig())
    restored.set_state(state)
    assert restored.sqd_adv_norm == original.sqd_adv_norm != 100.0


def _sqd_adv_norm(algo: Algorithm) -> float:
    learner = algo.get_policy().learner
    assert isinstance(learner, MARWILLearner)
    return learner.sqd_adv_norm


def test_a_checkpoint_keeps_the_moving_average(tmp_path: Any) -> None:
    config = (
        MARWILConfig()
        .environment("CartPole-v1")
        .training(
            train_batch_size=100,
            moving_average_sqd_adv_norm_update_rate=0.01,
            model={"fcnet_hiddens": [8]},
        )
        .rollouts(rollout_fragment_length=100)
        .reporting(min_time_s_per_reporting=0)
        .debugging(seed=1)
    )
    algo = config.build()
    try:
        algo.train()
        norm = _sqd_adv_norm(algo)
        assert norm != 100.0
        path = algo.save(str(tmp_path))
    finally:
        algo.stop()
    restored = Algorithm.from_checkpoint(path)
    try:
        assert isinstance(restored, MARWIL)
        assert _sqd_adv_norm(restored) == norm
    finally:
        restored.stop()


# ---------------------------------------------------------------------------- learning

#: A linear CartPole controller that balances every episode to its 500-step limit: push right
#: when the weighted sum of (x, x_dot, theta, theta_dot) is positive.
EXPERT_WEIGHTS = np.array([0.1, 0.5, 1.0, 1.0])


def write_expert_episodes(folder: Path, episodes: int) -> None:
    """``episodes`` episodes of the controller, one batch (a JSON line) each, with the columns a
    rollout worker writes (its actions are certain: ``action_logp`` 0)."""
    env = gym.make("CartPole-v1")
    writer = JsonWriter(folder)
    for episode in range(episodes):
        builder = SampleBatchBuilder()
        obs, _ = env.reset(seed=episode)
        for t in range(1000):
            action = int(obs @ EXPERT_WEIGHTS > 0)
            new_obs, reward, terminated, truncated, _ = env.step(action)
            builder.add_values(
                obs=obs,
                actions=action,
                rewards=reward,
                terminateds=terminated,
                truncateds=truncated,
                new_obs=new_obs,
                eps_id=episode,
                t=t,
                action_logp=0.0,
            )
            obs = new_obs
            if terminated or truncated:
                break
        writer.write(builder.build_and_reset())


@pytest.mark.parametrize("config_class", [BCConfig, MARWILConfig])
def test_imitates_an_expert_from_its_experience_files(
    config_class: type[MARWILConfig], tmp_path: Path
) -> None:
    """20 expert episodes (10k rows); the greedy policy balances the pole for 400+ steps in
    under 30 iterations of a gradient step each (5 s). lr 1e-2 instead of the reference's 1e-4,
    which takes one small step per 2000 rows read."""
    write_expert_episodes(tmp_path / "expert", 20)
    config = (
        config_class()
        .environment("CartPole-v1")
        .training(lr=1e-2, model={"fcnet_hiddens": [64, 64]})
        .offline_data(input_=str(tmp_path / "expert"))
        .evaluation(
            evaluation_interval=1,
            evaluation_num_workers=0,
            evaluation_duration=10,
            # Ten sub-envs: the ten episodes in one batched pass per step.
            evaluation_config={"input": "sampler", "explore": False, "num_envs_per_worker": 10},
        )
        .reporting(min_time_s_per_reporting=0)
        .debugging(seed=0)
    )
    algo = config.build()
    try:
        best = 0.0
        for _ in range(60):
            result = algo.train()
            best = max(best, result["evaluation"]["episode_reward_mean"])
            if best >= 400:
                break
        assert best >= 400, f"greedy evaluation reached {best} in 60 iterations"
        # MARWIL's critic learned from the returns computed as the rows were read.
        stats = result["info"]["learner"]["default_policy"]["learner_stats"]
        assert ("vf_explained_var" in stats) is (config_class is MARWILConfig)
    finally:
        algo.stop()
