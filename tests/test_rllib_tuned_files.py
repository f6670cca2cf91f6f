"""RLlib 2.3-2.5's tuned example files for PG, PPO, A2C and DQN, as the Ray project wrote them
(tests/data/rllib_tuned/, see SOURCE.md there), run with ``rlconf train -f FILE --framework
torch``: every file loads, and the fastest file of each algorithm (with the fake-GPU LSTM and
parameter-noise files) trains one iteration through the command line; the RLlib LSTM file
that needs its env path changed learns to its stop in ``tests/test_memory_learning.py``.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from rlconf import ConfigError
from rlconf.cli import main
from rlconf.experiment import Overrides, load_experiments

pytestmark = pytest.mark.filterwarnings("ignore:.*CartPole-v0 is out of date:DeprecationWarning")

DATA = Path(__file__).parent / "data" / "rllib_tuned"
#: The Atari and MuJoCo files: tests/test_rllib_real_workload_files.py.
REAL_WORKLOADS = {"ppo/atari-ppo.yaml", "sac/halfcheetah-sac.yaml", "dqn/atari-dqn.yaml"}
FILES = sorted(
    p for p in DATA.glob("*/*.yaml") if p.relative_to(DATA).as_posix() not in REAL_WORKLOADS
)

#: The fastest file of each algorithm (one process, no Ray workers), trained one iteration.
TRAINED: dict[str, dict[str, object]] = {
    "pg/cartpole-pg.yaml": {},
    "ppo/pendulum-ppo.yaml": {},
    # A2C iterates for at least min_time_s_per_iteration=10 s (its default, in RLlib 2.x too):
    # one train step is enough here.
    "a2c/cartpole-a2c.yaml": {"min_time_s_per_iteration": 0},
    "dqn/cartpole-dqn.yaml": {},
    # An LSTM on two fake GPU towers: sequences split between them (smaller, in one process).
    "ppo/cartpole-ppo-fake-gpus.yaml": {
        "num_workers": 0,
        "train_batch_size": 400,
        "sgd_minibatch_size": 100,
    },
    # Noise on the Q-network's weights (ParameterNoise), adapted after each fragment.
    "dqn/cartpole-dqn-param-noise.yaml": {},
    # The asynchronous ones, on the embedded default (their remote workers and learner
    # worker are tested with Ray in tests/test_remote_workers.py); an iteration is 10 s by
    # their min_time_s_per_iteration: a short one here.
    "impala/cartpole-impala.yaml": {
        "num_workers": 0,
        "num_learner_workers": 0,
        "min_time_s_per_iteration": 0,
    },
    "appo/cartpole-appo.yaml": {"num_workers": 0, "min_time_s_per_iteration": 0},
}

#: Files naming one of RLlib's example envs: the path of rlconf's own (``--env``).
ENV_PATHS: dict[str, str] = {
    "ppo/repeatafterme-ppo-lstm.yaml": "runtime.example_envs.RepeatAfterMeEnv",
}


def _name(path: Path) -> str:
    return path.relative_to(DATA).as_posix()


def test_the_files_are_all_here() -> None:
    names = {_name(p) for p in FILES}
    assert set(TRAINED) <= names
    assert {p.parent.name for p in FILES} == {
        "pg",
        "ppo",
        "a2c",
        "dqn",
        "marwil",
        "impala",
        "appo",
    }
    assert len(FILES) == 21


@pytest.mark.parametrize("path", FILES, ids=lambda p: _name(p))
def test_loads_unchanged_with_framework_torch(path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)  # no deprecated rlconf name in them
        warnings.filterwarnings("ignore", message=".*out of date", category=DeprecationWarning)
        experiments = load_experiments(
            path, Overrides(framework="torch", env=ENV_PATHS.get(_name(path)))
        )
    assert experiments
    for experiment in experiments:
        assert experiment.config.to_dict()["framework"] == "torch"
        assert experiment.run in ("PG", "PPO", "A2C", "DQN", "BC", "MARWIL", "IMPALA", "APPO")


def test_framework_tf_is_what_the_flag_is_for() -> None:
    with pytest.raises(ConfigError, match=r"framework='tf'.*--framework torch"):
        load_experiments(DATA / "pg" / "cartpole-pg.yaml")


@pytest.mark.parametrize("name", sorted(TRAINED))
def test_trains_one_iteration_through_the_cli(name: str, tmp_path: Path) -> None:
    argv = [
        "train",
        "-f",
        str(DATA / name),
        "--framework",
        "torch",
        "--stop",
        '{"training_iteration": 1}',
        "--local-dir",
        str(tmp_path),
    ]
    if TRAINED[name]:
        argv += ["--config", json.dumps(TRAINED[name])]
    assert main(argv) == 0
    (result_file,) = tmp_path.glob("*/result.json")
    results = [json.loads(line) for line in result_file.read_text().splitlines()]
    assert [r["training_iteration"] for r in results] == [1]
    assert results[0]["timesteps_total"] > 0
    params = json.loads(result_file.with_name("params.json").read_text())
    assert params["framework"] == "torch"


@pytest.fixture(scope="module")
def ppo_experience(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What the files' header asks for: PPO's experience of complete CartPole episodes."""
    folder = tmp_path_factory.mktemp("ppo-out")
    argv = [
        "train",
        "--run",
        "PPO",
        "--env",
        "CartPole-v1",
        "--stop",
        '{"training_iteration": 1}',
        "--config",
        json.dumps(
            {
                "output": str(folder),
                "batch_mode": "complete_episodes",
                "num_workers": 0,
                "train_batch_size": 1000,
                "sgd_minibatch_size": 250,
            }
        ),
        "--local-dir",
        str(tmp_path_factory.mktemp("ppo-run")),
    ]
    assert main(argv) == 0
    assert list(folder.glob("output-*.json"))
    return folder


@pytest.mark.parametrize(
    ("name", "reads"),
    [
        ("marwil/cartpole-marwil.yaml", "input"),
        ("marwil/cartpole-bc.yaml", "input_config"),
    ],
)
def test_bc_and_marwil_files_train_on_what_our_ppo_wrote(
    name: str, reads: str, ppo_experience: Path, tmp_path: Path
) -> None:
    # The files read /tmp/out: the same files, in this test's folder. Evaluation in this process.
    where: object = (
        str(ppo_experience) if reads == "input" else {"format": "json", "path": str(ppo_experience)}
    )
    argv = [
        "train",
        "-f",
        str(DATA / name),
        "--framework",
        "torch",
        "--stop",
        '{"training_iteration": 1}',
        "--config",
        json.dumps({reads: where, "evaluation_num_workers": 0}),
        "--local-dir",
        str(tmp_path),
    ]
    assert main(argv) == 0
    (result_file,) = tmp_path.glob("*/result.json")
    (result,) = [json.loads(line) for line in result_file.read_text().splitlines()]
    assert result["timesteps_total"] > 0
    assert result["evaluation"]["episodes_this_iter"] > 0  # on the live env
