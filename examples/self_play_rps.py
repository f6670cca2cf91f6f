"""League self-play on PettingZoo's rock-paper-scissors (``pip install -e ".[pettingzoo]"``).

One policy, "main", learns; every ``--snapshot-every`` iterations a callback freezes a copy of
it into the league (``main_v1``, ``main_v2``, ...) with ``algorithm.add_policy(...,
policy_state=main.get_state())``. In each episode one player (which one alternates) acts with
"main" and the other with a league member picked at random, or with "main" itself while the
league is empty. Only "main" trains (``policies_to_train=["main"]``), so the snapshots stay as
they were: "main" keeps playing against its own past versions. Rock-paper-scissors has no
strategy that beats every other (the uniform mix is its equilibrium), so main's return swings
around 0 as it exploits one snapshot and is exploited by another: the example shows the league
at work, not a learning curve.

The env is PettingZoo's turn-based (AEC) ``rps_v2.env()`` wrapped in ``runtime.PettingZooEnv``;
``--parallel`` uses ``rps_v2.parallel_env()`` in ``runtime.ParallelPettingZooEnv`` instead. An
episode is 15 rounds of +1 (win), 0 (draw) or -1 (loss) for each player.

Run it::

    python examples/self_play_rps.py                  # 20 iterations, league of 6, ~5 s
    python examples/self_play_rps.py --iterations 40 --snapshot-every 5 --parallel
"""

from __future__ import annotations

import argparse
import importlib
import os
import random
import sys
import warnings
from collections.abc import Sequence
from typing import Any

from rlconf import PPOConfig
from runtime import DefaultCallbacks, ParallelPettingZooEnv, PettingZooEnv, register_env

MAIN = "main"
SNAPSHOT_PREFIX = "main_v"
PLAYERS = ("player_0", "player_1")


def _rps() -> Any:
    # PettingZoo's classic envs warn about its old env-creation API when imported.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return importlib.import_module("pettingzoo.classic.rps_v2")


def make_rps(ctx: Any) -> PettingZooEnv:
    """The turn-based env: players move one after the other, each seeing the other's last move
    only after the round."""
    return PettingZooEnv(_rps().env())


def make_parallel_rps(ctx: Any) -> ParallelPettingZooEnv:
    """The same game with the parallel API: both players move at every step."""
    return ParallelPettingZooEnv(_rps().parallel_env())


register_env("rps", make_rps)
register_env("rps_parallel", make_parallel_rps)


def league(worker: Any) -> list[str]:
    """The frozen snapshots a worker holds (every worker gets each one from ``add_policy``)."""
    return [pid for pid in worker.policy_map if pid.startswith(SNAPSHOT_PREFIX)]


def map_agent(agent_id: Any, episode: Any, worker: Any = None, **kwargs: Any) -> str:
    """One player acts with "main" (player_0 in even episodes, player_1 in odd ones), the other
    with a random snapshot from the league (the same one for the whole episode: each agent is
    mapped once per episode), or with "main" itself while the league is empty."""
    main_side = PLAYERS[episode.episode_id % 2]
    if agent_id == main_side:
        return MAIN
    snapshots = league(worker) if worker is not None else []
    if not snapshots:
        return MAIN
    return random.Random(episode.episode_id).choice(snapshots)


class LeagueCallbacks(DefaultCallbacks):
    """Every ``snapshot_every`` iterations, add a frozen copy of "main" to the league; put the
    league's size in the result as ``league_size``."""

    #: Iterations per snapshot (``--snapshot-every`` sets it).
    snapshot_every = 3

    def on_train_result(self, *, algorithm: Any, result: dict[str, Any], **kwargs: Any) -> None:
        local = algorithm.workers.local_worker()
        iteration = result["training_iteration"]
        if iteration % self.snapshot_every == 0:
            version = iteration // self.snapshot_every
            # Spaces as "main" has them: a mapping function that picks opponents at random
            # may not map any agent to the new id when add_policy would infer them.
            obs_space, act_space = local.get_policy_spaces()[MAIN]
            algorithm.add_policy(
                f"{SNAPSHOT_PREFIX}{version}",
                observation_space=obs_space,
                action_space=act_space,
                policy_state=algorithm.get_policy(MAIN).get_state(),
                policy_mapping_fn=map_agent,
                policies_to_train=[MAIN],
            )
        result["league_size"] = len(league(local))


def make_config(parallel: bool = False, seed: int = 0) -> PPOConfig:
    return (
        PPOConfig()
        .environment("rps_parallel" if parallel else "rps")
        .rollouts(num_workers=0, num_envs_per_worker=8, rollout_fragment_length=32)
        .training(
            lr=1e-3,
            train_batch_size=512,
            sgd_minibatch_size=128,
            num_sgd_iter=10,
            entropy_coeff=0.01,
            model={"fcnet_hiddens": [32, 32]},
        )
        .multi_agent(policies={MAIN}, policy_mapping_fn=map_agent, policies_to_train=[MAIN])
        .callbacks(LeagueCallbacks)
        .reporting(metrics_num_episodes_for_smoothing=50)
        .debugging(seed=seed)
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--iterations",
        type=int,
        default=int(os.environ.get("RLCONF_EXAMPLE_ITERATIONS", 20)),
        help="training iterations",
    )
    parser.add_argument("--snapshot-every", type=int, default=3, help="iterations per snapshot")
    parser.add_argument("--parallel", action="store_true", help="the parallel PettingZoo API")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    LeagueCallbacks.snapshot_every = args.snapshot_every
    algo = make_config(args.parallel, args.seed).build()
    try:
        for _ in range(args.iterations):
            result = algo.train()
            rewards = result["policy_reward_mean"]
            print(
                f"iter {result['training_iteration']:3d}  env steps {result['timesteps_total']:6d}"
                f"  league {result['league_size']:2d}  main's mean return "
                f"{rewards.get(MAIN, float('nan')):6.2f}",
                flush=True,
            )
        policies = sorted(algo.get_weights())
    finally:
        algo.stop()
    print(f"league of {len(policies) - 1} snapshots: {', '.join(policies)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
