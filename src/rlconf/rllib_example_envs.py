"""RLlib's example envs by their RLlib import paths: a tuned file or script that names
``ray.rllib.examples.env.random_env.RandomLargeObsSpaceEnv`` (RLlib 2.x) or
``ray.rllib.examples.envs.classes.stateless_cartpole.StatelessCartPole`` (later) gets the env of
that name in ``runtime.example_envs``, so the file runs unchanged (RLlib itself is not needed,
nor imported)."""

from __future__ import annotations

from rlconf.importpath import split

#: The packages RLlib keeps its example envs in (2.x, then 2.10 and later).
RLLIB_PACKAGES = ("ray.rllib.examples.env.", "ray.rllib.examples.envs.classes.")
HERE = "runtime.example_envs"


def our_example_env(path: str) -> str | None:
    """``runtime.example_envs:<Name>`` for an import path into RLlib's example envs (an env
    ``runtime.example_envs`` lacks then fails to import, naming that module); None for any
    other path."""
    module, name = split(path)
    if name and any((module + ".").startswith(p) for p in RLLIB_PACKAGES):
        return f"{HERE}:{name}"
    return None
