"""``SubEnvRestarts``: what an env runner does when one of its sub-envs raises in ``reset()`` or
``step()``.

With ``restart_failed_sub_environments`` the sub-env is closed (errors ignored: it is broken
already) and made again by its worker, with the same env creator and context; the runner then
drops the episode the sub-env was running (its rows are not in any batch) and reports it as a
faulty episode (``num_faulty_episodes``), and the other sub-envs are not disturbed. Without it
the exception goes on unchanged, with a note naming the sub-env and the setting.
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

logger = logging.getLogger(__name__)

#: Resets a sub-env may fail in a row, each on a newly made env, before the worker gives up: a
#: sub-env that never resets can't run an episode, and an error beats a worker that spins.
MAX_FAILED_RESETS = 10


class SubEnvMaker(Protocol):
    worker_index: int

    def recreate_sub_environment(self, index: int) -> Any: ...


class SubEnvRestarts:
    """The restarts of one runner's sub-envs (``envs``, the list the runner steps: a restarted
    sub-env takes its old one's place in it)."""

    def __init__(self, worker: SubEnvMaker, envs: list[Any], enabled: bool) -> None:
        self.worker = worker
        self.envs = envs
        self.enabled = enabled
        #: Sub-envs made again since their last reset: their next reset is seeded like a
        #: first one (with a ``seed``), as a newly made sub-env's is.
        self._fresh: set[int] = set()

    def restart(self, index: int, call: str, error: Exception) -> None:
        """Called while ``error`` (raised by sub-env ``index``'s ``call``) is being handled:
        make the sub-env again, or raise ``error`` with a note when restarts are off."""
        label = self.label(index)
        if not self.enabled:
            error.add_note(
                f"(raised by sub-environment {index} ({label}) of rollout worker "
                f"{self.worker.worker_index} in {call}; fault_tolerance("
                "restart_failed_sub_environments=True) makes such a sub-environment again and "
                "goes on sampling)"
            )
            raise error
        logger.warning(
            "sub-environment %d (%s) of rollout worker %d raised in %s: %s: %s; making it again "
            "(its episode is dropped)",
            index,
            label,
            self.worker.worker_index,
            call,
            type(error).__name__,
            error,
        )
        close = getattr(self.envs[index], "close", None)
        if close is not None:
            try:
                close()
            except Exception:  # a broken env may fail to close too; it is dropped anyway
                logger.debug("closing the failed sub-environment %d raised", index, exc_info=True)
        self.envs[index] = self.worker.recreate_sub_environment(index)
        self._fresh.add(index)

    def reset(
        self, index: int, seed: int | None, first_seed: int | None
    ) -> tuple[Any, int | None, int]:
        """Sub-env ``index``'s ``reset(seed=seed)``, or ``reset(seed=first_seed)`` when it was
        made again since its last reset (a newly made sub-env is seeded as at the start); with
        restarts, a sub-env that raises is made again and reset again, up to
        ``MAX_FAILED_RESETS`` times in a row. Returns what the reset returned, the seed it was
        given and how many resets failed (each a faulty episode)."""
        failed = 0
        while True:
            used = first_seed if index in self._fresh else seed
            try:
                output = self.envs[index].reset(seed=used)
            except Exception as error:
                failed += 1
                if failed > MAX_FAILED_RESETS:
                    raise RuntimeError(
                        f"sub-environment {index} ({self.label(index)}) of rollout worker "
                        f"{self.worker.worker_index} failed to reset {failed} times in a row, "
                        "each time made again (restart_failed_sub_environments=True); the last "
                        "error is above"
                    ) from error
                self.restart(index, "reset()", error)
                continue
            self._fresh.discard(index)
            return output, used, failed

    def label(self, index: int) -> str:
        env = self.envs[index]
        return type(getattr(env, "unwrapped", env)).__name__
