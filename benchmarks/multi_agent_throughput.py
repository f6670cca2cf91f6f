"""Sampling throughput of multi-agent CartPole beside single-agent CartPole with as many agents.

One local RolloutWorker (num_workers=0) samples ``runtime.make_multi_agent("CartPole-v1")`` with
2 agents x 32 sub-envs and 8 agents x 8 sub-envs (64 agents in all), the agents split between
two policies (``agent_id % 2``), beside the single-agent CartPole-v1 with 64 sub-envs: the same
number of agents acting per step. PPO's default model ([256, 256], separate value network).

Measured like ``benchmarks/sampling_throughput.py``: one warm-up ``sample()``, then timed
``worker.sample()`` calls until ``STEPS`` agent steps; here repeated ``REPEATS`` times with the
single-agent and multi-agent workers taking turns (so a busy machine shifts both alike), and the
median rate of each kept. Each ``sample()`` gathers about 4096 agent steps.

In a multi-agent CartPole an episode lasts until every copy is done, and an agent whose copy is
done no longer acts: an env step holds fewer than ``num_agents`` agent steps. The comparison is
therefore per agent step (one policy forward row and one CartPole step each).

Target: multi-agent agent steps/s >= 0.7 x single-agent env steps/s, for both setups.
Prints a table, then one JSON object on its last line.
"""

from __future__ import annotations

import json
import statistics
import time
from typing import Any

from machine import print_machine

from rlconf import PolicySpec, PPOConfig
from runtime import MultiAgentBatch, RolloutWorker, make_multi_agent
from runtime.algorithms.ppo import PPO
from runtime.env.env_registry import env_creator_for

ENV = "CartPole-v1"
#: Agent steps per timed block, and timed blocks per setup.
STEPS = 40_000
REPEATS = 7
TOTAL_AGENTS = 64
#: (agents per env, sub-envs): each holds TOTAL_AGENTS agents.
SETUPS = [(2, 32), (8, 8)]
TARGET = 0.7

MultiAgentCartPole = make_multi_agent(ENV)


def map_agent(agent_id: Any, episode: Any = None, worker: Any = None, **kwargs: Any) -> str:
    return f"p{agent_id % 2}"


def map_to_one(agent_id: Any, episode: Any = None, worker: Any = None, **kwargs: Any) -> str:
    return "p0"


def make_worker(num_agents: int, num_envs: int, num_policies: int = 2) -> RolloutWorker:
    """A local worker; ``num_agents=0`` samples the single-agent env."""
    fragment = max(1, 4096 // (num_envs * max(1, num_agents)))
    config = (
        PPOConfig()
        .rollouts(num_workers=0, num_envs_per_worker=num_envs, rollout_fragment_length=fragment)
        .training(train_batch_size=4096)
        .debugging(seed=0)
    )
    if num_agents:
        config = config.environment(MultiAgentCartPole, env_config={"num_agents": num_agents})
        if num_policies == 2:
            config = config.multi_agent(
                policies={"p0": PolicySpec(), "p1": PolicySpec()}, policy_mapping_fn=map_agent
            )
        else:
            config = config.multi_agent(policies={"p0": PolicySpec()}, policy_mapping_fn=map_to_one)
    else:
        config = config.environment(ENV)
    frozen = config.freeze()
    return RolloutWorker(
        env_creator=env_creator_for(frozen["env"]),
        config=frozen,
        policy_class=PPO.policy_class,
        worker_index=0,
        num_workers=0,
    )


def steps_of(batch: Any) -> tuple[int, int]:
    """(env steps, agent steps) of a sampled batch."""
    if isinstance(batch, MultiAgentBatch):
        return batch.env_steps(), batch.agent_steps()
    return len(batch), len(batch)


def timed_block(worker: RolloutWorker) -> tuple[float, float]:
    """(env steps/s, agent steps/s) over ``sample()`` calls until STEPS agent steps."""
    env_steps = agent_steps = 0
    start = time.perf_counter()
    while agent_steps < STEPS:
        env, agents = steps_of(worker.sample())
        env_steps += env
        agent_steps += agents
    elapsed = time.perf_counter() - start
    return env_steps / elapsed, agent_steps / elapsed


def compare(num_agents: int, num_envs: int) -> dict[str, float]:
    """The single-agent worker, the multi-agent one with two policies and, to tell the cost of
    a second policy's forward pass from that of the multi-agent sampler, with one policy."""
    single = make_worker(0, TOTAL_AGENTS)
    multi = make_worker(num_agents, num_envs)
    one_policy = make_worker(num_agents, num_envs, num_policies=1)
    workers = (single, multi, one_policy)
    try:
        for worker in workers:
            worker.sample()  # warm-up: env resets, torch kernels
        rates: list[list[tuple[float, float]]] = [[], [], []]
        for _ in range(REPEATS):
            for worker, into in zip(workers, rates, strict=True):
                into.append(timed_block(worker))
    finally:
        for worker in workers:
            worker.stop()
    single_rate = statistics.median(env for env, _ in rates[0])
    env_rate = statistics.median(env for env, _ in rates[1])
    agent_rate = statistics.median(agents for _, agents in rates[1])
    one_policy_rate = statistics.median(agents for _, agents in rates[2])
    return {
        "single_env_steps_per_s": round(single_rate),
        "multi_env_steps_per_s": round(env_rate),
        "multi_agent_steps_per_s": round(agent_rate),
        "ratio_per_agent_step": round(agent_rate / single_rate, 2),
        "one_policy_agent_steps_per_s": round(one_policy_rate),
        "one_policy_ratio_per_agent_step": round(one_policy_rate / single_rate, 2),
    }


def main() -> None:
    print_machine()
    results: dict[str, Any] = {"env": ENV, "total_agents": TOTAL_AGENTS, "target": TARGET}
    print(
        f"{'setup':24s} {'env steps/s':>12s} {'agent steps/s':>14s} {'single-agent x64':>17s}"
        f" {'ratio':>6s}   {'1 policy: agent steps/s':>24s} {'ratio':>6s}"
    )
    for num_agents, num_envs in SETUPS:
        row = compare(num_agents, num_envs)
        name = f"agents{num_agents}_envs{num_envs}"
        results[name] = row
        print(
            f"{f'{num_agents}-agent x {num_envs} sub-envs':24s} "
            f"{row['multi_env_steps_per_s']:12d} {row['multi_agent_steps_per_s']:14d} "
            f"{row['single_env_steps_per_s']:17d} {row['ratio_per_agent_step']:6.2f}   "
            f"{row['one_policy_agent_steps_per_s']:24d} "
            f"{row['one_policy_ratio_per_agent_step']:6.2f}",
            flush=True,
        )
    results["meets_target"] = all(
        results[f"agents{a}_envs{e}"]["ratio_per_agent_step"] >= TARGET for a, e in SETUPS
    )
    print(json.dumps(results))


if __name__ == "__main__":
    main()
