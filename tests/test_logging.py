"""``log_level`` and ``rlconf train -v``/``-vv``: the ``runtime`` and ``rlconf`` loggers print
to stderr through one handler each; INFO shows workers, checkpoints and evaluations, DEBUG adds
each iteration's sampling and learning timings and batch shapes."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from rlconf import PPOConfig
from rlconf.cli import main, verbosity_log_level
from rlconf.log_setup import LOGGERS, StderrHandler, configure_logging, level_of
from runtime import PPO

TINY_PPO = {
    "num_workers": 0,
    "train_batch_size": 200,
    "rollout_fragment_length": 100,
    "sgd_minibatch_size": 100,
    "num_sgd_iter": 1,
}


@pytest.fixture(autouse=True)
def restore_loggers() -> Iterator[None]:
    """The loggers as they were: these tests set DEBUG and add handlers."""
    saved = {name: logging.getLogger(name) for name in LOGGERS}
    levels = {name: logger.level for name, logger in saved.items()}
    handlers = {name: list(logger.handlers) for name, logger in saved.items()}
    yield
    for name, logger in saved.items():
        logger.setLevel(levels[name])
        logger.handlers[:] = handlers[name]


def _tiny(log_level: str) -> PPOConfig:
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .update_from_dict(TINY_PPO)
        .evaluation(evaluation_interval=1, evaluation_duration=1)
        .debugging(log_level=log_level)  # type: ignore[arg-type]
    )


def _messages(caplog: pytest.LogCaptureFixture, level: int) -> list[str]:
    return [
        f"{r.name}: {r.getMessage()}"
        for r in caplog.records
        if r.levelno == level and r.name.startswith("runtime")
    ]


def _has(messages: list[str], *parts: str) -> bool:
    return any(all(part in m for part in parts) for m in messages)


def _train_save_restore(config: PPOConfig, tmp_path: Path) -> None:
    algo = config.build()
    try:
        algo.train()
        path = algo.save(str(tmp_path))
        algo.restore(path)
    finally:
        algo.stop()


def test_debug_logs_workers_timings_shapes_checkpoints_and_evaluations(
    caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    caplog.set_level(logging.NOTSET)  # the config's log_level decides
    _train_save_restore(_tiny("DEBUG"), tmp_path)
    assert logging.getLogger("runtime").level == logging.DEBUG
    assert logging.getLogger("rlconf").level == logging.DEBUG
    info = _messages(caplog, logging.INFO)
    assert _has(info, "runtime.env.worker_set", "workers: local worker ready on cpu")
    assert _has(info, "evaluation_workers: local worker ready")
    assert _has(info, "runtime.algorithm", "PPO: built for env 'CartPole-v1'", "0 remote")
    assert _has(info, "PPO: evaluation on the weights of iteration 1: 1 episodes")
    assert _has(info, "PPO: checkpoint of iteration 1 written to", str(tmp_path))
    assert _has(info, "PPO: restored iteration 1 from the checkpoint")
    debug = _messages(caplog, logging.DEBUG)
    assert _has(
        debug,
        "runtime.training.stages",
        "PPO: sampled a train batch of 200 env steps",
        "in 2 round(s)",
        "default_policy: 200 rows",
        "obs: (200, 4) float32",
        "actions: (200,) int64",
        "advantages: (200,)",
    )
    assert sum("sampled a round of 100 env steps" in m for m in debug) == 2
    assert _has(debug, "PPO: learned on default_policy: 200 rows in", " s")
    assert _has(debug, "runtime.algorithm", "PPO: iteration 1 took", "200 env steps sampled")


def test_info_leaves_out_the_per_iteration_records_and_warn_leaves_out_both(
    caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    caplog.set_level(logging.NOTSET)
    _train_save_restore(_tiny("INFO"), tmp_path / "info")
    assert _has(_messages(caplog, logging.INFO), "checkpoint of iteration 1 written")
    assert _messages(caplog, logging.DEBUG) == []
    caplog.clear()
    _train_save_restore(_tiny("WARN"), tmp_path / "warn")
    assert logging.getLogger("runtime").level == logging.WARNING
    assert _messages(caplog, logging.INFO) == _messages(caplog, logging.DEBUG) == []


def test_one_handler_each_however_often_logging_is_configured() -> None:
    for level in ("INFO", "DEBUG", "WARN"):
        configure_logging(level)
    for name in LOGGERS:
        handlers = logging.getLogger(name).handlers
        assert sum(isinstance(h, StderrHandler) for h in handlers) == 1, name
    assert level_of("WARN") == logging.WARNING and level_of("debug") == logging.DEBUG
    with pytest.raises(ValueError, match="'LOUD' is not a log level; allowed: DEBUG, INFO"):
        level_of("LOUD")


def test_the_handler_prints_each_record_once_to_stderr_unless_the_application_logs(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    configure_logging("INFO")
    configure_logging("INFO")
    root = logging.getLogger()
    monkeypatch.setattr(root, "handlers", [])  # as in a process nobody configured logging in
    logging.getLogger("runtime.some.part").info("a note for %s", "the user")
    logging.getLogger("rlconf.some.part").debug("not at INFO")
    err = capsys.readouterr().err
    assert err.count("a note for the user") == 1
    assert "INFO runtime.some.part: a note for the user" in err
    assert "not at INFO" not in err
    # An application's own root handler gets the records instead: nothing printed twice.
    monkeypatch.setattr(root, "handlers", [logging.NullHandler()])
    logging.getLogger("runtime.some.part").info("handled by the application")
    assert capsys.readouterr().err == ""


def test_verbose_flags_set_info_and_debug(
    caplog: pytest.LogCaptureFixture, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert [verbosity_log_level(n) for n in (0, 1, 2, 3)] == [None, "INFO", "DEBUG", "DEBUG"]
    caplog.set_level(logging.NOTSET)
    train = [
        "train",
        "--run",
        "PPO",
        "--env",
        "CartPole-v1",
        "--config",
        json.dumps({**TINY_PPO, "log_level": "ERROR"}),  # the flags override it
        "--stop",
        '{"training_iteration": 1}',
        "--local-dir",
        str(tmp_path),
        "-q",
    ]
    assert main([*train, "-vv"]) == 0
    assert logging.getLogger("runtime").level == logging.DEBUG
    assert _has(_messages(caplog, logging.DEBUG), "PPO: sampled a train batch of 200 env steps")
    assert _has(_messages(caplog, logging.INFO), "PPO: built for env 'CartPole-v1'")
    caplog.clear()
    assert main([*train, "-v"]) == 0
    assert logging.getLogger("runtime").level == logging.INFO
    assert _has(_messages(caplog, logging.INFO), "PPO: built for env 'CartPole-v1'")
    assert _messages(caplog, logging.DEBUG) == []
    caplog.clear()
    assert main(train) == 0  # the config's ERROR
    assert logging.getLogger("runtime").level == logging.ERROR
    assert _messages(caplog, logging.INFO) == []


def test_a_remote_worker_takes_the_log_level_in_its_own_process() -> None:
    """What a RemoteRolloutWorker does first in its actor's process (built here in-process)."""
    from runtime.env.env_registry import env_creator_for
    from runtime.env.worker_set import RemoteRolloutWorker

    configure_logging("WARN")
    worker = RemoteRolloutWorker(
        env_creator=env_creator_for("CartPole-v1"),
        config=_tiny("DEBUG").freeze(),
        policy_class=PPO.policy_class,
        worker_index=1,
        num_workers=1,
        device=None,
    )
    worker.check_built()
    worker.stop()
    assert logging.getLogger("runtime").level == logging.DEBUG
    assert logging.getLogger("rlconf").level == logging.DEBUG
