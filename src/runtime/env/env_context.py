"""``EnvContext``: the env_config dict an env creator receives, plus where the env runs."""

from __future__ import annotations

from typing import Any


class EnvContext(dict[str, Any]):
    """The ``env_config`` dict with the worker's index, the worker count, the sub-env's index
    within its worker and whether it runs in a remote process."""

    def __init__(
        self,
        env_config: dict[str, Any],
        worker_index: int,
        vector_index: int = 0,
        remote: bool = False,
        num_workers: int | None = None,
    ) -> None:
        super().__init__(env_config)
        self.worker_index = worker_index
        self.vector_index = vector_index
        self.remote = remote
        self.num_workers = num_workers

    def copy_with_overrides(
        self,
        env_config: dict[str, Any] | None = None,
        worker_index: int | None = None,
        vector_index: int | None = None,
        remote: bool | None = None,
        num_workers: int | None = None,
    ) -> EnvContext:
        return EnvContext(
            dict(self) if env_config is None else env_config,
            self.worker_index if worker_index is None else worker_index,
            self.vector_index if vector_index is None else vector_index,
            self.remote if remote is None else remote,
            self.num_workers if num_workers is None else num_workers,
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (
            EnvContext,
            (dict(self), self.worker_index, self.vector_index, self.remote, self.num_workers),
        )
