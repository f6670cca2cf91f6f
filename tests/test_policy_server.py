"""``PolicyServerInput`` and ``PolicyClient`` over real HTTP on loopback: hostile requests
(pickles, bad JSON, wrong shapes and dtypes, observations outside the space, unknown commands and
episodes, oversize bodies, missing or wrong tokens) get a 4xx with a one-line JSON reason and
leave the server serving; the rows of remote and local episodes as the reference attributes
rewards; concurrent clients; a vanished client's episode dropped; the wire format's round
trips."""

from __future__ import annotations

import http.client
import json
import pickle
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from rlconf import PPOConfig
from runtime.algorithms.ppo import PPO
from runtime.core.multi_agent_batch import MultiAgentBatch
from runtime.core.sample_batch import SampleBatch
from runtime.env import policy_server_input, wire_format
from runtime.env.episode import EpisodeMetrics
from runtime.env.policy_client import PolicyClient, PolicyServerError
from runtime.env.policy_server_input import PolicyServerInput, client_config
from runtime.env.rollout_worker import RolloutWorker
from runtime.env.wire_format import WireFormatError
from runtime.offline.io_context import IOContext

OBS = gym.spaces.Box(-5.0, 5.0, (4,), np.float32)
ACTIONS = gym.spaces.Discrete(2)
TOKEN = "s3cret-token"
MAX_BODY = 64 * 1024


def make_worker(**rollouts: Any) -> RolloutWorker:
    config = (
        PPOConfig()
        .environment(None, observation_space=OBS, action_space=ACTIONS)
        .rollouts(num_workers=0, rollout_fragment_length=rollouts.pop("fragment", 1000))
        .training(model={"fcnet_hiddens": [8]})
        .debugging(seed=0)
    )
    return RolloutWorker(env_creator=None, config=config.freeze(), policy_class=PPO.policy_class)


def start_server(**kwargs: Any) -> PolicyServerInput:
    worker = make_worker(fragment=kwargs.pop("fragment", 1000))
    kwargs.setdefault("idle_timeout", 0.2)
    kwargs.setdefault("token", TOKEN)
    kwargs.setdefault("max_body_bytes", MAX_BODY)
    return PolicyServerInput(IOContext(config=worker.config, worker=worker), None, 0, **kwargs)


@pytest.fixture
def server() -> Iterator[PolicyServerInput]:
    srv = start_server()
    try:
        yield srv
    finally:
        srv.close()


def client(srv: PolicyServerInput, mode: str = "remote", **kwargs: Any) -> PolicyClient:
    return PolicyClient(f"127.0.0.1:{srv.port}", mode, token=TOKEN, **kwargs)


def obs(value: float) -> np.ndarray:
    return np.full(4, value, dtype=np.float32)


def drain(srv: PolicyServerInput) -> SampleBatch:
    """Every row the server holds now (running episodes cut)."""
    parts = []
    while True:
        batch = srv.next()
        assert isinstance(batch, SampleBatch)
        if len(batch) == 0:
            break
        parts.append(batch)
    if not parts:
        return batch
    return SampleBatch(
        {name: np.concatenate([p[name] for p in parts]) for name, _ in parts[0].items()}
    )


def raw_post(
    port: int, body: bytes, headers: dict[str, str] | None = None, method: str = "POST"
) -> tuple[int, dict[str, Any]]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        all_headers = {"Authorization": f"Bearer {TOKEN}", **(headers or {})}
        connection.request(method, "/", body, all_headers)
        response = connection.getresponse()
        data = response.read()
    finally:
        connection.close()
    return response.status, json.loads(data)


def raw_socket(port: int, request: bytes) -> tuple[int, dict[str, Any]]:
    """A hand-written request (headers the standard client would not send); the reply."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(request)
        data = b""
        while True:
            while b"\r\n\r\n" not in data:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                data += chunk
            head, _, body = data.partition(b"\r\n\r\n")
            if not head.startswith(b"HTTP/1.1 100 "):
                break
            data = body  # an interim "100 Continue": the reply follows
        length = int(
            next(
                line.split(b":")[1]
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length")
            )
        )
        while len(body) < length:
            body += sock.recv(65536)
    return int(head.split()[1]), json.loads(body)


def message(command: str, **fields: Any) -> bytes:
    return json.dumps({"command": command, **fields}).encode()


def encoded(value: np.ndarray) -> dict[str, Any]:
    return wire_format.encode_array(value)


# ---------------------------------------------------------------------- hostile requests


def test_hostile_requests_get_a_4xx_and_the_server_keeps_serving(
    server: PolicyServerInput,
) -> None:
    good = client(server)
    eid = good.start_episode()
    good.get_action(eid, obs(0))
    port = server.port
    # An episode started over the raw interface, to aim bad observations at.
    status, reply = raw_post(port, message("START_EPISODE", episode_id="raw-1"))
    assert status == 200 and reply == {"episode_id": "raw-1"}

    class Exploit:
        def __reduce__(self) -> tuple[Any, ...]:
            return (print, ("pwned",))

    nan_obs = encoded(np.array([0, np.nan, 0, 0], np.float32))
    cases: list[tuple[bytes, dict[str, str], int, str]] = [
        (pickle.dumps({"command": "GET_ACTION", "x": Exploit()}), {}, 400, "never pickle"),
        (b"{not json", {}, 400, "not valid JSON"),
        (b"\xff\xfe\x00garbage", {}, 400, "not UTF-8"),
        (b"[1, 2, 3]", {}, 400, "JSON object"),
        (b'{"command": "GET_ACTION", "x": NaN}', {}, 400, "not valid JSON"),
        (b"[" * 60_000, {}, 400, "not valid JSON"),
        (message("RUN_SHELL", cmd="rm -rf /"), {}, 400, "unknown"),
        (message("GET_WEIGHTS", extra=1), {}, 400, "does not take"),
        (message("GET_ACTION", episode_id="raw-1", observation=[1, 2, 3]), {}, 400, "shape"),
        (
            message("GET_ACTION", episode_id="raw-1", observation=[9.0, 0, 0, 0]),
            {},
            400,
            "not in Box",
        ),
        (message("GET_ACTION", episode_id="raw-1", observation=nan_obs), {}, 400, "NaN"),
        (
            message("GET_ACTION", episode_id="raw-1", observation=["a", "b", "c", "d"]),
            {},
            400,
            "rectangular array of numbers",
        ),
        (
            message(
                "GET_ACTION",
                episode_id="raw-1",
                observation={"dtype": "object", "shape": [4], "b64": ""},
            ),
            {},
            400,
            "dtype",
        ),
        (
            message(
                "GET_ACTION",
                episode_id="raw-1",
                observation={"dtype": "float32", "shape": [4], "b64": "AAAA"},
            ),
            {},
            400,
            "bytes",
        ),
        (
            message(
                "GET_ACTION",
                episode_id="raw-1",
                observation={"dtype": "float32", "shape": [1 << 20, 1 << 20], "b64": ""},
            ),
            {},
            400,
            "elements",
        ),
        (message("GET_ACTION", episode_id="nobody", observation=[0, 0, 0, 0]), {}, 404, "nobody"),
        (message("GET_ACTION", episode_id=7, observation=[0, 0, 0, 0]), {}, 400, "episode_id"),
        (message("GET_ACTION", episode_id="raw-1"), {}, 400, "needs 'observation'"),
        (
            message("LOG_ACTION", episode_id="raw-1", observation=[0, 0, 0, 0], action=True),
            {},
            400,
            "not a bool",
        ),
        (
            message("LOG_ACTION", episode_id="raw-1", observation=[0, 0, 0, 0], action=5),
            {},
            400,
            "not in Discrete",
        ),
        (message("LOG_RETURNS", episode_id="raw-1", reward="1"), {}, 400, "finite number"),
        (message("LOG_RETURNS", episode_id="raw-1", reward=1e400), {}, 400, "finite number"),
        (message("LOG_RETURNS", episode_id="raw-1", reward=1, info=[1]), {}, 400, "info"),
        (message("START_EPISODE", episode_id="raw-1"), {}, 409, "already started"),
        (message("START_EPISODE", episode_id="x" * 500), {}, 400, "episode_id"),
        (message("START_EPISODE", training_enabled="yes"), {}, 400, "training_enabled"),
        (message("GET_WEIGHTS"), {"Authorization": "Bearer wrong"}, 401, "token"),
        (message("GET_WEIGHTS"), {"Authorization": ""}, 401, "token"),
        (message("GET_WEIGHTS"), {"Authorization": f"Bearer {TOKEN}x"}, 401, "token"),
        (b"x" * (MAX_BODY + 1), {}, 413, "at most"),
    ]
    for body, headers, expected, reason in cases:
        status, reply = raw_post(port, body, headers)
        assert status == expected, (body[:80], reply)
        assert set(reply) == {"error"} and reason in reply["error"], (body[:80], reply)
        assert "\n" not in reply["error"]
        # ... and a good client is still served, on its kept-alive connection.
        assert ACTIONS.contains(good.get_action(eid, obs(0.1)))
    # Nothing of the bad requests ran: the raw episode took no step.
    status, reply = raw_post(port, message("END_EPISODE", episode_id="raw-1", observation=[0] * 4))
    assert status == 200
    good.end_episode(eid, obs(1))
    rows = drain(server)
    assert len(rows) == len(cases) + 1  # the good client's steps only
    assert {m.length for m in server.pop_metrics()} == {0, len(cases) + 1}


def test_malformed_http_gets_a_json_4xx(server: PolicyServerInput) -> None:
    port = server.port
    status, reply = raw_post(port, b"", method="GET")
    assert status == 405 and "POST" in reply["error"]
    auth = f"Authorization: Bearer {TOKEN}\r\n".encode()
    status, reply = raw_socket(port, b"POST / HTTP/1.1\r\nHost: x\r\n" + auth + b"\r\n")
    assert status == 411
    status, reply = raw_socket(
        port, b"POST / HTTP/1.1\r\nHost: x\r\n" + auth + b"Transfer-Encoding: chunked\r\n\r\n"
    )
    assert status == 411 and "chunked" in reply["error"]
    status, reply = raw_socket(
        port, b"POST / HTTP/1.1\r\nHost: x\r\n" + auth + b"Content-Length: -5\r\n\r\n"
    )
    assert status == 400
    # A huge declared body is refused before a byte of it is read.
    status, reply = raw_socket(
        port, b"POST / HTTP/1.1\r\nHost: x\r\n" + auth + b"Content-Length: 999999999999\r\n\r\n"
    )
    assert status == 413
    # Without the token nothing is read either.
    status, reply = raw_socket(port, b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n")
    assert status == 401
    status, reply = raw_socket(port, b"NONSENSE\r\n\r\n")
    assert 400 <= status < 500
    status, reply = raw_socket(port, b"POST / HTTP/2.0\r\nHost: x\r\n\r\n")
    assert status == 400 and "HTTP/1.1" in reply["error"]
    # Two lengths (a request-smuggling trick) are refused.
    status, reply = raw_socket(
        port,
        b"POST / HTTP/1.1\r\nHost: x\r\n"
        + auth
        + b"Content-Length: 2\r\nContent-Length: 40\r\n\r\n{}",
    )
    assert status == 400 and "twice" in reply["error"]
    status, reply = raw_socket(port, b"POST / HTTP/1.1\r\n" + b"X-A: b\r\n" * 101 + b"\r\n")
    assert status == 431
    # A client that asks before sending its body (curl does) is told to go on.
    body = message("GET_WORKER_ARGS")
    status, reply = raw_socket(
        port,
        b"POST / HTTP/1.0\r\n"
        + auth
        + b"Expect: 100-continue\r\nContent-Length: "
        + str(len(body)).encode()
        + b"\r\n\r\n"
        + body,
    )
    assert status == 200 and reply["wire_version"] == 1
    assert ACTIONS.contains(client(server).get_action(client(server).start_episode(), obs(0)))


def test_wrong_token_or_none_is_refused_by_the_client_too(server: PolicyServerInput) -> None:
    with pytest.raises(PolicyServerError) as refused:
        PolicyClient(f"127.0.0.1:{server.port}", "remote", token="nope")
    assert refused.value.status == 401
    with pytest.raises(PolicyServerError):
        PolicyClient(f"127.0.0.1:{server.port}", "remote")


def test_the_server_binds_loopback_unless_told_otherwise(server: PolicyServerInput) -> None:
    assert server.address == "127.0.0.1"
    with pytest.raises(ValueError, match="token"):
        start_server(token="")


# ---------------------------------------------------------------------- rows and rewards


def test_remote_episode_rows_and_rewards_as_the_reference(server: PolicyServerInput) -> None:
    remote = client(server)
    eid = remote.start_episode("ep-1")
    assert eid == "ep-1"
    remote.log_returns(eid, 100.0)  # before the first action: the return only
    assert ACTIONS.contains(remote.get_action(eid, obs(0)))
    remote.log_returns(eid, 1.0)
    remote.log_returns(eid, 2.0, {"note": "json-safe", "n": np.int64(3)})
    remote.get_action(eid, obs(1))
    remote.log_action(eid, obs(2), 1)  # no reward logged before it: 0.0
    remote.log_returns(eid, 4.0)
    remote.end_episode(eid, obs(3))
    rows = drain(server)
    assert rows["rewards"].tolist() == [3.0, 0.0, 4.0]
    assert rows["obs"][:, 0].tolist() == [0.0, 1.0, 2.0]
    assert rows["new_obs"][:, 0].tolist() == [1.0, 2.0, 3.0]
    assert rows["terminateds"].tolist() == [False, False, True]
    assert rows["t"].tolist() == [0, 1, 2] and rows["actions"][2] == 1
    policy = server.worker.get_policy()
    np.testing.assert_allclose(
        rows["action_logp"][2],
        policy.compute_log_likelihoods(np.array([1]), rows["obs"][2:3])[0],
        rtol=1e-5,
    )
    (metrics,) = server.pop_metrics()
    assert (metrics.length, metrics.total_reward) == (3, 107.0)
    with pytest.raises(PolicyServerError) as finished:
        remote.get_action(eid, obs(0))
    assert finished.value.status == 404 and "already completed" in finished.value.reason


def test_concurrent_clients(server: PolicyServerInput) -> None:
    episodes = 3
    errors: list[BaseException] = []

    def play(k: int) -> None:
        try:
            remote = client(server)
            for e in range(episodes):
                eid = remote.start_episode(f"c{k}-e{e}")
                for _ in range(5 + k):
                    remote.get_action(eid, obs(k))
                    remote.log_returns(eid, float(k))
                remote.end_episode(eid, obs(k))
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=play, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors
    rows = drain(server)
    assert len(rows) == episodes * sum(5 + k for k in range(4))
    ids = rows["eps_id"]
    starts = np.flatnonzero(np.concatenate([[True], ids[1:] != ids[:-1]]))
    assert len(starts) == 4 * episodes
    for start, end in zip(starts, [*starts[1:], len(ids)], strict=True):
        part = rows[int(start) : int(end)]
        k = int(part["obs"][0, 0])
        assert len(part) == 5 + k and part["t"].tolist() == list(range(5 + k))
        assert set(part["rewards"].tolist()) == {float(k)}
    assert len(server.pop_metrics()) == 4 * episodes


def test_a_vanished_clients_episode_is_dropped_and_others_keep_their_rows() -> None:
    srv = start_server(episode_timeout=0.4)
    try:
        vanishing, staying = client(srv), client(srv)
        gone = vanishing.start_episode("gone")
        for _ in range(3):
            vanishing.get_action(gone, obs(-1))
        kept = staying.start_episode("kept")
        deadline = time.monotonic() + 0.8
        while time.monotonic() < deadline:
            staying.get_action(kept, obs(1))
            staying.log_returns(kept, 1.0)
            time.sleep(0.02)
        staying.end_episode(kept, obs(1))
        rows = drain(srv)
        assert len(rows) > 5 and set(rows["obs"][:, 0].tolist()) == {1.0}
        assert set(rows["rewards"].tolist()) == {1.0}
        assert sorted(m.faulty for m in srv.pop_metrics()) == [False, True]
        with pytest.raises(PolicyServerError) as dropped:
            vanishing.get_action(gone, obs(-1))
        assert dropped.value.status == 404 and "dropped after" in dropped.value.reason
    finally:
        srv.close()


def test_next_returns_an_empty_batch_with_the_columns_when_idle(
    server: PolicyServerInput,
) -> None:
    start = time.monotonic()
    batch = server.next()
    assert isinstance(batch, SampleBatch) and len(batch) == 0
    assert time.monotonic() - start >= 0.15
    assert {"obs", "new_obs", "actions", "rewards", "terminateds", "vf_preds"} <= {
        name for name, _ in batch.items()
    }
    assert PolicyServerInput.rows_in_policy_space


def test_close_stops_serving() -> None:
    srv = start_server()
    remote = client(srv)
    eid = remote.start_episode()
    srv.close()
    with pytest.raises((OSError, PolicyServerError)):
        remote.get_action(eid, obs(0))
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", srv.port), timeout=2).close()


# ---------------------------------------------------------------------- local inference


def test_local_inference_reports_checked_rows_and_pulls_weights(
    server: PolicyServerInput,
) -> None:
    local = client(server, "local", update_interval=None)
    try:
        server_policy = server.worker.get_policy()
        local_policy = local.worker.get_policy()
        for name, value in server_policy.get_weights().items():
            np.testing.assert_array_equal(local_policy.get_weights()[name], value)
        # New weights on the server reach the client on update_policy_weights().
        changed = {k: v + 0.5 for k, v in server_policy.get_weights().items()}
        server_policy.set_weights(changed)
        local.update_policy_weights()
        for name, value in changed.items():
            np.testing.assert_allclose(local_policy.get_weights()[name], value)
        for e in range(3):
            eid = local.start_episode()
            local.log_returns(eid, 50.0)
            for i in range(4):
                assert ACTIONS.contains(local.get_action(eid, obs(i)))
                local.log_returns(eid, 1.0)
            local.end_episode(eid, obs(e))
        hidden = local.start_episode(training_enabled=False)
        local.get_action(hidden, obs(0))
        local.end_episode(hidden, obs(0))
    finally:
        local.close()
    rows = drain(server)
    assert len(rows) == 12 and set(rows["rewards"].tolist()) == {1.0}
    assert rows["terminateds"].tolist() == ([False] * 3 + [True]) * 3
    assert len(set(rows["eps_id"].tolist())) == 3
    metrics = server.pop_metrics()
    assert sorted(m.total_reward for m in metrics) == [0.0, 54.0, 54.0, 54.0]


def report(server: PolicyServerInput, columns: dict[str, np.ndarray]) -> tuple[int, str]:
    samples = {
        "env_steps": len(columns["obs"]),
        "policies": {"default_policy": {k: encoded(v) for k, v in columns.items()}},
    }
    status, reply = raw_post(server.port, message("REPORT_SAMPLES", samples=samples, metrics=[]))
    return status, reply.get("error", "")


def good_rows(n: int = 4) -> dict[str, np.ndarray]:
    return {
        "obs": np.zeros((n, 4), np.float32),
        "new_obs": np.zeros((n, 4), np.float32),
        "actions": np.zeros(n, np.int64),
        "rewards": np.ones(n, np.float32),
        "terminateds": np.array([False] * (n - 1) + [True]),
        "truncateds": np.zeros(n, bool),
        "eps_id": np.full(n, 7, np.int64),
        "t": np.arange(n, dtype=np.int64),
        "action_logp": np.zeros(n, np.float32),
        "action_dist_inputs": np.zeros((n, 2), np.float32),
        "vf_preds": np.zeros(n, np.float32),
    }


def test_reported_rows_are_checked_before_anything_is_taken(server: PolicyServerInput) -> None:
    def broken(**changes: Any) -> dict[str, np.ndarray]:
        rows = good_rows()
        for name, value in changes.items():
            if value is None:
                del rows[name]
            else:
                rows[name] = value
        return rows

    cases = [
        (broken(vf_preds=None), "missing ['vf_preds']"),
        (broken(extra=np.zeros(4)), "unexpected ['extra']"),
        (broken(obs=np.zeros((4, 5), np.float32)), "'obs'"),
        (broken(obs=np.zeros((4, 4), np.float64)), "'obs'"),
        (broken(rewards=np.array([1, np.inf, 1, 1], np.float32)), "finite"),
        (broken(new_obs=np.full((4, 4), np.nan, np.float32)), "NaN"),
        (broken(actions=np.array([0, 1, 2, 0])), "actions outside"),
        (broken(eps_id=np.array([1, 2, 1, 2])), "not contiguous"),
        (broken(t=np.array([0, 2, 3, 4])), "t does not step"),
        (broken(t=np.array([-1, 0, 1, 2])), ">= 0"),
    ]
    for rows, reason in cases:
        status, error = report(server, rows)
        assert status == 400 and reason in error, (reason, error)
    assert report(server, good_rows()) == (200, "")
    taken = drain(server)
    assert len(taken) == 4 and taken["eps_id"][0] != 7  # given an id of the server's
    status, reply = raw_post(
        server.port,
        message("REPORT_SAMPLES", samples=None, metrics=[{"length": -1, "total_reward": 0}]),
    )
    assert status == 400 and "length" in reply["error"]


def test_local_mode_refuses_a_config_that_cannot_cross_the_wire(
    server: PolicyServerInput, monkeypatch: pytest.MonkeyPatch
) -> None:
    plain, not_sent = client_config(server.worker.config)
    assert not not_sent and "input" not in plain and "lr" in plain
    json.dumps(plain)

    def with_a_class(config: Any) -> tuple[dict[str, Any], list[str]]:
        return plain, ["model.custom_model"]

    monkeypatch.setattr(policy_server_input, "client_config", with_a_class)
    with pytest.raises(ValueError, match=r"model\.custom_model.*config=config"):
        client(server, "local")
    # Given the config, the client builds its policy from it.
    local = client(server, "local", config=server.worker.config)
    try:
        assert local.worker.get_policy().observation_space.shape == (4,)
    finally:
        local.close()


# ---------------------------------------------------------------------- the wire format


SPACES = [
    gym.spaces.Box(-np.inf, np.inf, (4,), np.float32),
    gym.spaces.Box(0, 255, (2, 3, 1), np.uint8),
    gym.spaces.Box(np.array([-1.0, 0.0]), np.array([1.0, np.inf]), dtype=np.float64),
    gym.spaces.Discrete(5, start=-2),
    gym.spaces.MultiDiscrete([3, 4, 2]),
    gym.spaces.MultiBinary([2, 3]),
    gym.spaces.Dict(
        {
            "pos": gym.spaces.Box(-1, 1, (2,), np.float32),
            "inner": gym.spaces.Tuple((gym.spaces.Discrete(3), gym.spaces.MultiBinary(4))),
        }
    ),
]


@pytest.mark.parametrize("space", SPACES, ids=lambda s: type(s).__name__)
def test_spaces_and_their_values_round_trip(space: gym.Space[Any]) -> None:
    text = wire_format.dumps({"space": wire_format.encode_space(space)})
    back = wire_format.decode_space(wire_format.loads(text)["space"])
    assert back == space
    space.seed(0)
    for _ in range(5):
        value = space.sample()
        body = wire_format.dumps({"v": wire_format.encode_value(space, value)})
        decoded = wire_format.decode_value(back, wire_format.loads(body)["v"], "value")
        assert space.contains(decoded)
        flat_in = gym.spaces.flatten(space, value)
        np.testing.assert_array_equal(gym.spaces.flatten(space, decoded), flat_in)


@pytest.mark.parametrize("dtype", sorted(wire_format.ARRAY_DTYPES))
def test_arrays_of_every_allowed_dtype_round_trip(dtype: str) -> None:
    array = (np.arange(12).reshape(3, 4) % 2).astype(dtype)
    back = wire_format.decode_array(wire_format.encode_array(array), "a")
    assert back.dtype == array.dtype and back.shape == (3, 4)
    np.testing.assert_array_equal(back, array)
    back[0, 0] = 1  # a writable copy


def test_the_wire_refuses_what_is_not_data() -> None:
    with pytest.raises(WireFormatError, match="never pickle"):
        wire_format.loads(pickle.dumps({"a": 1}))
    with pytest.raises(WireFormatError):
        wire_format.encode_array(np.array([object()]))
    with pytest.raises(WireFormatError, match="dtype"):
        wire_format.decode_array({"dtype": "O", "shape": [1], "b64": "AA=="}, "x")
    with pytest.raises(WireFormatError, match="dtype"):
        wire_format.decode_array({"dtype": "<f4", "shape": [1], "b64": "AAAAAA=="}, "x")
    with pytest.raises(WireFormatError, match="base64"):
        wire_format.decode_array({"dtype": "int8", "shape": [1], "b64": "!!"}, "x")
    with pytest.raises(WireFormatError, match="shape"):
        wire_format.decode_array({"dtype": "int8", "shape": [-1], "b64": ""}, "x")
    with pytest.raises(WireFormatError, match="can't be sent"):
        wire_format.encode_space(gym.spaces.Text(5))
    with pytest.raises(WireFormatError, match="type"):
        wire_format.decode_space({"type": "Graph"})
    with pytest.raises(WireFormatError, match="'x'"):
        wire_format.encode_info({"x": object()})
    with pytest.raises(WireFormatError, match="not in Discrete"):
        wire_format.decode_value(gym.spaces.Discrete(3), 3, "action")
    with pytest.raises(WireFormatError, match="non-integer"):
        wire_format.decode_value(gym.spaces.MultiDiscrete([3, 3]), [0.5, 1], "action")


def test_weights_rows_and_metrics_round_trip() -> None:
    weights = {"p": {"w": np.random.default_rng(0).normal(size=(3, 2)).astype(np.float32)}}
    back = wire_format.decode_weights(json.loads(json.dumps(wire_format.encode_weights(weights))))
    np.testing.assert_array_equal(back["p"]["w"], weights["p"]["w"])
    rows = SampleBatch(good_rows(3))
    policies, steps = wire_format.decode_batch(
        json.loads(json.dumps(wire_format.encode_batch(MultiAgentBatch.wrap(rows))))
    )
    assert steps == 3
    for name, values in rows.items():
        np.testing.assert_array_equal(policies["default_policy"][name], values)
    metrics = [EpisodeMetrics(3, 1.5, {"m": 2.0}, {"h": [1.0]}, {("a", "p0"): 1.5}, False)]
    decoded = wire_format.decode_metrics(
        json.loads(json.dumps(wire_format.encode_metrics(metrics)))
    )
    assert decoded == metrics
    agents = wire_format.encode_agent_dict({0: 1.0, "b": 2.0}, lambda a, v: v)
    assert wire_format.decode_agent_dict(agents, "r", lambda a, v: v) == {0: 1.0, "b": 2.0}
