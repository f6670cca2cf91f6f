"""``rlconf train`` checks env ids and stop keys at start, applies its flags over an
experiment file, and overrides the reference's ``framework: tf``."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from rlconf import ConfigError
from rlconf.cli import main
from rlconf.experiment import Overrides, load_experiments, make_experiment
from tests import child_process

SMALL_PG = {"num_workers": 0, "train_batch_size": 100, "rollout_fragment_length": 100}


def _write(path: Path, experiments: dict[str, Any]) -> Path:
    path.write_text(json.dumps(experiments))  # JSON is YAML
    return path


def test_typos_in_env_and_stop_fail_before_torch_or_ray_are_imported(tmp_path: Path) -> None:
    experiments = _write(
        tmp_path / "typo.yaml",
        {"x": {"run": "PPO", "env": "CartPole-v1", "stop": {"timesteps_totl": 10}}},
    )
    script = (
        "import sys\n"
        "from rlconf.cli import main\n"
        "codes = [main(['train', '--run', 'PPO', '--env', 'CartPol-v1',\n"
        "              '--stop', '{\"episode_reward_mea\": 450}']),\n"
        f"         main(['train', '-f', {str(experiments)!r}])]\n"
        "print(codes, sorted(m for m in ('torch', 'ray') if m in sys.modules))\n"
    )
    done = child_process.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[2, 2] []"
    assert "env='CartPol-v1' (str): is neither a gymnasium id nor a registered env name" in (
        done.stderr
    )
    assert "did you mean 'CartPole-v1'" in done.stderr
    assert "--stop.episode_reward_mea: is not a result key" in done.stderr
    assert "did you mean 'episode_reward_mean'" in done.stderr
    assert "x.stop.timesteps_totl: is not a result key (did you mean 'timesteps_total'" in (
        done.stderr
    )


def test_env_ids_are_checked_wherever_they_are_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(
        tmp_path / "envs.yaml",
        {
            "by-key": {"run": "PPO", "env": "CartPol-v1"},
            "in-config": {"run": "PG", "config": {"env": "Pendulm-v1"}},
        },
    )
    assert main(["train", "-f", str(path)]) == 2
    err = capsys.readouterr().err
    assert "by-key.env='CartPol-v1'" in err and "did you mean 'CartPole-v1'" in err
    assert "in-config.env='Pendulm-v1'" in err and "did you mean 'Pendulum-v1'" in err

    assert main(["train", "--run", "PPO", "--config", '{"env": "Acrobt-v1"}']) == 2
    assert "did you mean 'Acrobot-v1'" in capsys.readouterr().err
    assert main(["train", "--run", "PPO"]) == 2
    assert "env: is not set" in capsys.readouterr().err


def test_registered_names_and_import_paths_are_envs() -> None:
    from runtime import register_env
    from tests.envs import CorridorEnv

    register_env("rlconf-test-corridor", CorridorEnv)
    for env in ("rlconf-test-corridor", "tests.envs:CorridorEnv", "CartPole-v1"):
        experiment = make_experiment("x", {"run": "PG", "env": env})
        assert experiment.config["env"] == env
    with pytest.raises(ConfigError, match="did you mean 'rlconf-test-corridor'"):
        make_experiment("x", {"run": "PG", "env": "rlconf-test-coridor"})


def test_framework_flag_overrides_the_references_tf(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(
        tmp_path / "tf.yaml",
        {"ref": {"run": "PPO", "env": "CartPole-v1", "config": {"framework": "tf"}}},
    )
    assert main(["train", "-f", str(path)]) == 2
    err = capsys.readouterr().err
    assert "ref.framework='tf'" in err and "--framework torch overrides it" in err
    (experiment,) = load_experiments(path, Overrides(framework="torch"))
    assert experiment.config.framework_str == "torch"

    flags = Overrides(config={"framework": "tf"}, env="CartPole-v1", framework="torch")
    assert make_experiment("PPO", {"run": "PPO"}, flags).config.framework_str == "torch"
    with pytest.raises(SystemExit) as exit_:
        main(["train", "--run", "PPO", "--env", "CartPole-v1", "--framework", "tf"])
    assert exit_.value.code == 2
    assert "invalid choice: 'tf'" in capsys.readouterr().err


def _tuned_like(tmp_path: Path) -> Path:
    return _write(
        tmp_path / "tuned.yaml",
        {
            "ppo-run": {
                "run": "PPO",
                "env": "CartPole-v1",
                "stop": {"episode_reward_mean": 450},
                "checkpoint_freq": 5,
                "checkpoint_at_end": True,
                "local_dir": str(tmp_path / "from-file"),
                "config": {"lr": 0.001, "model": {"fcnet_hiddens": [64], "vf_share_layers": True}},
            },
            "pg-run": {"run": "PG", "env": "CartPole-v1", "config": SMALL_PG},
        },
    )


def test_flags_apply_over_every_experiment_of_a_file(tmp_path: Path) -> None:
    path = _tuned_like(tmp_path)
    unchanged = {e.name: e for e in load_experiments(path)}
    assert unchanged["ppo-run"].stop == {"episode_reward_mean": 450}
    assert unchanged["ppo-run"].checkpoint_freq == 5 and unchanged["ppo-run"].checkpoint_at_end

    flags = Overrides(
        config={"lr": 0.01, "model": {"fcnet_hiddens": [8]}},
        stop={"training_iteration": 3},
        env="Acrobot-v1",
        local_dir=str(tmp_path / "from-flag"),
        checkpoint_freq=0,
        checkpoint_at_end=False,
    )
    ppo, pg = load_experiments(path, flags)
    for experiment in (ppo, pg):
        config = experiment.config
        assert config["lr"] == 0.01 and config["env"] == "Acrobot-v1"
        assert config["model"]["fcnet_hiddens"] == [8]
        assert config["logger_config"]["local_dir"] == str(tmp_path / "from-flag")
        assert experiment.local_dir == str(tmp_path / "from-flag")
        assert experiment.checkpoint_freq == 0 and not experiment.checkpoint_at_end
    assert ppo.config["model"]["vf_share_layers"] is True  # the file's other model keys stay
    assert ppo.stop == {"episode_reward_mean": 450, "training_iteration": 3}
    assert pg.stop == {"training_iteration": 3}
    assert pg.config["train_batch_size"] == 100


def test_every_mistake_of_flags_and_file_is_reported_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _tuned_like(tmp_path)
    code = main(
        [
            "train",
            "-f",
            str(path),
            "--config",
            '{"sgd_minibatch_size": 64}',
            "--stop",
            '{"episode_reward_mea": 1}',
            "--checkpoint-freq",
            "-1",
        ]
    )
    assert code == 2
    err = capsys.readouterr().err
    assert "pg-run.--config.sgd_minibatch_size" in err  # a PPO key, unknown to PG
    assert "ppo-run.--config.sgd_minibatch_size" not in err
    assert "ppo-run.--stop.episode_reward_mea" in err and "pg-run.--stop.episode_reward_mea" in err
    assert "ppo-run.--checkpoint-freq=-1" in err and "pg-run.--checkpoint-freq=-1" in err
    assert not (tmp_path / "from-file").exists()


def test_a_file_runs_with_the_flags_stop_and_local_dir(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(
        tmp_path / "long.yaml",
        {
            "pg-run": {
                "run": "PG",
                "env": "CartPole-v1",
                "stop": {"timesteps_total": 1_000_000},
                "local_dir": str(tmp_path / "from-file"),
                "config": {**SMALL_PG, "train_batch_size": 1000},
            }
        },
    )
    flags = ["--stop", '{"training_iteration": 1}', "--checkpoint-at-end"]
    flags += ["--local-dir", str(tmp_path / "from-flag"), "--config", '{"train_batch_size": 100}']
    assert main(["train", "-f", str(path), *flags]) == 0
    assert capsys.readouterr().out.count("iter ") == 1
    assert not (tmp_path / "from-file").exists()
    (run_dir,) = (tmp_path / "from-flag").iterdir()
    assert (run_dir / "checkpoint_000001").is_dir()
    result = json.loads((run_dir / "result.json").read_text())
    assert result["timesteps_total"] == 100


def test_a_run_dependent_stop_key_missing_from_the_results_stops_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        [
            "train",
            "--run",
            "PG",
            "--env",
            "CartPole-v1",
            "--config",
            json.dumps(SMALL_PG),
            "--stop",
            '{"custom_metrics/pole_angle_mean": 1}',
            "--local-dir",
            str(tmp_path),
        ]
    )
    assert code == 2
    err = capsys.readouterr().err
    assert "stop.custom_metrics/pole_angle_mean: is not in the result of iteration 1" in err
    assert "custom_metrics holds no keys" in err
