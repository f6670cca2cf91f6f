"""An ``input`` that names no readable files (a missing local path, a remote URI such as
``hdfs:/archive/cartpole``) is refused where a run starts (``check_input_paths``: the algorithm's
build and ``rlconf train``'s checks), naming ``input``, the path and what is allowed, so
``rlconf train`` prints its one-line ``error:`` rather than a worker's ``FileNotFoundError``
traceback, and ``config.build()`` raises a ``ConfigError``. ``validate()`` does not read the
disk: a config naming data that lives elsewhere still loads."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from rlconf import BCConfig, ConfigError, DQNConfig, PGConfig
from rlconf.cli import main
from rlconf.input_paths import input_issues


def _train(config: dict[str, Any], tmp_path: Path) -> list[str]:
    return [
        "train",
        "--run",
        "DQN",
        "--env",
        "CartPole-v1",
        "--stop",
        '{"training_iteration": 1}',
        "--config",
        json.dumps(config),
        "--local-dir",
        str(tmp_path / "results"),
    ]


@pytest.mark.parametrize(
    ("source", "problem"),
    [
        ("hdfs:/archive/cartpole", r"is a URI \(hdfs:\), and rlconf reads only local paths"),
        ("s3://bucket/cartpole", r"is a URI \(s3:\), and rlconf reads only local paths"),
        ("MISSING", "is no existing file or folder, and no glob matching a file"),
    ],
)
def test_the_cli_prints_one_error_line_naming_input_and_the_path(
    source: str, problem: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = source.replace("MISSING", str(tmp_path / "cartpole-out"))
    assert main(_train({"input": source}, tmp_path)) == 2
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err and "FileNotFoundError" not in captured.err
    lines = captured.err.strip().splitlines()
    assert lines[0].startswith("error: ")
    (issue,) = [line for line in lines if line.lstrip().startswith("- input=")]
    assert repr(source) in issue
    assert re.search(problem, issue)
    assert "allowed: an existing file, folder (of *.json files) or glob" in issue
    assert "'sampler'" in issue and "minari://" in issue and "fn(io_context)" in issue
    assert not (tmp_path / "results").exists()  # refused before anything started


def test_build_refuses_a_missing_path_before_any_worker_starts(tmp_path: Path) -> None:
    config = DQNConfig().environment("CartPole-v1").offline_data(input_=str(tmp_path / "none"))
    with pytest.raises(ConfigError) as caught:
        config.build()
    (issue,) = caught.value.issues
    assert issue.field == "input" and issue.value == str(tmp_path / "none")
    assert "no existing file or folder" in issue.problem and "fn(io_context)" in issue.allowed
    # an empty folder has nothing to read either
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match=r"input=.*empty.*a folder holding no \*\.json files"):
        config.copy().offline_data(input_=str(tmp_path / "empty")).build()


def test_every_form_of_input_is_checked_and_the_readable_ones_pass(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "output-0.json").touch()
    good = str(tmp_path / "out")
    missing = str(tmp_path / "gone")
    for ok in (
        "sampler",
        good,
        str(tmp_path / "out" / "output-0.json"),
        str(tmp_path / "*" / "*.json"),
        [good],
        {good: 0.5, "sampler": 0.5},
        "minari://cartpole/pg-v0",
        lambda ioctx: None,
    ):
        assert input_issues(ok, {}) == [], ok
    mixed = input_issues({missing: 0.4, "sampler": 0.6}, {})
    assert [i.problem for i in mixed] == [
        f"source {missing!r} is no existing file or folder, and no glob matching a file"
    ]
    listed = input_issues([good, "gs://bucket/x"], {})
    assert [i.field for i in listed] == ["input"]
    assert listed[0].problem.startswith("'gs://bucket/x' is a URI (gs:)")
    # RLlib 2.x's input="dataset" reads input_config["path"]
    with pytest.raises(ConfigError, match=r"input_config\.path=.*gone.*no existing file"):
        BCConfig().offline_data(
            input_="dataset", input_config={"format": "json", "path": missing}
        ).check_input_paths()
    BCConfig().offline_data(
        input_="dataset", input_config={"format": "json", "path": good}
    ).check_input_paths()
    # an evaluation_config override of input is checked too
    with pytest.raises(ConfigError, match=r"evaluation_config\.input=.*gone"):
        PGConfig().evaluation(evaluation_config={"input": missing}).check_input_paths()


def test_a_path_written_after_the_config_is_made_is_read(tmp_path: Path) -> None:
    """validate() leaves the disk alone (an RLlib file naming /tmp/out still loads); the check
    reads the disk when it runs, so a config may name files that are written later."""
    folder = tmp_path / "later"
    config = PGConfig().environment("CartPole-v1").offline_data(input_=str(folder))
    assert config.validate() is config
    with pytest.raises(ConfigError):
        config.check_input_paths()
    folder.mkdir()
    (folder / "output-0.json").touch()
    assert config.check_input_paths() is config
