"""Print the `uv pip install` flags that give uv the package sources pip is configured with
here (pip.conf and PIP_* variables: local wheel folders, extra indexes, constraints). uv reads
no pip configuration; with these flags it picks what pip would, including pip's choice of the
highest version across all indexes (`--index-strategy unsafe-best-match`)."""

from __future__ import annotations

import shlex
import subprocess
import sys

#: pip's setting -> uv's flag
FLAGS = {
    "index-url": "--index-url",
    "extra-index-url": "--extra-index-url",
    "find-links": "--find-links",
    "constraint": "--constraint",
}
#: Where pip reads a setting, lowest precedence first (the environment wins).
SCOPES = ("global", "install", ":env:")


def main() -> None:
    listed = subprocess.run(
        [sys.executable, "-m", "pip", "config", "list"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    values: dict[str, tuple[int, str]] = {}
    for line in listed.splitlines():
        name, _, raw = line.partition("=")
        scope, _, key = name.rpartition(".")
        if key not in FLAGS or scope not in SCOPES:
            continue
        rank = SCOPES.index(scope)
        if key not in values or rank >= values[key][0]:
            values[key] = (rank, raw.strip().strip("'\""))
    args = ["--index-strategy", "unsafe-best-match"]
    for key, (_, value) in sorted(values.items()):
        for item in value.split():
            args += [FLAGS[key], item]
    print(shlex.join(args))


if __name__ == "__main__":
    main()
