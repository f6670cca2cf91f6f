"""RLlib 2.x's tuned files for real workloads, as the Ray project wrote them
(tests/data/rllib_tuned/, see SOURCE.md there): PPO and DQN on Atari, SAC on HalfCheetah.
Each loads with ``rlconf train -f FILE --framework torch`` and trains to a short stop through
the command line. The SAC file's ``HalfCheetah-v3`` (a mujoco-py id, which gymnasium 1.x can
no longer make) runs as ``HalfCheetah-v5`` with a note. The PPO file as written asks for a GPU
and 11 CPUs; on a machine without them it is refused naming the values that fit.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import warnings
from pathlib import Path

import pytest
import torch

import rlconf.mujoco_ids
from rlconf import ConfigError, PPOConfig, SACConfig
from rlconf.cli import main
from rlconf.env_ids import env_issue
from rlconf.experiment import Experiment, Overrides, load_experiments
from rlconf.mujoco_ids import current_mujoco_id
from runtime.cluster import placement
from runtime.cluster.fitting_values import fitting_values
from runtime.cluster.resources import resource_plan
from runtime.env.atari import ensure_env_id
from runtime.env.env_context import EnvContext
from runtime.env.env_registry import GymEnvCreator, env_creator_for
from runtime.sweeps.trial_resources import refuse_unplaceable_trials, sweep_trial_plans

DATA = Path(__file__).parent / "data" / "rllib_tuned"
PPO_FILE = "ppo/atari-ppo.yaml"
SAC_FILE = "sac/halfcheetah-sac.yaml"
DQN_FILE = "dqn/atari-dqn.yaml"

needs_ale = pytest.mark.skipif(
    importlib.util.find_spec("ale_py") is None or importlib.util.find_spec("cv2") is None,
    reason="needs ale-py, which brings the Atari ROMs, and opencv: pip install 'rlconf[atari]'",
)
needs_mujoco = pytest.mark.skipif(
    importlib.util.find_spec("mujoco") is None,
    reason="needs mujoco, which simulates HalfCheetah: pip install 'rlconf[mujoco]'",
)
NEEDS = {PPO_FILE: needs_ale, SAC_FILE: needs_mujoco, DQN_FILE: needs_ale}

#: What each file's config gives as written (the keys the issue names among them).
AS_WRITTEN: dict[str, dict[str, object]] = {
    PPO_FILE: {"num_workers": 10, "num_envs_per_worker": 5, "num_gpus": 1.0},
    SAC_FILE: {
        "horizon": 1000,
        "soft_horizon": False,
        "no_done_at_end": True,
        "metrics_num_episodes_for_smoothing": 5,  # given as metrics_smoothing_episodes
        "env": "HalfCheetah-v3",
    },
    DQN_FILE: {"hiddens": [512], "adam_epsilon": 0.00015, "num_atoms": 1, "noisy": False},
}

#: Each file trained to a short stop through the command line: the env of its grid it runs on
#: (``--env``; the whole grid is four such runs), what is lowered to fit this machine and a
#: short run, and the stop.
TRAINED: dict[str, tuple[str | None, dict[str, object], dict[str, int]]] = {
    # 10 workers x 5 envs and a GPU, lowered to this machine (as written it is refused:
    # test_the_ppo_file_as_written_is_refused_naming_what_fits); an iteration of 5000 steps
    # and 10 epochs of 500-frame minibatches cut to one 500-step fragment of the local
    # worker's 5 envs and 2 epochs of 250.
    PPO_FILE: (
        "ALE/Breakout-v5",
        {
            "num_gpus": 0,
            "num_workers": 0,
            "train_batch_size": 500,
            "sgd_minibatch_size": 250,
            "num_sgd_iter": 2,
        },
        {"training_iteration": 1},
    ),
    # As written, but for its warm-up: replay starts after 10000 steps (10 iterations); here
    # after 256, so that the 1000 steps of one iteration train the [256, 256] networks.
    SAC_FILE: (
        None,
        {
            "replay_buffer_config": {"min_size_for_sampling": 256},
            "num_steps_sampled_before_learning_starts": 256,
        },
        {"training_iteration": 1},
    ),
    # Its 1M-transition buffer as written; num_gpus=0.2 lowered to this machine; an iteration
    # of 10000 steps and a warm-up of 20000 cut to 200 and 64.
    DQN_FILE: (
        "BreakoutNoFrameskip-v4",
        {
            "num_gpus": 0,
            "min_sample_timesteps_per_iteration": 200,
            "replay_buffer_config": {"min_size_for_sampling": 64},
            "num_steps_sampled_before_learning_starts": 64,
        },
        {"training_iteration": 1},
    ),
}


def _load(name: str) -> list[Experiment]:
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*out of date", category=DeprecationWarning)
        warnings.filterwarnings("ignore", message=".*metrics_smoothing_episodes")
        return load_experiments(DATA / name, Overrides(framework="torch"))


def test_the_files_and_their_sources_are_here() -> None:
    source = (DATA / "SOURCE.md").read_text()
    for name in AS_WRITTEN:
        assert (DATA / name).is_file()
        (row,) = [line for line in source.splitlines() if line.startswith(f"| {name} |")]
        assert f"rllib/tuned_examples/{name}" in row and len(row.split("|")[3].strip()) == 40


@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=NEEDS[n]) for n in AS_WRITTEN], ids=list(AS_WRITTEN)
)
def test_loads_unchanged_with_framework_torch(name: str) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        (experiment,) = load_experiments(DATA / name, Overrides(framework="torch"))
    config = experiment.config.to_dict()
    assert config["framework"] == "torch"
    assert {key: config[key] for key in AS_WRITTEN[name]} == AS_WRITTEN[name]
    deprecated = [str(w.message) for w in caught if "config key" in str(w.message)]
    if name == SAC_FILE:  # RLlib 2.x's deprecated name: it acts, with a note naming the key
        assert deprecated == [
            "config key 'metrics_smoothing_episodes' is deprecated: use "
            "'metrics_num_episodes_for_smoothing' (it sets that)"
        ]
    else:
        assert deprecated == []


# ------------------------------------------------------------------ MuJoCo ids


def test_mujoco_py_ids_are_made_as_their_v5() -> None:
    assert current_mujoco_id("HalfCheetah-v3") == "HalfCheetah-v5"
    assert current_mujoco_id("Hopper-v2") == "Hopper-v5"
    assert current_mujoco_id("InvertedPendulum-v2") == "InvertedPendulum-v5"
    # gymnasium 1.x makes the v4 ids itself; other envs' v2/v3 ids are no MuJoCo ids
    for other in ("HalfCheetah-v4", "HalfCheetah-v5", "CartPole-v1", "Pendulum-v1", "Foo-v3"):
        assert current_mujoco_id(other) is None
    creator = env_creator_for("HalfCheetah-v3")
    assert isinstance(creator, GymEnvCreator) and creator.env_id == "HalfCheetah-v5"
    assert env_issue("HalfCheetah-v3") is None or importlib.util.find_spec("mujoco") is None


def test_the_v5_id_is_noted_once_where_the_algorithm_is_built(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="runtime.env.atari"):
        ensure_env_id("HalfCheetah-v3")
        ensure_env_id("HalfCheetah-v5")  # what the workers' creators make: no note
        ensure_env_id("CartPole-v1")
    (note,) = caplog.messages
    assert "'HalfCheetah-v3'" in note and "'HalfCheetah-v5'" in note and "mujoco-py" in note


@needs_mujoco
def test_the_v3_id_makes_halfcheetah_v5() -> None:
    env = env_creator_for("HalfCheetah-v3")(EnvContext({}, worker_index=0))
    try:
        assert env.spec.id == "HalfCheetah-v5"
        assert env.observation_space.shape == (17,) and env.action_space.shape == (6,)
    finally:
        env.close()


def test_without_mujoco_a_mujoco_id_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rlconf.mujoco_ids, "mujoco_installed", lambda: False)
    for env in ("HalfCheetah-v3", "HalfCheetah-v5", "Walker2d-v4"):
        issue = env_issue(env)
        assert issue is not None and "mujoco" in issue.problem and issue.value == env
        assert "pip install 'rlconf[mujoco]'" in issue.allowed
    assert env_issue("CartPole-v1") is None and env_issue("Pendulum-v1") is None
    with pytest.raises(ConfigError, match=r"halfcheetah_sac\.env=.*rlconf\[mujoco\]"):
        _load(SAC_FILE)
    with pytest.raises(ConfigError, match=r"rlconf\[mujoco\]"):
        SACConfig().environment("HalfCheetah-v5").build()


# ------------------------------------------------------------------ resources


@needs_ale
def test_the_ppo_file_as_written_is_refused_naming_what_fits(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A 2-core machine without a GPU, and the Ray a sweep starts there (as many logical CPUs
    # as its largest trial asks for: the driver's and 10 workers').
    monkeypatch.setattr(placement, "alive_node_resources", lambda: [{"CPU": 11.0}])
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    (experiment,) = _load(PPO_FILE)
    with pytest.raises(ConfigError) as caught:
        refuse_unplaceable_trials(sweep_trial_plans([experiment.config]), "PPO", "w", own_ray=True)
    message = str(caught.value)
    assert "GPU 1 (cluster total 0)" in message
    assert "num_gpus=1 asks for 1 GPU: num_gpus=0 fits (the learner then trains on CPU)" in message
    assert "Its 11 CPUs would share this machine's 2 cores" in message
    assert "num_workers=10 x num_cpus_per_worker=1 asks for 10 CPU: num_workers=1 fits" in message


@needs_ale
@pytest.mark.slow
@pytest.mark.skipif(torch.cuda.is_available(), reason="the machine has a GPU: the file fits it")
def test_the_ppo_file_as_written_exits_2_before_any_trial_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The sweep starts Ray (a few seconds), checks each trial's plan and stops there.
    code = main(
        ["train", "-f", str(DATA / PPO_FILE), "--framework", "torch", "--local-dir", str(tmp_path)]
    )
    assert code == 2
    err = capsys.readouterr().err
    assert "num_gpus=1 asks for 1 GPU: num_gpus=0 fits" in err
    cores = os.cpu_count() or 1
    if cores < 11:  # the workers' CPUs, and what gives each a core of this machine
        assert f"asks for 10 CPU: num_workers={cores - 1} fits" in err
    assert not list(tmp_path.glob("*/result.json"))


# ------------------------------------------------------------------ training


@pytest.mark.slow
@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=NEEDS[n]) for n in TRAINED], ids=list(TRAINED)
)
def test_trains_to_a_short_stop_through_the_cli(name: str, tmp_path: Path) -> None:
    env, overrides, stop = TRAINED[name]
    argv = ["train", "-f", str(DATA / name), "--framework", "torch", "--stop", json.dumps(stop)]
    argv += ["--config", json.dumps(overrides), "--local-dir", str(tmp_path)]
    if env is not None:
        argv += ["--env", env]
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*out of date", category=DeprecationWarning)
        warnings.filterwarnings("ignore", message=".*metrics_smoothing_episodes")
        assert main(argv) == 0
    (result_file,) = tmp_path.glob("*/result.json")
    (result,) = [json.loads(line) for line in result_file.read_text().splitlines()]
    assert result["timesteps_total"] > 0
    assert result["info"]["num_env_steps_trained"] > 0
    params = json.loads(result_file.with_name("params.json").read_text())
    assert params["framework"] == "torch"
    for key, value in AS_WRITTEN[name].items():
        if key not in overrides:
            assert params[key] == value
    if name == DQN_FILE:
        assert params["replay_buffer_config"]["capacity"] == 1_000_000
    if name == SAC_FILE:
        assert result["evaluation"]["episodes_this_iter"] > 0  # evaluation_interval: 1


def test_where_no_setting_alone_fits_each_is_named_so() -> None:
    # 3 rollout and 3 evaluation workers of a CPU each, on 2 CPUs: neither count alone fits.
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .rollouts(num_workers=3)
        .evaluation(evaluation_num_workers=3, evaluation_interval=1)
    )
    plan = resource_plan(config.freeze())
    fits = fitting_values(plan, plan.totals(driver=False), {"CPU": 2.0}, driver=False)
    assert fits == (
        "num_workers=3 x num_cpus_per_worker=1 asks for 3 CPU: lowering it alone is not enough; "
        "evaluation_num_workers=3 x num_cpus_per_worker=1 asks for 3 CPU: lowering it alone is "
        "not enough"
    )
    # With 3 CPUs, lowering either fits: each named with its value, 0 rollout workers included.
    fits = fitting_values(plan, plan.totals(driver=False), {"CPU": 3.0}, driver=False)
    assert fits == (
        "num_workers=3 x num_cpus_per_worker=1 asks for 3 CPU: num_workers=0 fits (the "
        "driver's own worker then samples); evaluation_num_workers=3 x num_cpus_per_worker=1 "
        "asks for 3 CPU: evaluation_num_workers=0 fits"
    )
