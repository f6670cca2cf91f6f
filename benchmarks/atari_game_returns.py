"""Whole-game returns of an Atari run under the DeepMind wrappers, in game points.

The DeepMind wrappers end an episode at every lost life (``runtime.env.atari.EpisodicLife``), so
``episode_reward_mean`` is the mean over the last 100 lives (docs/guide/models.md, "Images and
Atari"), while
Stable-Baselines3's ``Monitor`` sits under its ``AtariWrapper`` and reports whole games. This
callback adds up the lives of each game, sub-env by sub-env, and adds to every result:

- ``game_reward_mean``: the mean return of the last ``GAMES`` whole games (SB3's
  ``ep_info_buffer`` window; null until a game has ended), in game points: the returns the
  runner sums are the env's rewards, before ``clip_rewards`` clips them for learning;
- ``games_total``: the games ended so far.

A game is over where the life that ended was its last (``EpisodicLife.game_over``: the game
itself terminated or was truncated); an env without ``EpisodicLife`` counts each episode as a
game. The games are kept by the sampling worker's callbacks and read from the driver's:
``num_workers`` must be 0 (on_algorithm_init says so otherwise).

    rlconf train -f examples/tuned/breakout-ppo.yaml \\
        --config '{"callbacks": "benchmarks.atari_game_returns:WholeGameReturns"}'
"""

from __future__ import annotations

from collections import deque
from typing import Any

from runtime import DefaultCallbacks
from runtime.env.atari import EpisodicLife

#: The games averaged in ``game_reward_mean`` (SB3's ``stats_window_size``).
GAMES = 100


def game_over(env: Any) -> bool:
    """Whether the game of ``env`` (a sub-env, wrappers and all) is over: its
    ``EpisodicLife``'s flag, or True where there is none (each episode is a game)."""
    while env is not None:
        if isinstance(env, EpisodicLife):
            return env.game_over
        env = getattr(env, "env", None)
    return True


class WholeGameReturns(DefaultCallbacks):
    """Sums each sub-env's lives into games; see the module's docstring."""

    def __init__(self) -> None:
        super().__init__()
        #: The running game's return so far, by sub-env.
        self.running: dict[int, float] = {}
        self.games: deque[float] = deque(maxlen=GAMES)
        self.games_total = 0

    def on_algorithm_init(self, *, algorithm: Any, **kwargs: Any) -> None:
        workers = algorithm.workers.num_workers
        if workers:
            raise ValueError(
                f"WholeGameReturns: num_workers={workers}, and it reads the games of the "
                "driver's own rollout worker only: use num_workers=0"
            )

    def on_episode_end(
        self, *, worker: Any, base_env: Any, episode: Any, env_index: int, **kwargs: Any
    ) -> None:
        total = self.running.get(env_index, 0.0) + float(episode.total_reward)
        if game_over(base_env.get_sub_environments()[env_index]):
            self.games.append(total)
            self.games_total += 1
            total = 0.0
        self.running[env_index] = total

    def on_train_result(self, *, algorithm: Any, result: dict[str, Any], **kwargs: Any) -> None:
        sampling = algorithm.workers.local_worker().callbacks
        games = sampling.games
        result["game_reward_mean"] = sum(games) / len(games) if games else None
        result["games_total"] = sampling.games_total
