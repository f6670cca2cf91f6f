"""Custom modules in RLlib's new API stack contract (``runtime.TorchRLModule``, given as
``rl_module(rl_module_spec=RLModuleSpec(...))``): each algorithm that takes one trains it (its
weights change), a module missing what its algorithm needs is refused naming the module, the
method, the keys it returned and those needed, the spec goes through JSON as the module's
import path, ``algo.get_module()`` and checkpoints hold the trained weights, a module with
memory trains with PPO and is refused where it can't, multi-agent setups take a spec per
policy, and remote rollout and learner workers build it too. The modules are in
``tests/rl_modules.py`` (remote workers import them)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar, cast

import numpy as np
import pytest
import torch

from rlconf import (
    AlgorithmConfig,
    APPOConfig,
    ConfigError,
    DDPGConfig,
    DefaultModelConfig,
    DQNConfig,
    IMPALAConfig,
    MultiRLModuleSpec,
    PolicySpec,
    PPOConfig,
    RLModuleSpec,
    SACConfig,
)
from rlconf.model_config import ModelConfigDict
from runtime import ActorCriticModule, Algorithm, make_multi_agent
from tests.multi_agent_envs import map_by_index
from tests.rl_modules import (
    FixedHeadModule,
    LSTMModule,
    MLPModule,
    PolicyOnlyModule,
    QNetModule,
    QOutputModule,
    RecurrentQModule,
    SACNetsModule,
    VfPredsModule,
)
from tests.test_learning import _k_of_n

MultiAgentCartPole = make_multi_agent("CartPole-v1")
C = TypeVar("C", bound=AlgorithmConfig)
Q = TypeVar("Q", DQNConfig, SACConfig, DDPGConfig)


def _spec(module_class: Any, **model_config: Any) -> RLModuleSpec:
    return RLModuleSpec(module_class=module_class, model_config=model_config or None)


def _on_policy(config: C, env: Any, tmp_path: Path) -> C:
    return (
        config.environment(env)
        .rollouts(num_workers=0, rollout_fragment_length=50)
        .training(train_batch_size=100)
        # IMPALA's and APPO's iterations: until a batch is learned on (not 10 s).
        .reporting(min_time_s_per_reporting=0, min_train_timesteps_per_reporting=100)
        .debugging(seed=1, logger_config={"logdir": str(tmp_path)})
    )


def _off_policy(config: Q, env: str, tmp_path: Path) -> Q:
    return (
        config.environment(env)
        .rollouts(num_workers=0, rollout_fragment_length=10)
        .training(train_batch_size=32, num_steps_sampled_before_learning_starts=32)
        .reporting(min_sample_timesteps_per_iteration=100)
        .debugging(seed=1, logger_config={"logdir": str(tmp_path)})
    )


CASES: dict[str, Callable[[Path], AlgorithmConfig]] = {
    "ppo": lambda tmp: (
        _on_policy(PPOConfig(), "CartPole-v1", tmp)
        .training(sgd_minibatch_size=50, num_sgd_iter=2)
        .rl_module(rl_module_spec=_spec(MLPModule, hidden_dim=16))
    ),
    "ppo-box-vf_preds": lambda tmp: (
        _on_policy(PPOConfig(), "Pendulum-v1", tmp)
        .training(sgd_minibatch_size=50, num_sgd_iter=2)
        .rl_module(rl_module_spec=_spec(VfPredsModule))
    ),
    "appo": lambda tmp: _on_policy(APPOConfig(), "CartPole-v1", tmp).rl_module(
        rl_module_spec=_spec(MLPModule)
    ),
    "impala": lambda tmp: _on_policy(IMPALAConfig(), "CartPole-v1", tmp).rl_module(
        rl_module_spec=_spec(MLPModule)
    ),
    "dqn": lambda tmp: _off_policy(DQNConfig(), "CartPole-v1", tmp).rl_module(
        rl_module_spec=_spec(QNetModule)
    ),
    "dqn-qf_preds": lambda tmp: _off_policy(DQNConfig(), "CartPole-v1", tmp).rl_module(
        rl_module_spec=_spec(QOutputModule)
    ),
    "sac": lambda tmp: _off_policy(SACConfig(), "Pendulum-v1", tmp).rl_module(
        rl_module_spec=_spec(SACNetsModule)
    ),
    "sac-discrete": lambda tmp: _off_policy(SACConfig(), "CartPole-v1", tmp).rl_module(
        rl_module_spec=_spec(SACNetsModule)
    ),
}


def _state(module: torch.nn.Module) -> dict[str, np.ndarray[Any, Any]]:
    return {k: v.detach().cpu().numpy().copy() for k, v in module.state_dict().items()}


@pytest.mark.parametrize("case", list(CASES))
def test_each_algorithm_trains_a_custom_module(case: str, tmp_path: Path) -> None:
    algo = CASES[case](tmp_path).build_algo()
    try:
        module = algo.get_module()
        expected = algo.config.rl_module_spec.module_class
        assert type(module) is expected and algo.get_module("default_policy") is module
        before = _state(module)
        for _ in range(2):
            algo.train()
        after = _state(algo.get_module())
        assert any(not np.allclose(before[k], after[k]) for k in before), "no weight changed"
        # The module is the policy's (its weights under "model."), with the learned weights
        # (IMPALA and APPO learn in a thread of their own meanwhile).
        assert algo.get_policy().model is algo.get_module()
        if case not in ("appo", "impala"):
            weights = algo.get_weights()["default_policy"]
            for key, value in after.items():
                np.testing.assert_array_equal(weights[f"model.{key}"], value)
    finally:
        algo.stop()


def test_a_missing_output_names_the_module_the_method_and_the_keys(tmp_path: Path) -> None:
    ppo = _on_policy(PPOConfig(), "CartPole-v1", tmp_path).training(sgd_minibatch_size=50)
    with pytest.raises(ConfigError) as caught:
        ppo.rl_module(rl_module_spec=_spec(PolicyOnlyModule)).build_algo()
    text = str(caught.value)
    assert "PolicyOnlyModule.forward_exploration() returned the keys ['action_dist_inputs']" in text
    assert "PPO needs ['action_dist_inputs', 'vf_preds (or a compute_values() method)']" in text
    dqn = _off_policy(DQNConfig(), "CartPole-v1", tmp_path)
    with pytest.raises(ConfigError, match=r"MLPModule.forward_exploration\(\) returned the keys "):
        dqn.rl_module(rl_module_spec=_spec(MLPModule)).build_algo()
    with pytest.raises(ConfigError, match=r"DQN needs \['qf_preds"):
        dqn.rl_module(rl_module_spec=_spec(MLPModule)).build_algo()
    sac = _off_policy(SACConfig(), "CartPole-v1", tmp_path)
    with pytest.raises(ConfigError, match=r"SAC needs \['action_dist_inputs'\]"):
        sac.rl_module(rl_module_spec=_spec(QNetModule)).build_algo()
    # Distribution inputs of the wrong size are named with the size the distribution takes.
    with pytest.raises(ConfigError, match=r"of shape \(2, 3\) for 2 rows; .* takes 2 inputs"):
        ppo.rl_module(rl_module_spec=_spec(FixedHeadModule, outputs=3)).build_algo()


def test_the_spec_goes_through_json_as_the_import_path() -> None:
    import gymnasium as gym

    space = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)
    config = PPOConfig().rl_module(
        rl_module_spec=RLModuleSpec(
            module_class=MLPModule,
            observation_space=space,
            model_config=DefaultModelConfig(fcnet_hiddens=[8]),
        )
    )
    text = config.to_json()
    saved = json.loads(text)["rl_module_spec"]
    assert saved["module_class"] == "tests.rl_modules:MLPModule"
    assert saved["model_config"]["fcnet_hiddens"] == [8]
    back = PPOConfig.from_json(text).rl_module_spec
    assert isinstance(back, RLModuleSpec)
    assert back.module_class == "tests.rl_modules:MLPModule"
    assert back.module_path == config.rl_module_spec.module_path
    assert back.resolved_module_class() is MLPModule
    assert (
        back.observation_space == space and back.model_config == config.rl_module_spec.model_config
    )
    # A file's plain dicts are specs too; a MultiRLModuleSpec keeps its ids.
    multi = PPOConfig.from_dict(
        {
            "rl_module_spec": {
                "rl_module_specs": {"p0": {"module_class": "tests.rl_modules.MLPModule"}}
            }
        }
    ).rl_module_spec
    assert isinstance(multi, MultiRLModuleSpec)
    assert multi.spec_for("p0") == RLModuleSpec(module_class="tests.rl_modules.MLPModule")
    assert json.loads(PPOConfig().rl_module(rl_module_spec=multi).to_json())["rl_module_spec"] == {
        "rl_module_specs": {"p0": {"module_class": "tests.rl_modules.MLPModule"}}
    }
    # RLlib's spec.build(): the module on the spec's spaces.
    built = RLModuleSpec(
        module_class="tests.rl_modules:MLPModule",
        observation_space=space,
        action_space=gym.spaces.Discrete(3),
        model_config={"hidden_dim": 5},
    ).build()
    assert isinstance(built, MLPModule) and built.pi.out_features == 3 and built.vf.in_features == 5
    with pytest.raises(ConfigError, match="is neither a class nor an import path"):
        RLModuleSpec(module_class="no_path")
    with pytest.raises(ConfigError, match="inference_only"):
        RLModuleSpec(module_class=MLPModule, inference_only=True)


def test_default_model_config_sets_the_model_dict_with_all_its_fields() -> None:
    config = PPOConfig().rl_module(model_config=DefaultModelConfig(fcnet_hiddens=[32]))
    assert config.model["fcnet_hiddens"] == [32]
    # All its fields, its defaults included (PPO's own default is vf_share_layers=False) ...
    assert config.model["vf_share_layers"] is True
    assert PPOConfig().model["vf_share_layers"] is False
    # ... as the dict of them does; the model keys it lacks keep their values.
    fields = cast("ModelConfigDict", DefaultModelConfig(fcnet_hiddens=[32]).to_dict())
    as_dict = PPOConfig().rl_module(model_config=fields)
    assert config.model == as_dict.model and config.model["dim"] == 84
    assert PPOConfig().training(model=DefaultModelConfig(use_lstm=True)).model["use_lstm"] is True


def test_get_module_and_checkpoints_hold_the_trained_weights(tmp_path: Path) -> None:
    algo = CASES["ppo"](tmp_path).build_algo()
    try:
        algo.train()
        trained = _state(algo.get_module())
        checkpoint = algo.save(str(tmp_path / "checkpoint"))
    finally:
        algo.stop()
    restored = Algorithm.from_checkpoint(checkpoint)
    try:
        module = restored.get_module("default_policy")
        assert isinstance(module, MLPModule)
        assert restored.config.rl_module_spec.module_class == "tests.rl_modules:MLPModule"
        for key, value in _state(module).items():
            np.testing.assert_array_equal(value, trained[key])
        with pytest.raises(KeyError, match="no policy 'p9'"):
            restored.get_module("p9")
    finally:
        restored.stop()


def test_a_module_with_memory_trains_with_ppo_and_is_refused_by_dqn_and_appo(
    tmp_path: Path,
) -> None:
    config = (
        _on_policy(PPOConfig(), "CartPole-v1", tmp_path)
        .training(sgd_minibatch_size=50, num_sgd_iter=2)
        .rl_module(rl_module_spec=_spec(LSTMModule, lstm_cell_size=8, max_seq_len=10))
    )
    algo = config.build_algo()
    try:
        policy = algo.get_policy()
        assert policy.is_recurrent() and [s.shape for s in policy.get_initial_state()] == [
            (8,),
            (8,),
        ]
        assert policy.module.model_config["max_seq_len"] == 10  # the spec's
        before = _state(algo.get_module())
        result = algo.train()
        assert result["info"]["learner"]["default_policy"]["learner_stats"]["vf_loss"] >= 0
        after = _state(algo.get_module())
        assert any(not np.allclose(before[k], after[k]) for k in before)
        # Acting carries the state: the module's state out of one step, for the next.
        initial = policy.get_initial_state()
        _, state, _ = algo.compute_single_action(np.ones(4, np.float32), state=initial)
        assert [np.shape(s) for s in state] == [(8,), (8,)]
        assert not np.allclose(state[0], initial[0])
    finally:
        algo.stop()
    dqn = _off_policy(DQNConfig(), "CartPole-v1", tmp_path)
    with pytest.raises(
        ConfigError, match=r"RecurrentQModule.get_initial_state\(\) returns a state"
    ):
        dqn.rl_module(rl_module_spec=_spec(RecurrentQModule)).build_algo()
    appo = _on_policy(APPOConfig(), "CartPole-v1", tmp_path)
    with pytest.raises(ConfigError, match="a memory APPO can't train"):
        appo.rl_module(rl_module_spec=_spec(LSTMModule)).build_algo()


def test_multi_agent_takes_a_spec_per_policy(tmp_path: Path) -> None:
    specs = {
        "p0": _spec(MLPModule, hidden_dim=8),
        "p1": _spec(VfPredsModule),
        # Without a module class: the algorithm's networks, its model_config the model dict.
        "p2": RLModuleSpec(model_config={"fcnet_hiddens": [4]}),
    }
    config = (
        _on_policy(PPOConfig(), MultiAgentCartPole, tmp_path)
        .environment(env_config={"num_agents": 3})
        .training(sgd_minibatch_size=50, num_sgd_iter=1)
        .multi_agent(
            policies={pid: PolicySpec() for pid in specs},
            policy_mapping_fn=map_by_index,
        )
        .rl_module(rl_module_spec=MultiRLModuleSpec(rl_module_specs=specs))
    )
    algo = config.build_algo()
    try:
        before = {pid: _state(algo.get_module(pid)) for pid in specs}
        algo.train()
        modules = {pid: algo.get_module(pid) for pid in specs}
        assert isinstance(modules["p0"], MLPModule) and modules["p0"].pi.in_features == 8
        assert isinstance(modules["p1"], VfPredsModule)
        assert isinstance(modules["p2"], ActorCriticModule)
        assert modules["p2"].model_config["fcnet_hiddens"] == [4]
        for pid, module in modules.items():
            after = _state(module)
            assert any(not np.allclose(before[pid][k], after[k]) for k in after), pid
    finally:
        algo.stop()
    wrong = config.rl_module(
        rl_module_spec=MultiRLModuleSpec(rl_module_specs={"p0": specs["p0"], "p9": specs["p1"]})
    )
    with pytest.raises(ConfigError, match=r"module ids \['p0', 'p9'\] and the policies are"):
        wrong.validate()


def test_settings_a_custom_module_leaves_without_effect_are_refused(tmp_path: Path) -> None:
    ppo = _on_policy(PPOConfig(), "CartPole-v1", tmp_path).training(sgd_minibatch_size=50)
    with pytest.raises(ConfigError, match=r"model\.fcnet_hiddens.*spec's model_config instead"):
        ppo.training(model={"fcnet_hiddens": [64]}).rl_module(
            rl_module_spec=_spec(MLPModule, hidden_dim=8)
        ).build_algo()
    dqn = _off_policy(DQNConfig(), "CartPole-v1", tmp_path)
    with pytest.raises(ConfigError, match="dueling"):
        dqn.training(dueling=False).rl_module(rl_module_spec=_spec(QNetModule)).build_algo()
    with pytest.raises(ConfigError, match="num_atoms"):
        dqn.training(num_atoms=5).rl_module(rl_module_spec=_spec(QNetModule)).build_algo()
    ddpg = _off_policy(DDPGConfig(), "Pendulum-v1", tmp_path)
    with pytest.raises(ConfigError, match="custom RL modules train with PPO, APPO, IMPALA"):
        ddpg.rl_module(rl_module_spec=_spec(SACNetsModule)).build_algo()
    with pytest.raises(ConfigError, match=r"rl_module_spec\.action_space.*differs from the policy"):
        ppo.rl_module(
            rl_module_spec=RLModuleSpec(module_class=MLPModule, action_space=_discrete(3))
        ).build_algo()
    with pytest.raises(ConfigError, match=r"is not a runtime\.TorchRLModule subclass"):
        ppo.rl_module(rl_module_spec=_spec(PolicySpec)).build_algo()


def _discrete(n: int) -> Any:
    import gymnasium as gym

    return gym.spaces.Discrete(n)


@pytest.mark.slow
def test_remote_rollout_and_learner_workers_build_and_train_the_module(tmp_path: Path) -> None:
    from tests.ray_session import local_ray

    config = (
        CASES["ppo"](tmp_path)
        .rollouts(num_workers=1)
        .resources(
            num_cpus_per_worker=0.5,
            num_learner_workers=2,
            num_cpus_per_learner_worker=0.25,
            num_cpus_for_driver=0.5,
        )
    )
    with local_ray():
        algo = config.build_algo()
        try:
            before = _state(algo.get_module())
            algo.train()
            after = _state(algo.get_module())
            assert any(not np.allclose(before[k], after[k]) for k in before)
            remote = algo.workers.foreach_worker(lambda w: w.get_weights()["default_policy"])
            for weights in remote:
                for key, value in after.items():
                    np.testing.assert_array_equal(weights[f"model.{key}"], value)
        finally:
            algo.stop()


@pytest.mark.slow
def test_ppo_with_a_custom_module_reaches_150_on_cartpole_within_40k_steps(
    tmp_path: Path,
) -> None:
    """19k-25k steps on seeds 0-4."""

    def config(seed: int) -> AlgorithmConfig:
        return (
            PPOConfig()
            .environment("CartPole-v1")
            .rollouts(num_workers=0, num_envs_per_worker=4, rollout_fragment_length=250)
            .training(train_batch_size=1000, sgd_minibatch_size=250, num_sgd_iter=10, lr=1e-3)
            .rl_module(rl_module_spec=_spec(MLPModule, hidden_dim=64))
            .debugging(seed=seed, logger_config={"logdir": str(tmp_path / str(seed))})
        )

    _k_of_n(config, 150, 40_000)
