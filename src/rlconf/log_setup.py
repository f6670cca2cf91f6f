"""Where the ``runtime`` and ``rlconf`` loggers print, and at what level: ``log_level`` (a config
key, ``debugging(log_level=...)``) and ``rlconf train -v`` / ``-vv`` (INFO / DEBUG).

``configure_logging(level)`` sets both loggers' level and gives each one handler that prints
to stderr, once however often it is called (every build calls it with its config's
``log_level``). The handler steps aside where the application has configured logging itself
(any handler on the root logger: ``logging.basicConfig``, pytest's capture): the records reach
those handlers through propagation, so nothing is printed twice.

What each level shows: WARN (the default) the notes and warnings of a build; INFO also worker
starts and recreations, the placement group, checkpoint writes and restores, and evaluation
rounds; DEBUG also each iteration's sampling and learning timings and batch shapes.
"""

from __future__ import annotations

import logging
import sys
from typing import TextIO

#: The loggers ``log_level`` sets (their children: ``runtime.training.stages``, ...).
LOGGERS = ("runtime", "rlconf")

#: ``log_level`` values (the reference's ``WARN`` included) -> ``logging`` levels.
LEVELS = {
    "DEBUG": logging.DEBUG,
    "INFO": logging.INFO,
    "WARN": logging.WARNING,
    "WARNING": logging.WARNING,
    "ERROR": logging.ERROR,
    "CRITICAL": logging.CRITICAL,
}

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
DATE_FORMAT = "%H:%M:%S"


class StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Prints to whatever ``sys.stderr`` is when a record comes (not the stream of when it was
    made), unless the root logger has handlers of the application's."""

    def __init__(self) -> None:
        logging.Handler.__init__(self)
        self.setFormatter(logging.Formatter(FORMAT, DATE_FORMAT))

    @property
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, _value: TextIO) -> None:
        """Ignored: the stream is always the current ``sys.stderr``."""

    def emit(self, record: logging.LogRecord) -> None:
        if logging.getLogger().handlers:
            return  # the application's handlers get the record through propagation
        super().emit(record)


def level_of(name: str) -> int:
    """The ``logging`` level of a ``log_level`` value; a ``ValueError`` naming the allowed ones."""
    try:
        return LEVELS[name.upper()]
    except KeyError:
        raise ValueError(
            f"log_level {name!r} is not a log level; allowed: {', '.join(LEVELS)}"
        ) from None


def configure_logging(level: str) -> None:
    """Set the ``runtime`` and ``rlconf`` loggers to ``level`` (a ``log_level`` value), each with
    one ``StderrHandler``."""
    number = level_of(level)
    for name in LOGGERS:
        logger = logging.getLogger(name)
        logger.setLevel(number)
        if not any(isinstance(h, StderrHandler) for h in logger.handlers):
            logger.addHandler(StderrHandler())
