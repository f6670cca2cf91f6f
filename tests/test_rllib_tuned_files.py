"""RLlib 2.3-2.5's tuned example files for PG, PPO, A2C and DQN, as the Ray project wrote them
(tests/data/rllib_tuned/, see SOURCE.md there), run with ``rlconf train -f FILE --framework
torch``: every file loads, the fastest file of each algorithm trains one iteration through the
command line, and the files that ask for what rlconf cannot do are refused naming the key and
the reason.
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
FILES = sorted(DATA.glob("*/*.yaml"))

#: Files refused on purpose: file -> (the setting named, words of the reason), each reason one
#: of a feature the runtime does not have.
REFUSED: dict[str, list[tuple[str, str]]] = {
    # model.use_lstm: true (the file's comment: "Test w/ LSTMs.")
    "ppo/cartpole-ppo-fake-gpus.yaml": [
        ("cartpole-ppo-fake-gpus.model.use_lstm=True", "recurrent models are not supported"),
    ],
    # exploration_config: {type: ParameterNoise}: noise on the model's weights.
    "dqn/cartpole-dqn-param-noise.yaml": [
        (
            "cartpole-dqn-w-param-noise.exploration_config=",
            "exploration type 'ParameterNoise' is not supported: parameter-space noise",
        ),
    ],
}

#: The fastest file of each algorithm (one process, no Ray workers), trained one iteration.
TRAINED: dict[str, dict[str, object]] = {
    "pg/cartpole-pg.yaml": {},
    "ppo/pendulum-ppo.yaml": {},
    # A2C iterates for at least min_time_s_per_iteration=10 s (its default, in RLlib 2.x too):
    # one train step is enough here.
    "a2c/cartpole-a2c.yaml": {"min_time_s_per_iteration": 0},
    "dqn/cartpole-dqn.yaml": {},
}


def _name(path: Path) -> str:
    return path.relative_to(DATA).as_posix()


def test_the_files_are_all_here() -> None:
    names = {_name(p) for p in FILES}
    assert set(REFUSED) <= names and set(TRAINED) <= names
    assert {p.parent.name for p in FILES} == {"pg", "ppo", "a2c", "dqn"}
    assert len(FILES) == 16


@pytest.mark.parametrize(
    "path", [p for p in FILES if _name(p) not in REFUSED], ids=lambda p: _name(p)
)
def test_loads_unchanged_with_framework_torch(path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)  # no deprecated rlconf name in them
        warnings.filterwarnings("ignore", message=".*out of date", category=DeprecationWarning)
        experiments = load_experiments(path, Overrides(framework="torch"))
    assert experiments
    for experiment in experiments:
        assert experiment.config.to_dict()["framework"] == "torch"
        assert experiment.run in ("PG", "PPO", "A2C", "DQN")


def test_framework_tf_is_what_the_flag_is_for() -> None:
    with pytest.raises(ConfigError, match=r"framework='tf'.*--framework torch"):
        load_experiments(DATA / "pg" / "cartpole-pg.yaml")


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_naming_the_key_and_the_reason(name: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_experiments(DATA / name, Overrides(framework="torch"))
    message = str(caught.value)
    assert f"{len(REFUSED[name])} invalid setting" in message
    for setting, reason in REFUSED[name]:
        assert setting in message
        assert reason in message


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
