"""The reference's call habits: strict keywords on the acting methods (a misspelt ``explore``
is a TypeError, not a silently exploring call), and the deprecated names that still work with
a DeprecationWarning naming the new one (``compute_action``, ``MultiCallbacks``,
``foreach_worker(local_worker=...)``, callbacks with ``trainer=`` and ``on_trainer_init``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from rlconf import PGConfig
from runtime import Algorithm, DefaultCallbacks, MultiCallbacks

OBS = np.zeros(4, dtype=np.float32)


@pytest.fixture(scope="module")
def algo() -> Iterator[Algorithm]:
    algorithm = (
        PGConfig()
        .environment("CartPole-v1")
        .rollouts(num_workers=0, rollout_fragment_length=50)
        .training(train_batch_size=50)
        .debugging(seed=0)
        .build()
    )
    yield algorithm
    algorithm.stop()


def test_a_misspelt_keyword_is_a_type_error_with_did_you_mean(algo: Algorithm) -> None:
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'explor'.*'explore'"):
        algo.compute_single_action(OBS, explor=False)
    with pytest.raises(TypeError, match=r"compute_actions\(\).*'polcy_id'.*'policy_id'"):
        algo.compute_actions([OBS], polcy_id="default_policy")


def test_reference_inputs_are_accepted(algo: Algorithm) -> None:
    action = algo.compute_single_action(OBS, prev_action=None, prev_reward=None, info=None)
    assert action in (0, 1)
    # RLlib's episode input, for models that read episodes: taken, and as none here does, it
    # changes nothing.
    greedy = algo.compute_single_action(OBS, explore=False)
    assert algo.compute_single_action(OBS, episode="episode", explore=False) == greedy


def test_timestep_reaches_the_policy(algo: Algorithm) -> None:
    assert algo.compute_single_action(OBS, explore=False, timestep=10) in (0, 1)


def test_compute_action_is_compute_single_action_with_a_warning(algo: Algorithm) -> None:
    with pytest.warns(DeprecationWarning, match="compute_single_action"):
        action = algo.compute_action(OBS, explore=False)
    assert action == algo.compute_single_action(OBS, explore=False)


def test_foreach_worker_takes_local_worker_with_a_warning(algo: Algorithm) -> None:
    with pytest.warns(DeprecationWarning, match="local="):
        assert algo.workers.foreach_worker(lambda w: w.worker_index, local_worker=True) == [0]
    with pytest.warns(DeprecationWarning):
        assert algo.workers.foreach_worker(lambda w: w.worker_index, local_worker=False) == []


_SEEN: list[tuple[str, Any]] = []


def test_trainer_keyword_and_on_trainer_init_and_multi_callbacks_work() -> None:
    _SEEN.clear()
    with pytest.warns(DeprecationWarning, match="named algorithm"):

        class OldResult(DefaultCallbacks):
            def on_train_result(  # type: ignore[override]
                self, *, trainer: Any, result: dict[str, Any], **kw: Any
            ) -> None:
                _SEEN.append(("result", trainer))

    with pytest.warns(DeprecationWarning, match="on_algorithm_init"):

        class OldInit(DefaultCallbacks):
            def on_trainer_init(self, *, trainer: Any, **kw: Any) -> None:
                _SEEN.append(("init", trainer))

    with pytest.warns(DeprecationWarning, match="make_multi_callbacks"):
        both = MultiCallbacks([OldResult, OldInit])
    algorithm = (
        PGConfig()
        .environment("CartPole-v1")
        .rollouts(num_workers=0, rollout_fragment_length=50)
        .training(train_batch_size=50)
        .callbacks(both)
        .build()
    )
    try:
        algorithm.train()
        assert [kind for kind, _ in _SEEN] == ["init", "result"]
        assert all(target is algorithm for _, target in _SEEN)
    finally:
        algorithm.stop()
