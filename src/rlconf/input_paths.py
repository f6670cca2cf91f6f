"""``input`` checked against the files it names where a run starts: when an algorithm is built
(before any worker starts) and among ``rlconf train``'s checks. ``validate()`` does not look at
the disk, so an RLlib file naming data that lives elsewhere still loads and validates.

The readers (``runtime.offline.JsonReader``) read local files: a file, a folder (its ``*.json``),
a glob, or a list of those, also as the sources of ``{source: probability}`` and as
``input_config["path"]`` of RLlib 2.x's ``input="dataset"``. A path that matches no file, or a
remote URI (``s3://``, ``hdfs:/``, ...), which they can't read, is refused here with what is
allowed, rather than failing in a worker as it starts. A function, ``"sampler"`` and
``"minari://<dataset id>"`` (resolved by Minari) are not checked here.
"""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rlconf.errors import FieldIssue

SAMPLER = "sampler"
DATASET = "dataset"
MINARI_SCHEME = "minari://"

#: A URI scheme: two or more characters before the colon, so that a Windows drive (``C:``)
#: is a path.
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]+):")

ALLOWED = (
    "an existing file, folder (of *.json files) or glob on this machine, a list of them, "
    f"{SAMPLER!r}, {{source: probability}} (a source may be {SAMPLER!r}), "
    f"'{MINARI_SCHEME}<dataset id>', or fn(io_context) -> reader"
)


def path_problem(item: Any) -> str | None:
    """Why the readers would find no file for ``item`` (None: they find at least one), as they
    resolve it: a folder's ``*.json``, a file, else a glob."""
    if not isinstance(item, str | os.PathLike):
        return None  # the field's type check names anything else
    text = os.fspath(item)
    scheme = _SCHEME.match(text)
    if scheme is not None:
        return (
            f"is a URI ({scheme.group(1)}:), and rlconf reads only local paths (remote storage "
            "such as s3:// or hdfs:/ is not read: copy the files to a local folder)"
        )
    try:
        path = Path(text).expanduser()
        if path.is_dir():
            return None if any(path.glob("*.json")) else "is a folder holding no *.json files"
        if path.is_file() or glob.glob(os.path.expanduser(text)):
            return None
    except (OSError, ValueError) as exc:  # a name the OS refuses (too long, a NUL in it)
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        return f"can't be read as a path here ({reason})"
    return "is no existing file or folder, and no glob matching a file"


def _problems(items: Any, each: str) -> list[str]:
    """The problems of several paths, each naming its path (``each`` before it)."""
    return [
        f"{each}{item!r} {problem}" for item in items if (problem := path_problem(item)) is not None
    ]


def input_issues(
    value: Any, input_config: Any, label: str = "input", config_label: str = "input_config"
) -> list[FieldIssue]:
    """The issues of ``input`` = ``value`` (``label`` names it; ``input_config`` is read for
    ``"dataset"``)."""
    if callable(value) or value is None:
        return []
    if isinstance(value, str):
        if value == SAMPLER or value.startswith(MINARI_SCHEME):
            return []
        if value == DATASET:
            return _dataset_issues(input_config, config_label)
    if isinstance(value, Mapping):
        sources = [s for s in value if s != SAMPLER and not str(s).startswith(MINARI_SCHEME)]
        problems = _problems(sources, "source ")
    elif isinstance(value, list | tuple):
        problems = _problems(value, "")
    else:
        problem = path_problem(value)
        problems = [] if problem is None else [problem]
    return [FieldIssue(label, problem, value, allowed=ALLOWED) for problem in problems]


def _dataset_issues(input_config: Any, label: str) -> list[FieldIssue]:
    """RLlib 2.x's ``input="dataset"``: the files are ``input_config["path"]`` (its format is
    checked where the reader is made)."""
    if not isinstance(input_config, Mapping) or input_config.get("format") != "json":
        return []
    path = input_config.get("path")
    if isinstance(path, list | tuple):
        problems = _problems(path, "")
    else:
        problem = path_problem(path)
        problems = [] if problem is None else [problem]
    return [
        FieldIssue(
            f"{label}.path",
            problem,
            path,
            allowed="an existing file, folder (of *.json files) or glob on this machine, or a "
            "list of them",
        )
        for problem in problems
    ]
