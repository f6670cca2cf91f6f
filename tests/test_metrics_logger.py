"""``MetricsLogger``: each reduction as RLlib's new API stack documents it, nested keys, and the
values of several workers merged on the driver (no Ray: the loggers are used directly)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from runtime import MetricsLogger
from runtime.results.metrics_logger import merge_into


def test_each_reduction_over_a_result_and_the_next() -> None:
    logger = MetricsLogger()
    for value in (1.0, 2.0, 3.0, 4.0):
        logger.log_value("window_mean", value, window=2)
        logger.log_value("lifetime_sum", value, reduce="sum")
        logger.log_value("iteration_sum", value, reduce="sum", clear_on_reduce=True)
        logger.log_value("max", value, reduce="max")
        logger.log_value("min", value, reduce="min")
        logger.log_value("values", value, reduce=None, clear_on_reduce=True)
        logger.log_value("ema", value, ema_coeff=0.5)
        logger.log_value("default_mean", value)
    first = logger.reduce()
    assert first["window_mean"] == 3.5  # the last 2 values
    assert first["lifetime_sum"] == first["iteration_sum"] == 10.0
    assert (first["max"], first["min"]) == (4.0, 1.0)
    assert first["values"] == [1.0, 2.0, 3.0, 4.0]
    # a moving average from the first value on: 1 -> 1.5 -> 2.25 -> 3.125
    assert first["ema"] == pytest.approx(3.125)
    # RLlib's default for a mean without a window: a moving average with coefficient 0.01
    assert first["default_mean"] == pytest.approx(((1 * 0.99 + 0.02) * 0.99 + 0.03) * 0.99 + 0.04)
    logger.log_value("window_mean", 10.0)
    logger.log_value("lifetime_sum", 5.0, reduce="sum")
    logger.log_value("iteration_sum", 5.0, reduce="sum", clear_on_reduce=True)
    second = logger.reduce()
    assert second["window_mean"] == 7.0  # 4 and 10: the window carries over results
    assert second["lifetime_sum"] == 15.0
    assert second["iteration_sum"] == 5.0
    assert second["values"] == []  # cleared by the first result, nothing logged since
    assert (second["max"], second["min"]) == (4.0, 1.0)


def test_nested_keys_log_dict_and_peek() -> None:
    logger = MetricsLogger()
    logger.log_value(("a", "b"), 1, reduce="sum")
    logger.log_dict({"b": 2, "c": {"d": np.float32(0.5)}}, key="a", reduce="sum")
    assert logger.peek(("a", "b")) == 3
    assert logger.peek("a") == {"b": 3, "c": {"d": 0.5}}
    assert logger.peek("missing", default=7) == 7
    with pytest.raises(KeyError, match=r"peek\('missing'\): nothing was logged.*\('a', 'b'\)"):
        logger.peek("missing")
    result = {"a": {"kept": 1, "b": 0}, "other": 2}
    merge_into(result, logger.reduce())
    assert result == {"a": {"kept": 1, "b": 3, "c": {"d": 0.5}}, "other": 2}
    # a mean with nothing logged since it was cleared: nan, as RLlib's
    cleared = MetricsLogger()
    cleared.log_value("m", 1.0, window=3, clear_on_reduce=True)
    assert cleared.reduce() == {"m": 1.0}
    assert math.isnan(cleared.reduce()["m"])


def test_values_of_several_workers_merge_on_the_driver() -> None:
    workers = [MetricsLogger(upstream=True) for _ in range(2)]
    for k, worker in enumerate(workers):
        for step in range(3):
            value = 10.0 * k + step
            worker.log_value("steps", 1, reduce="sum")
            worker.log_value("ret", value, window=4)
            worker.log_value("top", value, reduce="max", clear_on_reduce=True)
            worker.log_value("seen", value, reduce=None, clear_on_reduce=True)
        # a worker reads its own values
        assert worker.peek("steps") == 3
    driver = MetricsLogger()
    driver.merge_logged(worker.take_logged() for worker in workers)
    reduced = driver.reduce()
    assert reduced["steps"] == 6
    # the window spans the workers' values, merged worker by worker: 2, 10, 11, 12
    assert reduced["ret"] == pytest.approx((2 + 10 + 11 + 12) / 4)
    assert reduced["top"] == 12.0
    assert reduced["seen"] == [0.0, 1.0, 2.0, 10.0, 11.0, 12.0]
    # sent once: the next merge adds only what was logged since
    workers[0].log_value("steps", 1, reduce="sum")
    driver.merge_logged(worker.take_logged() for worker in workers)
    again = driver.reduce()
    assert again["steps"] == 7
    assert again["seen"] == []
    # clear_on_reduce keys start afresh on the worker too once sent
    assert workers[1].peek("seen") == []


def test_settings_are_checked_and_conflicts_refused() -> None:
    logger = MetricsLogger()
    with pytest.raises(ValueError, match=r"reduce='median' is not a reduction; allowed: 'mean'"):
        logger.log_value("x", 1.0, reduce="median")
    with pytest.raises(ValueError, match=r"window=3 and ema_coeff=0\.1 are both given"):
        logger.log_value("x", 1.0, window=3, ema_coeff=0.1)
    with pytest.raises(ValueError, match=r"ema_coeff=0\.1 with reduce='sum'"):
        logger.log_value("x", 1.0, reduce="sum", ema_coeff=0.1)
    with pytest.raises(ValueError, match="window=inf keeps every value"):
        logger.log_value("x", 1.0, window=float("inf"))
    with pytest.raises(TypeError, match=r"'x': the value 'high' \(str\) is not a number"):
        logger.log_value("x", "high", reduce="max")
    with pytest.raises(TypeError, match="metrics key 3 is not a key"):
        logger.log_value(3, 1.0)  # type: ignore[arg-type]
    logger.log_value("x", 1.0, reduce="sum")
    logger.log_value("x", 2.0)  # the defaults ask nothing of the key's settings
    with pytest.raises(ValueError, match=r"'x': reduce='max' for a key logged with reduce='sum'"):
        logger.log_value("x", 1.0, reduce="max")
    with pytest.raises(ValueError, match="can't be both a value and a dict of values"):
        logger.log_value(("x", "y"), 1.0)
    logger.log_value("text", "any value", reduce=None, window=2)
    assert logger.reduce()["x"] == 3.0
