"""Where a rollout worker writes what it samples (``output``): experience files in a folder
(``JsonWriter``), a Minari dataset (``"minari://<id>"``), or the writer a function makes from
the worker's ``IOContext``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from runtime.offline.io_context import IOContext
from runtime.offline.json_writer import JsonWriter, OutputWriter

MINARI_SCHEME = "minari://"


def make_output_writer(
    output: str | Callable[[IOContext], Any] | None, ioctx: IOContext
) -> OutputWriter | None:
    """The worker's writer, or None (``output=None``; a function that returned None)."""
    if output is None:
        return None
    if callable(output):
        made = output(ioctx)
        if made is not None and not callable(getattr(made, "write", None)):
            raise TypeError(
                f"output={output!r} returned a {type(made).__name__}; allowed: a writer with a "
                "write(batch) method (runtime.offline.OutputWriter), or None"
            )
        return made  # type: ignore[no-any-return]
    if output.startswith(MINARI_SCHEME):
        from runtime.offline.minari_output import MinariWriter

        return MinariWriter(output[len(MINARI_SCHEME) :], ioctx)
    return JsonWriter(output, ioctx)
