"""``PolicyMap``: the policies of one rollout worker by id, at most ``capacity`` of them in
memory. The least recently used others are evicted to a folder on disk (module weights, the
learner's optimizers and target networks, the JSON state) and rebuilt from it when used again,
so a worker can hold many policies (league play, policy pools) in bounded memory.

Each cache entry is written with ``write_checkpoint`` (a temporary folder renamed into place):
an interrupted eviction leaves no half-written entry behind.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
import uuid
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterator, MutableMapping
from pathlib import Path
from typing import Any

from runtime.core.policy import TorchPolicy
from runtime.training import checkpoint_files as files

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


class PolicyMap(MutableMapping[str, TorchPolicy]):
    """Policies of one worker by id; at most ``capacity`` in memory, the least recently used
    others stored in ``cache_dir`` and reloaded on use.

    ``make_policy(policy_id)`` builds a fresh policy for an id; a reload builds one with it and
    restores what the eviction stored. ``cache_dir=None`` uses a private temporary folder,
    made at the first eviction. Otherwise the map writes into its own subfolder of
    ``cache_dir`` (several workers may share one). ``close()`` removes that folder and forgets
    the evicted policies. ``after_load(policy_id, policy)``, when set, is called after each
    reload (e.g. to hand the policy the current global timestep).

    Reading every value (``values()``, ``items()``) with more policies than ``capacity``
    reloads each evicted one in turn, evicting others: iterate the ids and ``peek()`` instead
    when the in-memory ones are enough.
    """

    def __init__(
        self,
        capacity: int,
        cache_dir: str | os.PathLike[str] | None,
        make_policy: Callable[[str], TorchPolicy],
    ) -> None:
        if capacity < 1:
            raise ValueError(f"PolicyMap: capacity must be at least 1, got {capacity}")
        self.capacity = int(capacity)
        self.make_policy = make_policy
        self.after_load: Callable[[str, TorchPolicy], None] | None = None
        self._cache_dir = None if cache_dir is None else Path(cache_dir)
        if self._cache_dir is not None:
            self._cache_dir.mkdir(parents=True, exist_ok=True)
        self._ids: dict[str, None] = {}  # every id, in insertion order
        self._memory: OrderedDict[str, TorchPolicy] = OrderedDict()  # least recently used first
        self._cached: dict[str, Path] = {}
        self._folder: Path | None = None
        self._cleanup: weakref.finalize[Any, Any] | None = None

    # ------------------------------------------------------------------ mapping

    def __getitem__(self, policy_id: str) -> TorchPolicy:
        policy = self._memory.get(policy_id)
        if policy is not None:
            self._memory.move_to_end(policy_id)
            return policy
        if policy_id not in self._cached:
            raise KeyError(f"no policy {policy_id!r} in this PolicyMap; known ids: {list(self)}")
        policy = self._load(policy_id)
        self._memory[policy_id] = policy
        self._evict()
        if self.after_load is not None:
            self.after_load(policy_id, policy)
        return policy

    def __setitem__(self, policy_id: str, policy: TorchPolicy) -> None:
        self._drop_cached(policy_id)
        self._ids[policy_id] = None
        self._memory[policy_id] = policy
        self._memory.move_to_end(policy_id)
        self._evict()

    def __delitem__(self, policy_id: str) -> None:
        if policy_id not in self._ids:
            raise KeyError(f"no policy {policy_id!r} in this PolicyMap; known ids: {list(self)}")
        del self._ids[policy_id]
        self._memory.pop(policy_id, None)
        self._drop_cached(policy_id)

    def __iter__(self) -> Iterator[str]:
        return iter(self._ids)

    def __len__(self) -> int:
        return len(self._ids)

    def __contains__(self, policy_id: object) -> bool:
        # Mapping's default would call __getitem__, reloading an evicted policy.
        return policy_id in self._ids

    def __repr__(self) -> str:
        memory = self.in_memory()
        return f"PolicyMap(capacity={self.capacity}, ids={list(self)}, in_memory={memory})"

    # ------------------------------------------------------------------ cache

    def in_memory(self) -> list[str]:
        """The ids of the policies in memory, least recently used first."""
        return list(self._memory)

    def is_cached(self, policy_id: str) -> bool:
        """Whether ``policy_id`` is evicted to disk (not in memory)."""
        return policy_id in self._cached

    def peek(self, policy_id: str) -> TorchPolicy | None:
        """The in-memory policy, without reloading it or changing the LRU order; None when
        evicted (or unknown)."""
        return self._memory.get(policy_id)

    def close(self) -> None:
        """Remove this map's cache folder; the evicted policies are forgotten, the ones in
        memory stay (a later eviction makes a new folder)."""
        for policy_id in self._cached:
            del self._ids[policy_id]
        self._cached.clear()
        if self._cleanup is not None:
            self._cleanup()
        self._folder = self._cleanup = None

    def __enter__(self) -> PolicyMap:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _evict(self) -> None:
        while len(self._memory) > self.capacity:
            policy_id, policy = next(iter(self._memory.items()))
            self._cached[policy_id] = self._save(policy_id, policy)
            del self._memory[policy_id]

    def _entry(self, policy_id: str) -> Path:
        if self._folder is None:
            if self._cache_dir is None:
                self._folder = Path(tempfile.mkdtemp(prefix="rlconf-policy-cache-"))
            else:
                self._folder = self._cache_dir / uuid.uuid4().hex
                self._folder.mkdir(parents=True)
            # Removes the folder also when close() is never called (at collection or exit).
            self._cleanup = weakref.finalize(self, shutil.rmtree, self._folder, True)
        # Ids may hold any character: a readable prefix and a hash keep names safe and unique.
        digest = hashlib.sha256(policy_id.encode()).hexdigest()[:12]
        return self._folder / f"{_UNSAFE.sub('_', policy_id)[:48]}-{digest}"

    def _save(self, policy_id: str, policy: TorchPolicy) -> Path:
        # Not policy.get_state(): it would make a learner for a policy that only acts.
        policy.pull_weights_if_stale()
        learner = policy._learner
        state: dict[str, Any] = {
            "global_timestep": policy.global_timestep,
            "exploration": policy.exploration.get_state(),
        }
        tensors: dict[str, Any] = {"module": policy.module.state_dict()}
        if learner is not None:
            learner_tensors = learner.get_tensor_state()
            state["learner"] = learner.get_state()
            state["learner_tensors"] = sorted(learner_tensors)
            tensors.update({f"learner/{name}": t for name, t in learner_tensors.items()})
        path = self._entry(policy_id)
        # The cache is this process's own scratch space: no manifest (hashing every file of
        # every eviction) to write or check.
        files.write_checkpoint(path, state, tensors, manifest=False)
        return path

    def _load(self, policy_id: str) -> TorchPolicy:
        path = self._cached[policy_id]
        state = files.decode_floats(files.read_state(path))
        policy = self.make_policy(policy_id)
        policy.module.load_state_dict(files.read_tensors(path, "module", policy.device))
        policy.exploration.set_state(state.get("exploration", {}))
        if "learner" in state:
            learner = policy.learner
            learner.set_tensor_state(
                {
                    name: files.read_tensors(path, f"learner/{name}", policy.device)
                    for name in state["learner_tensors"]
                }
            )
            learner.set_state(state["learner"])
        policy.on_global_var_update({"timestep": int(state["global_timestep"])})
        # Only once the policy is rebuilt: a failed reload keeps its files.
        self._drop_cached(policy_id)
        return policy

    def _drop_cached(self, policy_id: str) -> None:
        path = self._cached.pop(policy_id, None)
        if path is not None:
            shutil.rmtree(path, ignore_errors=True)
