"""Models with memory (``use_lstm``, ``use_attention``, a custom model with a state): acting
from a state (the policy's and the algorithm's ``compute_single_action`` as the reference
takes and returns it), sampled rows that carry the inputs each step acted from, training on
sequences that reproduce the sampled action likelihoods exactly, towers that split a sequence
batch, checkpoints, evaluation, multi-agent policies, and the algorithms that refuse memory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch
from torch import nn

from rlconf import A2CConfig, DQNConfig, IMPALAConfig, PGConfig, PPOConfig, SACConfig
from rlconf.errors import ConfigError
from runtime import Algorithm, ModelCatalog, TorchModel, make_multi_agent
from runtime.core.data_parallel import _shards
from runtime.core.lstm_network import LSTMNetwork
from runtime.core.sample_batch import SampleBatch as SB
from runtime.core.sequences import sequence_tensors
from runtime.core.tanh import Tanh
from runtime.example_envs import RepeatAfterMeEnv

REPEAT = "runtime.example_envs.RepeatAfterMeEnv"
LSTM: dict[str, Any] = {"use_lstm": True, "lstm_cell_size": 16, "max_seq_len": 6}
LSTM_PREV = {**LSTM, "lstm_use_prev_action": True, "lstm_use_prev_reward": True}
ATTENTION: dict[str, Any] = {
    "use_attention": True,
    "attention_dim": 16,
    "attention_head_dim": 8,
    "attention_memory_inference": 5,
    "attention_memory_training": 5,
    "attention_use_n_prev_actions": 2,
    "attention_use_n_prev_rewards": 1,
    "max_seq_len": 6,
}


def _ppo(model: dict[str, Any], env: Any = REPEAT, **training: Any) -> PPOConfig:
    settings: dict[str, Any] = {
        "train_batch_size": 120,
        "sgd_minibatch_size": 40,
        "num_sgd_iter": 2,
        "model": {"fcnet_hiddens": [16], **model},
    }
    settings.update(training)
    return (
        PPOConfig()
        .environment(
            env, env_config={"repeat_delay": 1, "episode_len": 25} if env == REPEAT else {}
        )
        .rollouts(num_workers=0, num_envs_per_worker=3, rollout_fragment_length=40)
        .training(**settings)
        .debugging(seed=0)
    )


def _replayed_logp_gap(algo: Algorithm, policy_id: str = "default_policy") -> float:
    """The largest difference between the action log-likelihoods a sampled batch recorded and
    those the learner computes on the same rows as sequences (from the stored start states)."""
    batch = algo.workers.local_worker().sample()
    rows = batch.policy_batches[policy_id] if hasattr(batch, "policy_batches") else batch
    learner = algo.get_policy(policy_id).learner
    starts, lens = learner.sequences_of(rows)
    tensors = sequence_tensors(learner.batch_tensors(rows), starts, lens, np.arange(len(starts)))
    with torch.no_grad():
        out = learner.module.forward_train(tensors)
        dist = learner.module.dist_class(out[SB.ACTION_DIST_INPUTS])
        gap = (dist.logp(tensors[SB.ACTIONS]) - tensors[SB.ACTION_LOGP]).abs().max()
    return float(gap)


@pytest.mark.parametrize(
    "model",
    [
        LSTM,
        {**LSTM_PREV, "vf_share_layers": True},
        {**LSTM_PREV, "vf_share_layers": False},
        {**LSTM, "vf_share_layers": False, "post_fcnet_hiddens": [8]},
        ATTENTION,
    ],
    ids=["lstm", "lstm-prev-shared", "lstm-prev-own-critic", "lstm-heads", "attention"],
)
def test_training_sequences_reproduce_what_was_sampled(model: dict[str, Any]) -> None:
    algo = _ppo(model).build()
    try:
        result = algo.train()  # the learned weights go to the workers: a second sampling
        assert result["info"]["learner"]["default_policy"]["learner_stats"]["total_loss"] > 0
        assert _replayed_logp_gap(algo) < 1e-5
    finally:
        algo.stop()


@pytest.mark.parametrize("shared", [True, False])
def test_post_fcnet_layers_follow_the_lstm_one_stack_per_output(shared: bool) -> None:
    model = {
        **LSTM,
        "fcnet_hiddens": [12],
        "post_fcnet_hiddens": [10, 6],
        "post_fcnet_activation": "tanh",
        "vf_share_layers": shared,
    }
    config = dict(PPOConfig().update_from_dict({"model": model})["model"])
    net = ModelCatalog.get_model(gym.spaces.Box(-1, 1, (4,)), gym.spaces.Discrete(3), 3, config)
    assert isinstance(net, LSTMNetwork)
    trunk = [m.out_features for m in net.trunk.modules() if isinstance(m, nn.Linear)]
    assert trunk == [12] and net.lstm.input_size == 12
    for head in (net.policy_head, net.value_head):
        assert [m.out_features for m in head if isinstance(m, nn.Linear)] == [10, 6]
        assert any(isinstance(m, Tanh) for m in head)
    assert net.policy_head is not net.value_head
    # Without head_fcnet_hiddens each output is one linear layer.
    assert isinstance(net.logits, nn.Linear) and isinstance(net.value_branch, nn.Linear)
    assert (net.logits.in_features, net.value_branch.in_features) == (6, 6)
    state = [s[None] for s in net.get_initial_state()]
    obs = torch.zeros(1, 4)
    logits, _ = net({"obs_flat": obs, "obs": obs}, state, torch.tensor([1]))
    assert logits.shape == (1, 3) and net.value_function().shape == (1,)


def test_compute_single_action_takes_and_returns_the_state_as_the_reference() -> None:
    algo = _ppo(LSTM_PREV).build()
    try:
        policy = algo.get_policy()
        assert policy.is_recurrent()
        state = policy.get_initial_state()
        # vf_share_layers=False (PPO's default): the critic has an LSTM of its own
        assert [s.shape for s in state] == [(16,)] * 4
        env = RepeatAfterMeEnv({"repeat_delay": 1})
        obs, _ = env.reset(seed=0)
        prev_action, prev_reward = 0, 0.0
        states = []
        for _ in range(4):
            action, state, info = algo.compute_single_action(
                obs, state, prev_action=prev_action, prev_reward=prev_reward, explore=False
            )
            assert action in (0, 1) and {"action_logp", "vf_preds"} <= set(info)
            states.append(state[0])
            obs, prev_reward, *_ = env.step(action)
            prev_action = action
        assert [s.shape for s in state] == [(16,)] * 4
        assert not np.allclose(states[0], states[-1])
        # without a state: the action alone, from the initial state
        assert algo.compute_single_action(obs, explore=False) in (0, 1)
        # the policy's own call, with the state given or not
        act, out, _ = policy.compute_single_action(
            np.asarray([1.0, 0.0], np.float32), state, prev_action=1, prev_reward=1.0
        )
        assert act in (0, 1) and len(out) == 4
        with pytest.raises(ValueError, match=r"1 state arrays given.*has 4"):
            policy.compute_actions(np.zeros((2, 2), np.float32), state_batches=[np.zeros((2, 16))])
    finally:
        algo.stop()


def test_compute_actions_takes_states_keyed_or_batched_as_the_observations() -> None:
    algo = _ppo(LSTM_PREV).build()
    try:
        initial = algo.get_policy().get_initial_state()
        actions, states, extra = algo.compute_actions(
            {"a": 0, "b": 1}, {"a": initial, "b": initial}, prev_action={"a": 1, "b": 0}
        )
        assert set(actions) == set(states) == set(extra) == {"a", "b"}
        assert [s.shape for s in states["a"]] == [(16,)] * 4 and "action_logp" in extra["b"]
        single = algo.compute_single_action(1, initial, prev_action=0, explore=False)
        batch = [np.stack([s, s]) for s in initial]
        listed, batch_out, _ = algo.compute_actions(
            [1, 1], batch, prev_action=[0, 0], explore=False
        )
        assert listed == [single[0], single[0]]
        np.testing.assert_allclose(batch_out[0][1], single[1][0], atol=1e-6)
        assert algo.compute_actions([0, 1], explore=False) in ([0, 0], [0, 1], [1, 0], [1, 1])
    finally:
        algo.stop()


def test_a_policy_without_memory_refuses_a_state() -> None:
    algo = _ppo({}).build()
    try:
        assert not algo.get_policy().is_recurrent()
        assert algo.get_policy().get_initial_state() == []
        # Previous actions and rewards are inputs of every call (as in RLlib): ignored here.
        assert algo.compute_single_action(0, prev_action=1, prev_reward=1.0) in (0, 1)
        with pytest.raises(ValueError, match=r"compute_single_action\(state=.*no memory"):
            algo.compute_single_action(0, [np.zeros(4)])
        with pytest.raises(ValueError, match=r"compute_actions\(state=.*no memory"):
            algo.compute_actions([0], [np.zeros((1, 4))])
    finally:
        algo.stop()


def test_checkpoints_restore_the_memory_model(tmp_path: Path) -> None:
    algo = _ppo(LSTM).build()
    try:
        algo.train()
        path = algo.save(str(tmp_path))
        state = algo.get_policy().get_initial_state()
        expected = algo.compute_single_action(1, state, explore=False)
    finally:
        algo.stop()
    restored = _ppo(LSTM).build()
    try:
        restored.restore(path)
        action, state_out, _ = restored.compute_single_action(1, state, explore=False)
        assert action == expected[0]
        np.testing.assert_allclose(state_out[0], expected[1][0], atol=1e-6)
    finally:
        restored.stop()


def test_evaluation_carries_the_state_across_steps() -> None:
    config = _ppo(LSTM).evaluation(
        evaluation_interval=1, evaluation_duration=3, evaluation_config={"explore": False}
    )
    algo = config.build()
    try:
        result = algo.train()
        assert result["evaluation"]["episodes_this_iter"] == 3
    finally:
        algo.stop()


@pytest.mark.parametrize("algorithm", [A2CConfig, PGConfig])
def test_a2c_and_pg_train_on_sequences(algorithm: Any) -> None:
    training: dict[str, Any] = {"train_batch_size": 120, "model": {"fcnet_hiddens": [16], **LSTM}}
    if algorithm is A2CConfig:
        training["microbatch_size"] = 50
    algo = (
        algorithm()
        .environment(REPEAT)
        .rollouts(num_workers=0, num_envs_per_worker=3, rollout_fragment_length=40)
        .training(**training)
        .reporting(min_time_s_per_iteration=0)
        .debugging(seed=0)
        .build()
    )
    try:
        stats = algo.train()["info"]["learner"]["default_policy"]["learner_stats"]
        if algorithm is A2CConfig:
            # whole sequences of at least 50 valid rows each: 120 rows in 2 or 3 of them
            assert stats["num_microbatches"] in (2, 3)
        assert _replayed_logp_gap(algo) < 1e-5
    finally:
        algo.stop()


def test_fake_gpu_towers_split_sequence_batches_by_whole_sequences() -> None:
    tensors = {
        SB.SEQ_LENS: torch.tensor([3, 1, 2]),
        SB.OBS: torch.zeros(3, 3, 2),
        SB.state_in(0): torch.arange(3.0)[:, None],
        SB.ACTIONS: torch.arange(6),
    }
    shards = _shards(tensors, 2)
    assert [size for size, _ in shards] == [4, 2]
    first = {k: cut(k, v) for k, v in tensors.items() for _, cut in shards[:1]}
    assert first[SB.SEQ_LENS].tolist() == [3, 1] and first[SB.ACTIONS].tolist() == [0, 1, 2, 3]
    second = {k: shards[1][1](k, v) for k, v in tensors.items()}
    assert second[SB.state_in(0)].tolist() == [[2.0]] and second[SB.ACTIONS].tolist() == [4, 5]
    algo = _ppo(LSTM).resources(num_gpus=2, _fake_gpus=True).build()
    try:
        assert algo.train()["info"]["learner"]["default_policy"]["learner_stats"]["total_loss"]
    finally:
        algo.stop()


def test_multi_agent_policies_with_memory() -> None:
    env = make_multi_agent("CartPole-v1")
    config = (
        _ppo(LSTM_PREV, env=env)
        .environment(env, env_config={"num_agents": 2})
        .multi_agent(
            policies={"p0", "p1"},
            policy_mapping_fn=lambda agent_id, *args, **kwargs: f"p{agent_id}",
        )
        .evaluation(evaluation_interval=1, evaluation_duration=2)
    )
    algo = config.build()
    try:
        result = algo.train()
        assert result["evaluation"]["episodes_this_iter"] == 2
        assert _replayed_logp_gap(algo, "p0") < 1e-5
        assert _replayed_logp_gap(algo, "p1") < 1e-5
    finally:
        algo.stop()


class CountingMemory(TorchModel):
    """A custom model with a state: a running sum of the observations."""

    def __init__(self, obs_space: Any, action_space: Any, num_outputs: int, *args: Any) -> None:
        super().__init__(obs_space, action_space, num_outputs, *args)
        self.net = nn.Linear(2, num_outputs)
        self.value = nn.Linear(2, 1)
        self._out = torch.zeros(0)

    def get_initial_state(self) -> list[torch.Tensor]:
        return [torch.zeros(1)]

    def forward(
        self, input_dict: dict[str, torch.Tensor], state: list[torch.Tensor], seq_lens: Any
    ) -> tuple[torch.Tensor, list[torch.Tensor]]:
        obs = input_dict["obs_flat"][:, 1].reshape(len(seq_lens), -1, 1)  # the token shown
        sums = state[0][:, None, :] + torch.cumsum(obs, dim=1)
        features = torch.cat([obs, sums], dim=-1).reshape(-1, 2)
        self._out = features
        return self.net(features), [sums[:, -1]]

    def value_function(self) -> torch.Tensor:
        values: torch.Tensor = self.value(self._out)
        return values.squeeze(-1)


def test_a_custom_model_with_a_state_acts_and_trains_from_it() -> None:
    ModelCatalog.register_custom_model("counting_memory", CountingMemory)
    algo = _ppo({"custom_model": "counting_memory"}).build()
    try:
        assert algo.get_policy().is_recurrent()
        algo.train()
        assert _replayed_logp_gap(algo) < 1e-5
        _, state, _ = algo.compute_single_action(1, [np.array([2.0], np.float32)])
        assert state[0].tolist() == [3.0]
    finally:
        algo.stop()


@pytest.mark.parametrize(
    ("config", "key"),
    [
        (DQNConfig().environment("CartPole-v1").training(model={"use_lstm": True}), "use_lstm"),
        (
            SACConfig().environment("Pendulum-v1").training(model={"use_attention": True}),
            "use_attention",
        ),
    ],
)
def test_algorithms_that_replay_transitions_refuse_memory(config: Any, key: str) -> None:
    with pytest.raises(ConfigError, match=rf"model\.{key}.*sequence replay") as caught:
        config.build()
    assert "PPO, A2C, PG) or MARWIL / BC" in str(caught.value)


def test_impala_says_it_learns_from_v_trace_rows_not_from_replay() -> None:
    config = IMPALAConfig().environment("CartPole-v1").rollouts(num_workers=0)
    with pytest.raises(ConfigError, match=r"model\.use_lstm.*V-trace's time-major rows") as caught:
        config.training(model={"use_lstm": True}).build()
    assert "replay" not in str(caught.value)
    assert "MARWIL / BC" in str(caught.value)


def test_memory_with_a_custom_model_or_both_memories_is_refused() -> None:
    ModelCatalog.register_custom_model("counting_memory", CountingMemory)
    with pytest.raises(ConfigError, match=r"model\.use_lstm.*custom_model 'counting_memory'"):
        _ppo({"custom_model": "counting_memory", "use_lstm": True}).build()
    with pytest.raises(ConfigError, match=r"model\.use_attention.*one memory"):
        _ppo({"use_lstm": True, "use_attention": True}).build()


def test_an_image_observation_feeds_its_conv_features_into_the_lstm() -> None:
    class Frames(gym.Env[Any, Any]):
        observation_space = gym.spaces.Box(0, 255, (42, 42, 3), np.uint8)
        action_space = gym.spaces.Discrete(2)

        def __init__(self, config: Any = None) -> None:
            super().__init__()

        def reset(self, *, seed: int | None = None, options: Any = None) -> Any:
            super().reset(seed=seed)
            return self.observation_space.sample(), {}

        def step(self, action: Any) -> Any:
            return self.observation_space.sample(), 1.0, False, False, {}

    algo = _ppo(LSTM, env=Frames, train_batch_size=60, sgd_minibatch_size=30).build()
    try:
        algo.train()
        assert _replayed_logp_gap(algo) < 1e-4
    finally:
        algo.stop()
