"""An episode keeps every observation only where a hook may read them through RLlib's new-stack
getters: hooks written for RLlib 2.x (naming ``worker``, ``base_env``, ``policies``) see the
last one through the episode's accessors, and an Atari run with such a hook holds no frames."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import pytest

from rlconf import PPOConfig
from runtime import DefaultCallbacks


class OldStyle(DefaultCallbacks):
    seen: ClassVar[list[dict[str, Any]]] = []

    def on_episode_end(
        self, *, worker: Any, base_env: Any, policies: Any, episode: Any, **kwargs: Any
    ) -> None:
        record = episode._records["agent0"]
        entry: dict[str, Any] = {
            "held": len(record.observations),
            "last_obs": episode.last_observation_for(),
            "actions": len(episode.get_actions()),
            "length": len(episode),
        }
        try:
            episode.get_observations()
        except RuntimeError as error:
            entry["error"] = str(error)
        type(self).seen.append(entry)


class NewStyle(DefaultCallbacks):
    seen: ClassVar[list[dict[str, Any]]] = []

    def on_episode_end(
        self, *, episode: Any, env_runner: Any, metrics_logger: Any, **kwargs: Any
    ) -> None:
        type(self).seen.append({"obs": len(episode.get_observations()), "length": len(episode)})


def _run(callbacks: type[DefaultCallbacks]) -> None:
    algo = (
        PPOConfig()
        .environment("CartPole-v1")
        .rollouts(num_workers=0, rollout_fragment_length=200)
        .training(train_batch_size=200, sgd_minibatch_size=100, num_sgd_iter=1)
        .callbacks(callbacks)
        .debugging(seed=0)
        .build()
    )
    try:
        algo.workers.local_worker().sample()
    finally:
        algo.stop()


def test_a_2x_hook_sees_the_last_observation_and_no_history_is_held() -> None:
    OldStyle.seen.clear()
    _run(OldStyle)
    assert OldStyle.seen
    for entry in OldStyle.seen:
        assert entry["held"] == 0
        assert isinstance(entry["last_obs"], np.ndarray) and entry["last_obs"].shape == (4,)
        assert entry["actions"] == entry["length"] > 0
        assert "new API stack" in entry["error"] and "last_observation_for()" in entry["error"]


def test_a_new_stack_hook_gets_every_observation() -> None:
    NewStyle.seen.clear()
    _run(NewStyle)
    assert NewStyle.seen
    assert all(entry["obs"] == entry["length"] + 1 for entry in NewStyle.seen)


@pytest.mark.parametrize("cls", [OldStyle, NewStyle])
def test_which_hooks_keep_the_history(cls: type[DefaultCallbacks]) -> None:
    from runtime.hook_calls import may_read_history

    assert may_read_history(cls.on_episode_end) is (cls is NewStyle)
    assert may_read_history(lambda **kwargs: None)
