"""No setting is accepted and silently ignored: every config key of every registered algorithm
(top-level, ``model`` and ``multiagent`` keys) is

(a) read by the runtime while it builds, trains, evaluates and saves on the embedded default,
    or shown to act by a check of its own here (settings of remote workers, multi-agent envs,
    images, files); or
(b) refused at build with the reason when set to anything but the value the runtime behaves as
    (``runtime.training.unsupported.REFUSED``); or
(c) one of the few keys no value of changes anything
    (``runtime.training.unsupported.NO_EFFECT``), which
    their descriptions say; or
(d) an off switch of the reference, accepted only "off" and named in a warning at build
    (``rlconf.inert_keys``).

A new key that is none of these fails ``test_every_key_is_read_refused_or_documented``.
"""

from __future__ import annotations

import ast
import inspect
import os
import typing
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal

import gymnasium as gym
import numpy as np
import pytest
import ray
import torch

import runtime
import runtime.algorithm
import runtime.cluster.ray_session
import runtime.env.worker_policies
import runtime.training.config_reset
from rlconf import (
    A2CConfig,
    AlgorithmConfig,
    ConfigError,
    DDPGConfig,
    PGConfig,
    PPOConfig,
    SACConfig,
)
from rlconf.inert_keys import INERT_MODEL_KEYS, InertKey
from rlconf.model_config import ModelConfigDict
from rlconf.registry import get_config_class, list_algorithms
from rlconf.section import pyname_of
from runtime import RolloutWorker
from runtime.algorithms.a2c import A2C
from runtime.algorithms.pg import PG
from runtime.callbacks import DefaultCallbacks
from runtime.core.model_catalog import ModelCatalog
from runtime.core.models import TorchModel
from runtime.core.multi_agent_batch import MultiAgentBatch
from runtime.core.sample_batch import SampleBatch
from runtime.core.sequences import sequence_bounds
from runtime.core.tanh import Tanh
from runtime.env.env_preparation import EnvPreparation
from runtime.env.env_registry import env_creator_for
from runtime.env.multi_agent_env import MultiAgentEnvCopies, MultiAgentEnvError
from runtime.env.preprocessors import get_preprocessor
from runtime.env.worker_set import WorkerSet
from runtime.offline.batch_files import encode_batch
from runtime.training.unsupported import NO_EFFECT, REFUSED, refuse_unsupported
from tests.fake_atari import FakeAtariEnv

TESTS = Path(__file__).resolve().parent


def every_key(config_class: type[AlgorithmConfig]) -> list[str]:
    """Top-level keys, ``multiagent.<key>`` and ``model.<key>`` (every key the model dict takes)."""
    nested = config_class._info().nested["multiagent"]
    keys = [
        f"multiagent.{key}" if config_class._info().section_of_key[key] is nested else key
        for key in config_class.field_names()
    ]
    return keys + [f"model.{key}" for key in typing.get_type_hints(ModelConfigDict)]


# ------------------------------------------------------------------ (a) what the runtime reads


class _Recording(dict[str, Any]):
    """A nested dict (``model``, ``multiagent``) that records the keys read from it."""

    def __init__(self, values: Any, prefix: str, reads: set[str]) -> None:
        super().__init__(values)
        self._prefix, self._reads = prefix, reads

    def __getitem__(self, key: str) -> Any:
        self._reads.add(self._prefix + key)
        return super().__getitem__(key)

    def get(self, key: str, default: Any = None) -> Any:
        self._reads.add(self._prefix + key)
        return super().get(key, default)


def _record_reads(monkeypatch: pytest.MonkeyPatch, reads: set[str]) -> None:
    """Record every key read from a config (and from the model dicts the models are given);
    reads by the build-time gate that refuses unsupported settings don't count."""
    gate = {"open": False}
    original_getitem = AlgorithmConfig.__getitem__

    def getitem(self: AlgorithmConfig, key: str) -> Any:
        value = original_getitem(self, key)
        if gate["open"]:
            return value
        # the runtime reads multiagent keys flat (config["policies"]) or nested
        nested = self._info().nested["multiagent"]
        in_multiagent = self._info().section_of_key.get(key) is nested
        reads.add(f"multiagent.{key}" if in_multiagent else key)
        return _Recording(value, "multiagent.", reads) if key == "multiagent" else value

    def refuse(*args: Any) -> None:
        gate["open"] = True
        try:
            refuse_unsupported(*args)
        finally:
            gate["open"] = False

    monkeypatch.setattr(AlgorithmConfig, "__getitem__", getitem)
    monkeypatch.setattr(runtime.training.config_reset, "refuse_unsupported", refuse)
    get_model, get_action_dist = ModelCatalog.get_model, ModelCatalog.get_action_dist

    def model(obs: Any, actions: Any, outputs: int, model_config: Any, name: str = "m") -> Any:
        return get_model(obs, actions, outputs, _Recording(model_config, "model.", reads), name)

    def action_dist(actions: Any, model_config: Any) -> Any:
        return get_action_dist(actions, _Recording(model_config, "model.", reads))

    def preprocessor(space: Any, model_config: Any) -> Any:
        return get_preprocessor(space, _Recording(model_config, "model.", reads))

    monkeypatch.setattr(ModelCatalog, "get_model", staticmethod(model))
    monkeypatch.setattr(ModelCatalog, "get_action_dist", staticmethod(action_dist))
    monkeypatch.setattr(runtime.env.worker_policies, "get_preprocessor", preprocessor)


def _tiny(config_class: type[AlgorithmConfig], tmp_path: Path) -> AlgorithmConfig:
    config = (
        config_class()
        .environment("CartPole-v1")
        .rollouts(num_workers=0, rollout_fragment_length=10)
        .training(train_batch_size=20, model={"fcnet_hiddens": [8]})
        .reporting(min_time_s_per_reporting=0)
        # every other iteration, so that one train() also reads always_attach_...
        .evaluation(evaluation_interval=2, evaluation_duration=1)
        .offline_data(output=str(tmp_path / "output"))
        .debugging(logger_config={"logdir": str(tmp_path / "results")})
    )
    if isinstance(config, PPOConfig):
        config.training(sgd_minibatch_size=10, num_sgd_iter=1)
    if isinstance(config, SACConfig):
        # SAC reports every 100 steps: learn from the first round on. Its networks take their
        # sizes from their own model configs (a model.fcnet_hiddens of its own is refused).
        config.training(
            num_steps_sampled_before_learning_starts=0,
            model={"fcnet_hiddens": [256, 256]},
            q_model_config={"fcnet_hiddens": [8]},
            policy_model_config={"fcnet_hiddens": [8]},
        )
    if isinstance(config, DDPGConfig):
        # Box actions only; the model builds the state preprocessor in front of the actor's
        # and critics' own layers (without it, model keys are refused).
        config.environment("Pendulum-v1")
        config.training(
            num_steps_sampled_before_learning_starts=0,
            use_state_preprocessor=True,
            actor_hiddens=[8],
            critic_hiddens=[8],
        )
    return config


#: Keys an algorithm's config refuses at any value but one, naming what to set instead (its
#: optimizers take their rates from other keys), and the message that says so.
REFUSED_BY_CONFIG: dict[str, dict[str, tuple[Any, str]]] = {
    "SAC": {"lr": (0.01, "optimization's actor_learning_rate")},
    "DDPG": {"lr": (0.01, "actor_lr and critic_lr")},
    "TD3": {"lr": (0.01, "actor_lr and critic_lr")},
}


@pytest.mark.parametrize("algorithm", sorted(REFUSED_BY_CONFIG))
def test_keys_refused_by_the_config_say_what_to_set_instead(algorithm: str) -> None:
    for key, (value, instead) in REFUSED_BY_CONFIG[algorithm].items():
        config = get_config_class(algorithm)().environment("Pendulum-v1")
        with pytest.raises(ConfigError, match=rf"(?s){key}.*{instead}"):
            config.update_from_dict({key: value}).build()


@pytest.fixture(scope="module")
def reads(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, set[str]]]:
    """The keys the runtime reads per algorithm: build, two train() (the second evaluates),
    evaluate(), save()."""
    found: dict[str, set[str]] = {}
    with pytest.MonkeyPatch.context() as monkeypatch:
        for name in list_algorithms():
            found[name] = set()
            _record_reads(monkeypatch, found[name])
            tmp_path = tmp_path_factory.mktemp(name)
            algo = _tiny(get_config_class(name), tmp_path).build()
            try:
                algo.train()
                algo.train()  # evaluates
                algo.evaluate()
                algo.save(str(tmp_path / "checkpoint"))
            finally:
                algo.stop()
            monkeypatch.undo()
    yield found


def test_the_recording_sees_reads_but_not_the_build_gate(reads: dict[str, set[str]]) -> None:
    for algorithm, keys in reads.items():
        refused = set(REFUSED_BY_CONFIG.get(algorithm, ()))
        expected = {"lr", "train_batch_size", "model.fcnet_hiddens", "log_sys_usage"} - refused
        assert expected <= keys, algorithm
        # read only by the gate that refuses them: the recording would be vacuous otherwise
        assert not {"sample_async", "render_env", "multiagent.replay_mode"} & keys


# ------------------------------------------------------------------ targeted checks


class _FakeActorClass:
    """``ray.remote(RolloutWorker)`` that builds the worker in this process; records the
    actor options it was started with."""

    started: typing.ClassVar[list[dict[str, Any]]] = []

    def __init__(self, cls: type[RolloutWorker]) -> None:
        self.cls = cls

    def options(self, **options: Any) -> _FakeActorClass:
        self.started.append(options)
        return self

    def remote(self, **kwargs: Any) -> _FakeActor:
        return _FakeActor(self.cls(**kwargs))


class _FakeActor:
    def __init__(self, worker: RolloutWorker) -> None:
        self.worker = worker

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.worker, name)
        return type("RemoteMethod", (), {"remote": staticmethod(method)})


@pytest.fixture
def in_process_actors(monkeypatch: pytest.MonkeyPatch) -> type[_FakeActorClass]:
    """Remote workers without Ray: actors are local objects, ``ray.get``/``put`` pass through."""
    _FakeActorClass.started = []
    monkeypatch.setattr(ray, "remote", _FakeActorClass)
    monkeypatch.setattr(ray, "get", lambda refs: refs)
    monkeypatch.setattr(ray, "put", lambda value: value)
    monkeypatch.setattr(ray, "kill", lambda *args, **kwargs: None)
    monkeypatch.setattr(runtime.cluster.ray_session, "ensure_ray", lambda *args, **kwargs: None)
    return _FakeActorClass


def _worker_set(config: AlgorithmConfig, num_workers: int) -> WorkerSet:
    config.environment("CartPole-v1").rollouts(num_workers=num_workers, rollout_fragment_length=10)
    config.training(model={"fcnet_hiddens": [8]}).freeze()
    return WorkerSet(
        env_creator=env_creator_for("CartPole-v1"),
        config=config,
        policy_class=PG.policy_class,
        num_workers=num_workers,
    )


def check_remote_worker_options(actors: type[_FakeActorClass]) -> None:
    config = PGConfig().resources(
        num_cpus_per_worker=0.5, num_gpus_per_worker=0, custom_resources_per_worker={"sim": 2.0}
    )
    config.python_environment(extra_python_environs_for_worker={"RLCONF_WORKER_VAR": "on"})
    _worker_set(config, 1).stop()
    (options,) = actors.started
    assert (options["num_cpus"], options["num_gpus"], options["resources"]) == (
        0.5,
        0.0,
        {"sim": 2.0},
    )
    assert options["runtime_env"] == {"env_vars": {"RLCONF_WORKER_VAR": "on"}}


def check_create_env_on_driver(actors: type[_FakeActorClass]) -> None:
    without = _worker_set(PGConfig(), 1)
    with_env = _worker_set(PGConfig().rollouts(create_env_on_driver=True), 1)
    assert not without.local_worker().envs and len(with_env.local_worker().envs) == 1
    without.stop()
    with_env.stop()


def check_synchronize_filters(actors: type[_FakeActorClass]) -> None:
    counts = {}
    for synchronize in (True, False):
        config = PGConfig().rollouts(
            observation_filter="MeanStdFilter", synchronize_filters=synchronize
        )
        workers = _worker_set(config, 2)
        remote = [actor.worker for actor in workers.remote_workers()]
        remote[0].sample()
        remote[1].sample()
        remote[1].sample()
        workers.sync_filters()
        seen = [w.filters["default_policy"].stats.n for w in (workers.local_worker(), *remote)]
        counts[synchronize] = seen
        workers.stop()
    # the driver always merges what the workers saw; only with synchronize_filters do the
    # workers get the merged statistics back
    merged, first, second = counts[True]
    assert merged == first == second > 0
    merged, first, second = counts[False]
    assert merged == first + second and 0 < first < second


def check_image_model_settings() -> None:
    model = PPOConfig().training(
        model={
            "conv_filters": [[4, [3, 3], 2]],
            "conv_activation": "elu",
            "post_fcnet_hiddens": [8],
            "post_fcnet_activation": "tanh",
        }
    )["model"]
    space = gym.spaces.Box(0.0, 1.0, (9, 9, 3), np.float32)
    net = ModelCatalog.get_model(space, gym.spaces.Discrete(2), 2, dict(model))
    kinds = {type(m) for m in net.modules()}
    assert {torch.nn.Conv2d, torch.nn.ELU, Tanh} <= kinds
    assert torch.nn.ReLU not in kinds


def check_memory_model_settings() -> None:
    # the LSTM's and the attention net's keys shape the network built (tests/test_model_keys.py
    # and tests/test_memory_models.py train them); max_seq_len cuts the sequences trained on
    obs, actions = gym.spaces.Box(-1.0, 1.0, (3,), np.float32), gym.spaces.Discrete(2)
    lstm = PPOConfig().training(
        model={
            "use_lstm": True,
            "lstm_cell_size": 7,
            "lstm_use_prev_action": True,
            "lstm_use_prev_reward": True,
            "fcnet_hiddens": [5],
        }
    )["model"]
    net: Any = ModelCatalog.get_model(obs, actions, 2, dict(lstm))
    assert net.lstm.hidden_size == 7 and net.lstm.input_size == 5 + 2 + 1
    attention = PPOConfig().training(
        model={
            "use_attention": True,
            "attention_num_transformer_units": 2,
            "attention_dim": 8,
            "attention_num_heads": 2,
            "attention_head_dim": 4,
            "attention_memory_inference": 3,
            "attention_memory_training": 5,
            "attention_position_wise_mlp_dim": 6,
            "attention_init_gru_gate_bias": 1.5,
            "attention_use_n_prev_actions": 2,
            "attention_use_n_prev_rewards": 1,
        }
    )["model"]
    net = ModelCatalog.get_model(obs, actions, 2, dict(attention))
    assert len(net.units) == 2 and net.dim == 8
    assert (net.memory_inference, net.memory_training) == (3, 5)
    assert (net.n_prev_actions, net.n_prev_rewards) == (2, 1)
    state = net.get_initial_state()
    assert [tuple(s.shape) for s in state][:2] == [(5, 8), (5, 8)]
    assert sum(p.numel() for p in net.parameters()) > 0
    columns = {"eps_id": np.zeros(10, np.int64)}
    assert sequence_bounds(columns, 4)[1].tolist() == [4, 4, 2]


def check_atari_image_settings() -> None:
    # dim and framestack act in the DeepMind wrappers; dim, grayscale and zero_mean in the
    # pixel preprocessor of raw 210x160x3 frames (tests/test_atari.py has the details)
    pytest.importorskip("cv2", reason="needs opencv, which resizes the frames (rlconf[atari])")

    def frames(preprocessor_pref: Literal["deepmind", "rllib"], **model: Any) -> Any:
        config = PPOConfig().environment(clip_rewards=True)
        config.training(model=typing.cast(ModelConfigDict, model))
        config.rollouts(preprocessor_pref=preprocessor_pref)
        env = EnvPreparation.of(config, "check").apply(FakeAtariEnv())
        return env.reset(seed=0)[0]

    assert frames("deepmind").shape == (84, 84, 4)
    assert frames("deepmind", dim=42, framestack=False).shape == (42, 42, 1)
    assert frames("rllib").shape == (84, 84, 3) and frames("rllib").min() == -1.0
    gray = frames("rllib", dim=42, grayscale=True, zero_mean=False)
    assert gray.shape == (42, 42, 1) and gray.min() == 0.0


class _SizedModel(TorchModel):
    def __init__(self, *args: Any, width: int = 1) -> None:
        super().__init__(*args)
        self.width = width


def check_custom_model_config() -> None:
    ModelCatalog.register_custom_model("every_setting_model", _SizedModel)
    model = PGConfig().training(
        model={"custom_model": "every_setting_model", "custom_model_config": {"width": 3}}
    )["model"]
    net = ModelCatalog.get_model(gym.spaces.Box(-1, 1, (2,)), gym.spaces.Discrete(2), 2, model)
    assert isinstance(net, _SizedModel) and net.width == 3


class _LearnedBatches(DefaultCallbacks):
    batches: typing.ClassVar[list[SampleBatch]] = []

    def on_learn_on_batch(self, *, train_batch: Any, **kwargs: Any) -> None:
        self.batches.append(train_batch)


def check_actions_in_input_normalized(tmp_path: Path) -> None:
    # Pendulum's torque is in [-2, 2]: 1.0 in the env is 0.5 in the policy's [-1, 1] space.
    rows = 10
    batch = SampleBatch(
        {
            "obs": np.zeros((rows, 3), np.float32),
            "actions": np.full((rows, 1), 1.0, np.float32),
            "advantages": np.ones(rows, np.float32),
            "value_targets": np.ones(rows, np.float32),
            "action_logp": np.zeros(rows, np.float32),
            "eps_id": np.zeros(rows, np.int64),
        }
    )
    (tmp_path / "in.json").write_text(encode_batch(batch, compress=["obs"]) + "\n")
    seen = {}
    for normalized in (False, True):
        _LearnedBatches.batches = []
        algo = (
            PGConfig()
            .environment("Pendulum-v1")
            .rollouts(num_workers=0, rollout_fragment_length=rows)
            .training(train_batch_size=rows, model={"fcnet_hiddens": [4]})
            .offline_data(input_=str(tmp_path / "in.json"), actions_in_input_normalized=normalized)
            .callbacks(_LearnedBatches)
            .build()
        )
        try:
            algo.train()
        finally:
            algo.stop()
        seen[normalized] = float(_LearnedBatches.batches[0]["actions"][0, 0])
    assert seen == {False: 0.5, True: 1.0}


class _OffSpaceCartPoles(MultiAgentEnvCopies):
    """Two CartPoles whose reset reports agent 0's cart far outside the observation space."""

    env_source = "CartPole-v1"

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[Any, Any], dict[Any, Any]]:
        obs, infos = super().reset(seed=seed, options=options)
        obs[0] = np.array([10.0, 0.0, 0.0, 0.0], np.float32)  # the cart's bound is 4.8
        return obs, infos


def _agent_policy(agent_id: Any, *args: Any, **kwargs: Any) -> str:
    return f"p{agent_id}"


def _zero_observations(*, agent_obs: dict[Any, Any], **kwargs: Any) -> dict[Any, Any]:
    return {agent: np.zeros_like(ob) for agent, ob in agent_obs.items()}


def _multi_agent_sample(
    config: AlgorithmConfig, env: Any = None, policies: int = 2
) -> MultiAgentBatch:
    """One fragment (10 env steps) of the local worker on 2-agent CartPole, agent i acting with
    policy ``p<i>`` (``p0`` for all agents when ``policies == 1``)."""
    ids = {f"p{i}" for i in range(policies)}
    algo = (
        config.environment(
            env or runtime.make_multi_agent("CartPole-v1"), env_config={"num_agents": 2}
        )
        .rollouts(num_workers=0, rollout_fragment_length=10)
        .training(model={"fcnet_hiddens": [8]})
        .multi_agent(policies=ids, policy_mapping_fn=_agent_policy if policies > 1 else _policy_p0)
        .debugging(seed=0)
        .build()
    )
    try:
        batch = algo.workers.local_worker().sample()
    finally:
        algo.stop()
    assert isinstance(batch, MultiAgentBatch)
    return batch


def _policy_p0(*args: Any, **kwargs: Any) -> str:
    return "p0"


def check_observation_fn() -> None:
    plain = _multi_agent_sample(PGConfig())
    zeroed = _multi_agent_sample(PGConfig().multi_agent(observation_fn=_zero_observations))
    for policy_id in ("p0", "p1"):
        assert np.abs(plain[policy_id]["obs"]).sum() > 0
        assert len(zeroed[policy_id]) > 0 and not zeroed[policy_id]["obs"].any()


def check_disable_env_checking() -> None:
    with pytest.raises(MultiAgentEnvError, match=r"reset\(\) returned obs\[0\].*outside"):
        _multi_agent_sample(PGConfig(), _OffSpaceCartPoles)
    batch = _multi_agent_sample(
        PGConfig().environment(disable_env_checking=True), _OffSpaceCartPoles
    )
    assert 10.0 in batch["p0"]["obs"][:, 0]


def check_count_steps_by() -> None:
    # a fragment of 10: 10 env steps (20 agent steps) or 10 agent steps (5 env steps)
    by_env = _multi_agent_sample(PGConfig(), policies=1)
    by_agent = _multi_agent_sample(PGConfig().multi_agent(count_steps_by="agent_steps"), policies=1)
    assert (by_env.env_steps(), by_env.agent_steps()) == (10, 20)
    assert (by_agent.env_steps(), by_agent.agent_steps()) == (5, 10)


def check_policy_map_capacity_and_cache(tmp_path: Path) -> None:
    cache = tmp_path / "policy_cache"
    config = PGConfig().multi_agent(policy_map_capacity=1, policy_map_cache=str(cache))
    batch = _multi_agent_sample(config)
    assert set(batch.policy_batches) == {"p0", "p1"}  # both act, one at a time in memory
    algo = (
        PGConfig()
        .environment(runtime.make_multi_agent("CartPole-v1"), env_config={"num_agents": 2})
        .rollouts(num_workers=0)
        .multi_agent(
            policies={"p0", "p1"},
            policy_mapping_fn=_agent_policy,
            policy_map_capacity=1,
            policy_map_cache=str(cache),
        )
        .build()
    )
    try:
        policy_map = algo.workers.local_worker().policy_map
        assert len(policy_map.in_memory()) == 1 and len(policy_map) == 2
        evicted = next(pid for pid in policy_map if policy_map.is_cached(pid))
        assert any(cache.rglob("*"))  # the evicted policy is stored in the cache folder
        policy_map[evicted]  # reloaded from it
        assert policy_map.in_memory() == [evicted]
    finally:
        algo.stop()


def _existing_test(node_id: str, key: str) -> Callable[[], None]:
    """A check that a test needing a Ray cluster exists and sets ``key``."""

    path, name = node_id.split("::")

    def check() -> None:
        tree = ast.parse((TESTS.parent / path).read_text())
        (test,) = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == name]
        assert key in ast.unparse(test), f"{node_id} does not set {key}"

    check.__name__ = f"check_{name}_exists"
    return check


#: key -> the check that shows it acts, for keys the embedded-default run above can't reach
TARGETED: dict[str, Callable[..., None]] = {
    "create_env_on_driver": check_create_env_on_driver,
    "num_cpus_per_worker": check_remote_worker_options,
    "num_gpus_per_worker": check_remote_worker_options,
    "custom_resources_per_worker": check_remote_worker_options,
    "extra_python_environs_for_worker": check_remote_worker_options,
    "synchronize_filters": check_synchronize_filters,
    "ignore_worker_failures": _existing_test(
        "tests/test_remote_workers.py::test_ignore_worker_failures_continues_on_the_healthy_workers",
        "ignore_worker_failures",
    ),
    "recreate_failed_workers": _existing_test(
        "tests/test_remote_workers.py::test_recreate_failed_workers_replaces_and_syncs_them",
        "recreate_failed_workers",
    ),
    "restart_failed_sub_environments": _existing_test(
        "tests/test_sub_env_restarts.py::"
        "test_a_sub_env_that_raises_in_step_is_made_again_and_its_episode_dropped",
        "restart_failed_sub_environments",
    ),
    "placement_timeout_s": _existing_test(
        "tests/test_parallel_evaluation.py::"
        "test_a_request_waiting_on_held_resources_times_out_saying_what_it_waits_for",
        "placement_timeout_s",
    ),
    "model.conv_filters": check_image_model_settings,
    "model.conv_activation": check_image_model_settings,
    "model.post_fcnet_activation": check_image_model_settings,
    "model.custom_model_config": check_custom_model_config,
    **{
        f"model.{key}": check_memory_model_settings
        for key in (
            "max_seq_len",
            "lstm_cell_size",
            "lstm_use_prev_action",
            "lstm_use_prev_reward",
            "attention_num_transformer_units",
            "attention_dim",
            "attention_num_heads",
            "attention_head_dim",
            "attention_memory_inference",
            "attention_memory_training",
            "attention_position_wise_mlp_dim",
            "attention_init_gru_gate_bias",
            "attention_use_n_prev_actions",
            "attention_use_n_prev_rewards",
        )
    },
    "model.dim": check_atari_image_settings,
    "model.grayscale": check_atari_image_settings,
    "model.zero_mean": check_atari_image_settings,
    "model.framestack": check_atari_image_settings,
    "actions_in_input_normalized": check_actions_in_input_normalized,
    "multiagent.observation_fn": check_observation_fn,
    "disable_env_checking": check_disable_env_checking,
    "multiagent.count_steps_by": check_count_steps_by,
    "multiagent.policy_map_capacity": check_policy_map_capacity_and_cache,
    "multiagent.policy_map_cache": check_policy_map_capacity_and_cache,
}


_CHECKS = {getattr(check, "__name__", ""): check for check in TARGETED.values()}


@pytest.mark.parametrize("name", sorted(_CHECKS))
def test_targeted_check(name: str, request: pytest.FixtureRequest) -> None:
    check = _CHECKS[name]
    fixtures = {"actors": "in_process_actors", "tmp_path": "tmp_path"}
    check(*[request.getfixturevalue(fixtures[p]) for p in inspect.signature(check).parameters])


# ------------------------------------------------------------------ the walk


def _inert_field(config_class: type[AlgorithmConfig], key: str) -> bool:
    """A field that validation holds to the values that ask for nothing (an ``InertKey`` in
    its annotation, as DQN's Rainbow switches): any other value is refused as it is given."""
    section = config_class._info().section_of_key.get(key)
    if section is None:
        return False
    hint = section.hints.get(pyname_of(key))
    return any(isinstance(meta, InertKey) for meta in getattr(hint, "__metadata__", ()))


@pytest.mark.parametrize("algorithm", list_algorithms())
def test_every_key_is_read_refused_or_documented(
    algorithm: str, reads: dict[str, set[str]]
) -> None:
    config_class = get_config_class(algorithm)
    unaccounted = [
        key
        for key in every_key(config_class)
        if key not in reads[algorithm]
        and key not in REFUSED
        and key not in NO_EFFECT
        and key not in TARGETED
        and key not in REFUSED_BY_CONFIG.get(algorithm, {})
        and key.removeprefix("model.") not in INERT_MODEL_KEYS
        and not _inert_field(config_class, key)
    ]
    assert not unaccounted, (
        f"{algorithm}: these settings are neither read by the runtime nor refused at build "
        f"nor documented as having no effect: {unaccounted}. Wire them, add them to "
        "runtime.training.unsupported.REFUSED, or (only if no value can matter) NO_EFFECT."
    )


def test_no_effect_keys_are_never_read_and_say_so(reads: dict[str, set[str]]) -> None:
    for key in NO_EFFECT:
        assert all(key not in keys for keys in reads.values()), key
        section = AlgorithmConfig._info().section_of_key[key]
        assert "No effect" in section.description(key), key


def _description(config_class: type[AlgorithmConfig], key: str) -> str:
    head, _, rest = key.partition(".")
    if head == "multiagent":  # the field's own description (MultiAgentArgs)
        return config_class._info().section_of_key[rest].description(rest)
    if head == "model":
        hint = typing.get_type_hints(ModelConfigDict, include_extras=True)[rest]
        return " ".join(str(getattr(meta, "description", "")) for meta in hint.__metadata__)
    return config_class._info().section_of_key[key].description(key)


def test_refused_keys_say_so_in_their_description() -> None:
    for algorithm, key in _refused_keys():
        description = _description(get_config_class(algorithm), key)
        assert "refused at build" in description or "refuses" in description, key


def _refused_keys() -> list[tuple[str, str]]:
    """(algorithm, key) for each refused key, on the first algorithm that has it."""
    found = []
    for key in REFUSED:
        for algorithm in list_algorithms():
            if key in every_key(get_config_class(algorithm)):
                found.append((algorithm, key))
                break
    return found


#: A value other than the one the runtime behaves as, where flipping or adding 1 won't do.
OTHER_VALUE: dict[str, Any] = {
    "remote_env_batch_wait_ms": 5.0,
    "_lr_vf": 0.001,
    "multiagent.replay_mode": "lockstep",
}


def test_every_refused_key_exists_and_has_a_reason() -> None:
    assert {key for _, key in _refused_keys()} == set(REFUSED)
    assert set(OTHER_VALUE) <= set(REFUSED), "OTHER_VALUE holds keys that are not refused"
    assert all(why for _, why in REFUSED.values())


@pytest.mark.parametrize(("algorithm", "key"), _refused_keys())
def test_refused_settings_fail_the_build_naming_key_and_reason(algorithm: str, key: str) -> None:
    ok, why = REFUSED[key]
    if key in OTHER_VALUE:
        other = OTHER_VALUE[key]
    elif isinstance(ok, bool):
        other = not ok
    else:
        assert isinstance(ok, int), f"give {key} an entry in OTHER_VALUE"
        other = ok + 1
    head, _, rest = key.partition(".")
    config = get_config_class(algorithm)().environment("CartPole-v1")
    config.update_from_dict({head: {rest: other}} if rest else {key: other})
    with pytest.raises(ConfigError) as caught:
        config.build()
    (issue,) = caught.value.issues
    assert issue.field == key and why in issue.problem


# ------------------------------------------------------------------ newly wired settings


def _worker(config: AlgorithmConfig, policy_class: Any = PG.policy_class) -> RolloutWorker:
    config.environment("CartPole-v1").rollouts(num_workers=0).debugging(seed=0)
    return RolloutWorker(
        env_creator=env_creator_for("CartPole-v1"),
        config=config.training(model={"fcnet_hiddens": [8]}).freeze(),
        policy_class=policy_class,
    )


def test_microbatches_accumulate_the_gradient_of_the_whole_batch() -> None:
    whole = _worker(A2CConfig(), A2C.policy_class)
    micro = _worker(A2CConfig().training(microbatch_size=7), A2C.policy_class)
    micro.set_weights(whole.get_weights())
    micro.set_weights(whole.get_weights())
    batch = whole.sample()  # 20 rows: microbatches of 7, 7 and 6
    stats = micro.learn_on_batch(batch)["default_policy"]
    whole.learn_on_batch(batch)
    assert stats["learner_stats"]["num_microbatches"] == 3
    assert stats["num_grad_updates"] == 1  # one optimizer step per train batch
    for a, b in zip(
        whole.get_policy().model.parameters(), micro.get_policy().model.parameters(), strict=True
    ):
        assert a.grad is not None and b.grad is not None
        torch.testing.assert_close(a.grad, b.grad, rtol=1e-5, atol=1e-6)


def test_fake_sampler_returns_the_first_batch_again() -> None:
    worker = _worker(PGConfig().debugging(fake_sampler=True))
    first = worker.sample()
    assert worker.sample() is first and worker.sample() is first
    real = _worker(PGConfig())
    assert real.sample() is not real.sample()


def test_driver_environment_variables_are_set_at_build(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RLCONF_DRIVER_VAR", "before")  # restored after the test
    config = PGConfig().environment("CartPole-v1").rollouts(num_workers=0)
    algo = config.python_environment(
        extra_python_environs_for_driver={"RLCONF_DRIVER_VAR": "on"}
    ).build()
    algo.stop()
    assert os.environ["RLCONF_DRIVER_VAR"] == "on"
