"""``LearnerThread``: the learner of an asynchronous algorithm (IMPALA, APPO), updating in a
thread of its own while the driver keeps collecting samples.

Train batches arrive through a bounded queue (``learner_queue_size``); the driver's put waits
at most ``learner_queue_timeout`` seconds for room. Each batch is learned on
``num_sgd_iter`` times, interleaved over a buffer of ``minibatch_buffer_size`` batches (the
reference's minibatch buffer: a slot is refilled from the queue once its batch has been
used that many times). After each update the thread's weights version goes up by one and
the update's info comes out on ``results``.

``lock`` is held during each update: the driver takes it to read the learned weights (the
weight broadcast) and to act with the learner's policy, which must not see a half-done step.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from runtime.core.multi_agent_batch import MultiAgentBatch

logger = logging.getLogger(__name__)


@dataclass
class LearnerUpdate:
    """One update: the batch learned on, its info, and the weights version it made."""

    batch: MultiAgentBatch
    info: dict[str, Any]
    version: int
    #: Whether this was the last use of the batch (it counts as trained once).
    released: bool


@dataclass
class QueueStats:
    """How long the driver waited for room in the queue and the learner for a batch."""

    put_wait_s: list[float] = field(default_factory=list)
    get_wait_s: list[float] = field(default_factory=list)
    sizes: list[int] = field(default_factory=list)

    def pop(self) -> dict[str, float]:
        out = {
            "put_wait_s_mean": _mean(self.put_wait_s),
            "get_wait_s_mean": _mean(self.get_wait_s),
            "size_mean": _mean([float(s) for s in self.sizes]),
            "size_max": float(max(self.sizes, default=0)),
        }
        self.put_wait_s, self.get_wait_s, self.sizes = [], [], []
        return out


def _mean(values: list[float]) -> float:
    return float(sum(values) / len(values)) if values else 0.0


class LearnerThread(threading.Thread):
    """Updates ``worker``'s learners (``worker.learn_on_batch``) on the batches put in."""

    def __init__(
        self,
        worker: Any,
        *,
        queue_size: int,
        queue_timeout: float,
        num_sgd_iter: int,
        minibatch_buffer_size: int,
    ) -> None:
        super().__init__(name="rlconf-learner", daemon=True)
        self.worker = worker
        self.inqueue: queue.Queue[MultiAgentBatch] = queue.Queue(maxsize=queue_size)
        self.results: queue.Queue[LearnerUpdate] = queue.Queue()
        self.queue_timeout = float(queue_timeout)
        self.num_sgd_iter = int(num_sgd_iter)
        #: Reentrant: a checkpoint taken under it reads the weights under it again.
        self.lock = threading.RLock()
        self.version = 0
        self.stats = QueueStats()
        #: The exception that ended the thread, raised again in the driver's next step.
        self.error: BaseException | None = None
        self._stop_event = threading.Event()
        self._slots: list[MultiAgentBatch | None] = [None] * max(1, int(minibatch_buffer_size))
        self._uses_left = [0] * len(self._slots)
        self._slot = 0
        self._waiting_since: float | None = None

    def put(self, batch: MultiAgentBatch) -> None:
        """Queue ``batch`` for learning, waiting at most ``learner_queue_timeout`` for room."""
        self.check()
        started = time.perf_counter()
        try:
            self.inqueue.put(batch, timeout=self.queue_timeout)
        except queue.Full:
            self.check()
            raise TimeoutError(
                f"the learner queue stayed full for learner_queue_timeout={self.queue_timeout:g} "
                "s: the learner is far slower than sampling (raise learner_queue_timeout, or "
                "lower num_sgd_iter or the number of workers)"
            ) from None
        self.stats.put_wait_s.append(time.perf_counter() - started)
        self.stats.sizes.append(self.inqueue.qsize())

    def check(self) -> None:
        """Raise the exception the thread stopped with, if any."""
        if self.error is not None:
            raise RuntimeError(f"the learner thread failed: {self.error!r}") from self.error

    def stop(self) -> None:
        self._stop_event.set()
        if self.is_alive():
            self.join(timeout=10.0)

    def run(self) -> None:
        try:
            while not self._stop_event.is_set():
                taken = self._next_batch()
                if taken is None:
                    continue
                batch, released = taken
                with self.lock:
                    info = self.worker.learn_on_batch(batch)
                    self.version += 1
                    version = self.version
                self.results.put(LearnerUpdate(batch, info, version, released))
        except BaseException as error:
            logger.error("the learner thread stopped: %r", error)
            self.error = error

    def _next_batch(self) -> tuple[MultiAgentBatch, bool] | None:
        """The next batch to learn on and whether this is its last use; None while none came
        within a short wait (so that a stop is seen)."""
        slot = self._slot
        if self._uses_left[slot] <= 0:
            if self._waiting_since is None:
                self._waiting_since = time.perf_counter()
            try:
                self._slots[slot] = self.inqueue.get(timeout=0.1)
            except queue.Empty:
                return None
            self.stats.get_wait_s.append(time.perf_counter() - self._waiting_since)
            self._waiting_since = None
            self._uses_left[slot] = self.num_sgd_iter
        batch = self._slots[slot]
        assert batch is not None
        self._uses_left[slot] -= 1
        self._slot = (slot + 1) % len(self._slots)
        return batch, self._uses_left[slot] <= 0
