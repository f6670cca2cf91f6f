"""The external application API over loopback: ``PolicyClient.get_action`` round trips per
second with remote inference (1 and 4 concurrent clients, each a process of its own), and env
steps per second of local-inference clients stepping CartPole-v1 (acting with their own copy of
the policy, reporting rows), against one ``PolicyServerInput`` whose rows are drained by
``next()`` as an algorithm would.

Two models: the tuned CartPole one ([64, 64]) and PPO's default ([256, 256]); beside them, the
policy's own ``compute_actions`` for one observation (the floor of a remote round trip).

Target: >= 2,000 remote round trips/s with one client and the [64, 64] model.
Prints one JSON object on its last line.

    python benchmarks/policy_server.py [--seconds 5]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from machine import print_machine

from rlconf import PPOConfig
from runtime.algorithms.ppo import PPO
from runtime.env import policy_server_input
from runtime.env.policy_client import PolicyClient
from runtime.env.policy_server_input import PolicyServerInput
from runtime.env.rollout_worker import RolloutWorker
from runtime.offline.io_context import IOContext

OBS = gym.spaces.Box(-np.inf, np.inf, (4,), np.float32)
MODELS = {"small": [64, 64], "default": [256, 256]}
#: Seconds each client gets to start (import, connect, warm up) before the measured window; a
#: client late for it measures as long from when it is ready.
START_MARGIN_S = 3.0


def make_server(hiddens: list[int]) -> PolicyServerInput:
    config = (
        PPOConfig()
        .environment(None, observation_space=OBS, action_space=gym.spaces.Discrete(2))
        .rollouts(num_workers=0, rollout_fragment_length=1000)
        .training(model={"fcnet_hiddens": hiddens})
        .debugging(seed=0)
        .freeze()
    )
    worker = RolloutWorker(env_creator=None, config=config, policy_class=PPO.policy_class)
    return PolicyServerInput(IOContext(config=config, worker=worker), None, 0, idle_timeout=0.5)


def inference_rate(server: PolicyServerInput, seconds: float = 1.0) -> float:
    policy = server.worker.get_policy()
    obs = np.zeros((1, 4), np.float32)
    for _ in range(200):
        policy.compute_actions(obs)
    calls, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        policy.compute_actions(obs)
        calls += 1
    return calls / (time.perf_counter() - start)


class RequestTimes:
    """Time spent per request on the server: the whole POST (body read, parse, reply) and the
    command's execution within it (decode, act, encode)."""

    def __init__(self) -> None:
        self.post = self.execute = 0.0
        self.count = 0
        self._patched: list[tuple[Any, str, Any]] = []

    def __enter__(self) -> RequestTimes:
        handler, server = policy_server_input._Handler, policy_server_input.PolicyServerInput
        post, execute = handler._post, server.execute

        def timed_post(this: Any, owner: Any) -> None:
            start = time.perf_counter()
            post(this, owner)
            self.post += time.perf_counter() - start
            self.count += 1

        def timed_execute(this: Any, message: dict[str, Any]) -> dict[str, Any]:
            start = time.perf_counter()
            reply = execute(this, message)
            self.execute += time.perf_counter() - start
            return reply

        self._patched = [(handler, "_post", post), (server, "execute", execute)]
        handler._post = timed_post  # type: ignore[method-assign,assignment]
        server.execute = timed_execute  # type: ignore[method-assign,assignment]
        return self

    def __exit__(self, *exc: object) -> None:
        for owner, name, original in self._patched:
            setattr(owner, name, original)

    def per_request_us(self) -> dict[str, float]:
        n = max(1, self.count)
        return {"request_us": 1e6 * self.post / n, "execute_us": 1e6 * self.execute / n}


def execute_rate(server: PolicyServerInput, seconds: float = 1.0) -> float:
    """GET_ACTION commands per second without HTTP (decode, act, encode), in this thread."""
    episode = server.sampler.start_episode(None, True)
    message = {
        "command": "GET_ACTION",
        "episode_id": episode,
        "observation": {"dtype": "float32", "shape": [4], "b64": "AAAAAAAAAAAAAAAAAAAAAA=="},
    }
    for _ in range(200):
        server.execute(message)
    calls, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        server.execute(message)
        calls += 1
    rate = calls / (time.perf_counter() - start)
    server.sampler.end_episode(episode, np.zeros(4, np.float32))
    return rate


def run_clients(port: int, mode: str, count: int, seconds: float) -> float:
    """Start ``count`` client processes, measure the same window in each; the summed rate."""
    margin = START_MARGIN_S * (1 + count)
    start_at = time.time() + margin
    args = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--client",
        mode,
        "--port",
        str(port),
        "--start-at",
        str(start_at),
        "--seconds",
        str(seconds),
    ]
    processes = [
        subprocess.Popen([*args, "--seed", str(k)], stdout=subprocess.PIPE, text=True)
        for k in range(count)
    ]
    total = 0.0
    try:
        for process in processes:
            out, _ = process.communicate(timeout=margin + seconds + 120)
            if process.returncode != 0:
                raise RuntimeError(f"a {mode} client failed ({process.returncode})")
            total += float(json.loads(out.strip().splitlines()[-1])["rate"])
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
    return total


def client_main(mode: str, port: int, start_at: float, seconds: float, seed: int) -> None:
    # Several local-inference clients on one machine: one torch thread each (16 each on 16
    # cores starve one another: 80 steps/s in all with the default model).
    torch.set_num_threads(1)
    client = PolicyClient(f"127.0.0.1:{port}", mode, update_interval=2.0)
    if mode == "remote":
        obs = np.zeros(4, np.float32)
        episode = client.start_episode()
        for _ in range(300):  # warm up
            client.get_action(episode, obs)
        time.sleep(max(0.0, start_at - time.time()))
        start_at = max(start_at, time.time())
        calls = 0
        while time.time() < start_at + seconds:
            client.get_action(episode, obs)
            calls += 1
            if calls % 500 == 0:
                client.end_episode(episode, obs)
                episode = client.start_episode()
        rate = calls / seconds
    else:
        env = gym.make("CartPole-v1")
        state, _ = env.reset(seed=seed)
        start_at = max(start_at, time.time() + 1.0)
        steps = 0
        measuring = False
        episode = client.start_episode()
        while True:
            now = time.time()
            if not measuring and now >= start_at:
                measuring, steps = True, 0
            if now >= start_at + seconds:
                break
            action = client.get_action(episode, state)
            state, reward, terminated, truncated, _ = env.step(action)
            client.log_returns(episode, float(reward))
            steps += 1
            if terminated or truncated:
                client.end_episode(episode, state)
                state, _ = env.reset()
                episode = client.start_episode()
        rate = steps / seconds
    client.close()
    print(json.dumps({"rate": rate}))


def main(seconds: float) -> dict[str, Any]:
    print_machine()
    threads = torch.get_num_threads()
    results: dict[str, Any] = {}
    for name, hiddens in MODELS.items():
        server = make_server(hiddens)
        stop = threading.Event()

        def drain(srv: PolicyServerInput = server, stop: threading.Event = stop) -> None:
            while not stop.is_set():
                srv.next()

        drainer = threading.Thread(target=drain, daemon=True)
        drainer.start()
        try:
            with RequestTimes() as times:
                remote_1 = run_clients(server.port, "remote", 1, seconds)
            torch.set_num_threads(1)
            remote_1_one_thread = run_clients(server.port, "remote", 1, seconds)
            torch.set_num_threads(threads)
            part = {
                "compute_actions_per_s": inference_rate(server),
                "get_action_commands_without_http_per_s": execute_rate(server),
                "remote_1_client_round_trips_per_s": remote_1,
                "remote_1_client_round_trips_per_s_server_torch_1_thread": remote_1_one_thread,
                "remote_4_clients_round_trips_per_s": run_clients(
                    server.port, "remote", 4, seconds
                ),
                "local_1_client_env_steps_per_s": run_clients(server.port, "local", 1, seconds),
                "local_4_clients_env_steps_per_s": run_clients(server.port, "local", 4, seconds),
            }
        finally:
            stop.set()
            server.close()
        results[f"{name} {hiddens}"] = part
        for key, value in part.items():
            print(f"{name:8s} {key:56s} {value:10.0f}", flush=True)
        timing = times.per_request_us()
        results[f"{name} {hiddens}"]["server_time_per_request_1_client"] = timing
        print(
            f"{name:8s} server time per remote request: {timing['request_us']:.0f} us, of "
            f"which the command {timing['execute_us']:.0f} us",
            flush=True,
        )
    small = results[f"small {MODELS['small']}"]["remote_1_client_round_trips_per_s"]
    results["target_remote_1_client_small_model"] = {"rate": small, "met": small >= 2000}
    print(json.dumps(results))
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--client", choices=["remote", "local"], default=None)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--start-at", type=float, default=0.0)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.client is not None:
        client_main(args.client, args.port, args.start_at, args.seconds, args.seed)
    else:
        main(args.seconds)
