"""The training keys of RLlib's new-stack tuned examples, each acting: DQN's ``epsilon``
schedule, ``n_step`` ranges, the episode replay buffers and their ``alpha``/``beta``, SAC's
``actor_lr``/``critic_lr``/``alpha_lr`` and ``lr=None``, APPO's circular buffer and
``target_network_update_freq``, ``env_to_module_connector`` with ``MeanStdFilter``, and the
example envs ``MultiAgentCartPole`` and ``StatelessCartPole``."""

from __future__ import annotations

import pickle
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from rlconf import (
    APPOConfig,
    ConfigError,
    DDPGConfig,
    DefaultModelConfig,
    DQNConfig,
    PPOConfig,
    SACConfig,
)
from rlconf.connectors import MeanStdFilter
from rlconf.replay_buffer_config import complete_replay_buffer_config
from runtime.algorithms.sac.learner import SACLearner
from runtime.algorithms.sac.module import SACModule
from runtime.core.exploration.epsilon_greedy import EpsilonGreedy
from runtime.core.postprocessing import add_n_step_returns
from runtime.core.sample_batch import SampleBatch as SB
from runtime.example_envs import MultiAgentCartPole, StatelessCartPole

# ------------------------------------------------------------------ replay buffers


@pytest.mark.parametrize(
    ("given", "kind"),
    [
        ("EpisodeReplayBuffer", "ReplayBuffer"),
        ("MultiAgentEpisodeReplayBuffer", "ReplayBuffer"),
        ("PrioritizedEpisodeReplayBuffer", "PrioritizedReplayBuffer"),
        ("MultiAgentPrioritizedEpisodeReplayBuffer", "PrioritizedReplayBuffer"),
    ],
)
def test_the_episode_buffers_are_the_buffers_here(given: Any, kind: str) -> None:
    config = DQNConfig().training(replay_buffer_config={"type": given, "alpha": 0.5, "beta": 0.3})
    settings = complete_replay_buffer_config(config.replay_buffer_config)
    assert settings["type"] == kind
    assert settings["prioritized_replay_alpha"] == 0.5
    assert settings["prioritized_replay_beta"] == 0.3
    assert "alpha" not in config.replay_buffer_config
    assert DQNConfig.from_json(config.to_json()) == config


def test_alpha_beside_prioritized_replay_alpha_with_another_value_is_refused() -> None:
    same = DQNConfig().training(
        replay_buffer_config={"alpha": 0.5, "prioritized_replay_alpha": 0.5}
    )
    assert same.replay_buffer_config["prioritized_replay_alpha"] == 0.5
    with pytest.raises(ConfigError) as caught:
        SACConfig().training(replay_buffer_config={"beta": 0.1, "prioritized_replay_beta": 0.2})
    (issue,) = caught.value.issues
    assert issue.field == "replay_buffer_config.beta"
    assert "new API stack name of prioritized_replay_beta" in issue.problem


# ------------------------------------------------------------------ n_step ranges


class _Policy:
    def __init__(self, worker_index: int = 0, **training: Any) -> None:
        self.config = DQNConfig().training(**training).debugging(seed=3).freeze()
        self.worker_index = worker_index


def _columns(rows: int, envs: int) -> dict[str, Any]:
    return {
        SB.REWARDS: np.ones((rows, envs), np.float32),
        SB.TERMINATEDS: np.zeros((rows, envs), bool),
        SB.SEGMENT_ENDS: np.zeros((rows, envs), bool),
        SB.NEXT_OBS: np.arange(rows * envs, dtype=np.float32).reshape(rows, envs, 1),
    }


def test_a_range_draws_each_rows_steps_from_low_to_high_minus_one() -> None:
    columns = _columns(40, 3)
    add_n_step_returns(columns, _Policy(n_step=(2, 5), gamma=0.5))
    # Rows far enough from the fragment's end: rewards of 1 summed over n steps.
    steps = np.log(columns["n_step_gamma"][:30]) / np.log(0.5)
    steps = np.round(steps).astype(int)
    assert set(steps.ravel()) == {2, 3, 4}  # numpy's integers(2, 5), as RLlib's buffers
    np.testing.assert_allclose(columns[SB.REWARDS][:30], (1 - 0.5**steps) / (1 - 0.5))
    # Each row's next observation is the one after its last step.
    rows = np.arange(30)[:, None]
    np.testing.assert_array_equal(
        columns[SB.NEXT_OBS][:30, :, 0], (rows + steps - 1) * 3 + np.arange(3)
    )


def test_range_draws_repeat_with_the_seed_and_differ_between_workers() -> None:
    def drawn(worker: int) -> Any:
        columns = _columns(20, 2)
        add_n_step_returns(columns, _Policy(worker, n_step=(1, 4), gamma=0.9))
        return columns["n_step_gamma"]

    np.testing.assert_array_equal(drawn(0), drawn(0))
    assert not np.array_equal(drawn(0), drawn(1))


def test_a_range_is_checked_and_its_json_form_is_a_list() -> None:
    config = DQNConfig.from_dict({"n_step": [2, 5]})
    assert config["n_step"] == (2, 5)
    assert DQNConfig.from_json(config.to_json())["n_step"] == (2, 5)
    for bad in [(5, 2), (3, 3), (0, 2)]:
        with pytest.raises(ConfigError, match="n_step"):
            DQNConfig().training(n_step=bad)


def test_a_range_must_fit_a_fragment_and_auto_fragments_are_n_step() -> None:
    with pytest.raises(ConfigError, match="rollout_fragment_length=3 cuts every such sum"):
        DQNConfig().rollouts(rollout_fragment_length=3).training(n_step=(2, 5)).validate()
    DQNConfig().training(n_step=(2, 5)).validate()  # DQN's 4 steps hold n = 4
    # SAC samples n_step steps per fragment ('auto', RLlib's rule): 1 by default.
    assert SACConfig().get_rollout_fragment_length() == 1
    assert SACConfig().training(n_step=(2, 5)).get_rollout_fragment_length() == 5
    assert SACConfig().training(n_step=3).get_rollout_fragment_length() == 3
    assert DQNConfig().rollouts(rollout_fragment_length="auto").get_rollout_fragment_length() == 1


# ------------------------------------------------------------------ DQN's epsilon


def test_epsilon_is_a_piecewise_schedule_over_env_steps() -> None:
    points = [(0, 1.0), (10000, 0.02)]
    DQNConfig().training(epsilon=points).validate()
    strategy = EpsilonGreedy(gym.spaces.Discrete(2), epsilon_schedule=[(0, 1.0), (100, 0.5)])
    assert strategy.epsilon_at(0) == 1.0
    assert strategy.epsilon_at(50) == pytest.approx(0.75)
    assert strategy.epsilon_at(10_000) == 0.5


def test_a_dqn_policy_explores_with_epsilon() -> None:
    config = (
        DQNConfig()
        .environment("CartPole-v1")
        .training(epsilon=[(0, 1.0), (1000, 0.1), (2000, 0.0)], model={"fcnet_hiddens": [8]})
    )
    algo = config.build_algo()
    try:
        exploration = algo.get_policy().exploration
        assert isinstance(exploration, EpsilonGreedy)
        assert exploration.epsilon_at(500) == pytest.approx(0.55)
        assert exploration.epsilon_at(1500) == pytest.approx(0.05)
        assert exploration.epsilon_at(3000) == 0.0
    finally:
        algo.stop()


def test_epsilon_with_another_schedule_or_strategy_is_refused() -> None:
    with pytest.raises(ConfigError, match="both set the epsilon schedule"):
        DQNConfig().training(epsilon=0.1).exploration(
            exploration_config={"final_epsilon": 0.5}
        ).validate()
    with pytest.raises(ConfigError, match="exploration_config's type is 'SoftQ'"):
        DQNConfig().training(epsilon=0.1).exploration(
            exploration_config={"type": "SoftQ"}
        ).validate()
    with pytest.raises(ConfigError, match="first timestep is 5; it starts at 0"):
        DQNConfig().training(epsilon=[(5, 1.0)]).validate()


# ------------------------------------------------------------------ SAC's learning rates

OBS = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
BOX = gym.spaces.Box(-2.0, 2.0, (2,), np.float32)


def test_sac_takes_actor_critic_and_alpha_lr_and_lr_none() -> None:
    config = (
        SACConfig()
        .training(
            lr=None,
            actor_lr=2e-4,
            critic_lr=8e-4,
            alpha_lr=9e-4,
            q_model_config={"fcnet_hiddens": [8]},
            policy_model_config={"fcnet_hiddens": [8]},
        )
        .validate()
        .freeze()
    )
    learner = SACLearner(SACModule(OBS, BOX, config), config)
    rates = {name: opt.param_groups[0]["lr"] for name, opt in learner.optimizers.items()}
    assert rates == {"actor": 2e-4, "critic": 8e-4, "entropy": 9e-4}
    # Unset, the reference's optimization dict decides.
    plain = SACConfig().training(optimization={"critic_learning_rate": 5e-4}).freeze()
    learner = SACLearner(SACModule(OBS, BOX, plain), plain)
    assert learner.optimizers["critic"].param_groups[0]["lr"] == 5e-4


def test_lr_none_is_only_for_algorithms_with_learning_rates_of_their_own() -> None:
    DDPGConfig().training(lr=None).validate()
    with pytest.raises(ConfigError, match="PPOConfig's optimizer learns at lr"):
        PPOConfig().training(lr=None).validate()
    with pytest.raises(ConfigError, match="both set one learning rate"):
        SACConfig().training(actor_lr=1e-3, optimization={"actor_learning_rate": 5e-4}).validate()


# ------------------------------------------------------------------ APPO


def test_appos_circular_buffer_is_the_learners_ring_of_batches() -> None:
    config = APPOConfig().training(
        circular_buffer_num_batches_N=4, circular_buffer_iterations_per_batch_K=2
    )
    assert config["minibatch_buffer_size"] == 4 and config["num_sgd_iter"] == 2
    with pytest.raises(ConfigError, match="both are given"):
        APPOConfig().training(num_epochs=3, circular_buffer_iterations_per_batch_K=2)


def test_appo_moves_its_target_after_target_network_update_freq_rows() -> None:
    config = (
        APPOConfig()
        .environment("CartPole-v1")
        .rollouts(num_workers=0, rollout_fragment_length=10)
        .training(train_batch_size=10, target_network_update_freq=25, model={"fcnet_hiddens": [8]})
        .debugging(seed=0)
    )
    algo = config.build_algo()
    try:
        learner = algo.get_policy().learner
        batch = algo.workers.local_worker().sample()
        moves = []
        for _ in range(6):
            learner.update(batch)
            moves.append(learner._rows_since_move == 0)
    finally:
        algo.stop()
    assert moves == [False, False, True, False, False, True]  # every 30 >= 25 rows
    with pytest.raises(ConfigError, match="both set when the target policy moves"):
        APPOConfig().training(target_network_update_freq=100, target_update_frequency=2).validate()


# ------------------------------------------------------------------ connectors


def test_a_mean_std_filter_connector_is_the_observation_filter() -> None:
    config = PPOConfig().env_runners(
        env_to_module_connector=lambda env, spaces, device: MeanStdFilter()
    )
    assert config["observation_filter"] == "MeanStdFilter"
    config.env_runners(env_to_module_connector=lambda env: [MeanStdFilter(multi_agent=True)])
    assert config["observation_filter"] == "MeanStdFilter"
    config.env_runners(env_to_module_connector=None)
    assert config["observation_filter"] == "NoFilter"


@pytest.mark.parametrize(
    ("factory", "reason"),
    [
        (lambda env: object(), "only rlconf.connectors.MeanStdFilter() has a counterpart"),
        (lambda env: env.observation_space, "raised AttributeError"),
        (3, "is not a function (int)"),
    ],
)
def test_other_connectors_are_refused_with_the_reason(factory: Any, reason: str) -> None:
    with pytest.raises(ConfigError) as caught:
        PPOConfig().env_runners(env_to_module_connector=factory)
    (issue,) = caught.value.issues
    assert issue.field == "env_to_module_connector" and reason in issue.problem


# ------------------------------------------------------------------ model keys


def test_zero_bias_initializers_act() -> None:
    # They act (tests/test_model_init_keys.py), on the LSTM's biases too: none is inert.
    config = DQNConfig().rl_module(
        model_config=DefaultModelConfig(
            fcnet_bias_initializer="zeros_",
            head_fcnet_bias_initializer="zeros_",
            lstm_bias_initializer="zeros_",
        )
    )
    assert config.model["lstm_bias_initializer"] == "zeros_"
    assert not any("initializer" in key for key in config.inert_settings())


# ------------------------------------------------------------------ example envs


def test_multi_agent_cartpole_is_rllibs() -> None:
    env = MultiAgentCartPole(config={"num_agents": 2})
    observations, _ = env.reset(seed=0)
    assert set(observations) == {0, 1}
    assert pickle.loads(pickle.dumps(MultiAgentCartPole)) is MultiAgentCartPole
    assert StatelessCartPole().observation_space.shape == (2,)
