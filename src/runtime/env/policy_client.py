"""``PolicyClient``: the application's side of the external application API, talking to a
``PolicyServerInput`` over HTTP in the wire format (JSON, never pickle).

Two modes, as the reference:

- ``inference_mode="remote"``: every call is one request (keep-alive connections, one per
  thread); the server acts.
- ``inference_mode="local"``: the client builds the policy in its own process and acts there,
  collects rows with a local ``ExternalEnvSampler`` and reports them (``REPORT_SAMPLES``) from a
  background thread, with the episodes' metrics and its observation filters' buffers; it
  pulls new weights (and the filters' state) every ``update_interval`` seconds (None: only on
  ``update_policy_weights()``).

A local client builds its policy from what the server sends (``GET_WORKER_ARGS``): the spaces,
the algorithm's registry name (looked up in this process's ``rlconf`` registry, so a custom
algorithm must be registered here too) and the JSON-safe part of the config. Values that can't
cross the wire (a custom model class, a callable, a policy mapping function) are never guessed:
the client refuses with an error naming them, unless it is given the config itself
(``config=``: an ``AlgorithmConfig`` equal to the server's where the policy is concerned; a
multi-agent setup always needs it, for its mapping function).

Several local-inference clients on one machine each run torch with one thread per core by
default and starve one another (4 clients with PPO's default model: 80 env steps/s in all on 16
cores, 11,500 with ``torch.set_num_threads(1)`` in each): limit the threads of each.

``token``: sent as ``Authorization: Bearer <token>`` on every request (the server's ``token``).
``timeout``: seconds a request may take (connecting, sending, the reply). The address is
``"host:port"`` or ``"http://host:port"`` (``"https://..."`` for a server behind a TLS proxy).
"""

from __future__ import annotations

import contextlib
import logging
import socket
import ssl
import threading
import time
import urllib.parse
from typing import Any

import gymnasium as gym
import numpy as np

from runtime.env.external_env import (
    ExternalEnv,
    ExternalEnvClosed,
    ExternalEnvSampler,
    ExternalMultiAgentEnv,
)
from runtime.env.policy_server_input import (
    END_EPISODE,
    GET_ACTION,
    GET_WEIGHTS,
    GET_WORKER_ARGS,
    LOG_ACTION,
    LOG_RETURNS,
    REPORT_SAMPLES,
    START_EPISODE,
)
from runtime.env.wire_format import (
    WIRE_VERSION,
    WireFormatError,
    decode_agent_dict,
    decode_array,
    decode_space,
    decode_value,
    decode_weights,
    dumps,
    encode_agent_dict,
    encode_array,
    encode_batch,
    encode_info,
    encode_metrics,
    encode_value,
    is_typed_buffer,
    loads,
)

logger = logging.getLogger(__name__)

#: How often a local client's reporter thread looks for rows (and metrics) to send.
REPORT_INTERVAL_S = 1.0


class PolicyServerError(RuntimeError):
    """The server refused a request: ``status`` is its HTTP status, the message its reason."""

    def __init__(self, status: int, reason: str, command: str) -> None:
        super().__init__(f"{command}: the policy server answered {status}: {reason}")
        self.status = status
        self.reason = reason


class _LocalEnv(ExternalEnv):
    """A local client's env: the application's calls drive it, not ``run()``."""

    def run(self) -> None:
        return None


class _LocalMultiAgentEnv(ExternalMultiAgentEnv):
    def run(self) -> None:
        return None


class PolicyClient:
    """A client of a ``PolicyServerInput`` (see the module doc)."""

    def __init__(
        self,
        address: str,
        inference_mode: str = "local",
        update_interval: float | None = 10.0,
        *,
        token: str | None = None,
        timeout: float = 60.0,
        config: Any = None,
    ) -> None:
        if inference_mode not in ("local", "remote"):
            raise ValueError(f"inference_mode={inference_mode!r}; allowed: 'local', 'remote'")
        self.address = address
        self.inference_mode = inference_mode
        self.local = inference_mode == "local"
        self.update_interval = None if update_interval is None else float(update_interval)
        self._http = _Http(address, token, float(timeout))
        args = self._send({"command": GET_WORKER_ARGS})
        if args.get("wire_version") != WIRE_VERSION:
            raise PolicyServerError(
                200,
                f"wire format version {args.get('wire_version')!r}; this client speaks "
                f"{WIRE_VERSION}",
                GET_WORKER_ARGS,
            )
        self.multi_agent = bool(args.get("multi_agent"))
        self.policy_spaces: dict[str, tuple[gym.Space[Any], gym.Space[Any]]] = {
            pid: (
                decode_space(spaces["observation_space"], f"{pid}.observation_space"),
                decode_space(spaces["action_space"], f"{pid}.action_space"),
            )
            for pid, spaces in args["policies"].items()
        }
        self.observation_space, self.action_space = next(iter(self.policy_spaces.values()))
        self.worker: Any = None
        self.env: ExternalEnv | None = None
        self._sampler: ExternalEnvSampler | None = None
        self._last_update = 0.0
        self._update_lock = threading.Lock()
        self._stop = threading.Event()
        self._reporter: threading.Thread | None = None
        if self.local:
            self._setup_local(args, config)

    # ------------------------------------------------------------------ the API

    def start_episode(self, episode_id: str | None = None, training_enabled: bool = True) -> str:
        """Record the start of an episode; returns its id (a fresh one for None)."""
        if self.local:
            self._update_local_policy()
            return self._env().start_episode(episode_id, training_enabled)
        reply = self._send(
            {
                "command": START_EPISODE,
                "episode_id": episode_id,
                "training_enabled": training_enabled,
            }
        )
        episode: str = reply["episode_id"]
        return episode

    def get_action(self, episode_id: str, obs: Any) -> Any:
        """Record an observation and get the on-policy action (in the env's action space)."""
        if self.local:
            self._update_local_policy()
            return self._env().get_action(episode_id, obs)
        reply = self._send(
            {"command": GET_ACTION, "episode_id": episode_id, "observation": self._encode(obs)}
        )
        return self._decode_action(reply["action"])

    def log_action(self, episode_id: str, obs: Any, action: Any) -> None:
        """Record an observation and the (off-policy) action taken for it."""
        if self.local:
            self._update_local_policy()
            self._env().log_action(episode_id, obs, action)
            return
        self._send(
            {
                "command": LOG_ACTION,
                "episode_id": episode_id,
                "observation": self._encode(obs),
                "action": self._encode(action, self.action_space),
            }
        )

    def log_returns(
        self,
        episode_id: str,
        reward: Any,
        info: Any = None,
        multiagent_done_dict: Any = None,
    ) -> None:
        """Record a reward (multi-agent: a dict per agent): it goes to the previous action;
        rewards add up until the next one."""
        if self.local:
            self._update_local_policy()
            env = self._env()
            if isinstance(env, ExternalMultiAgentEnv):
                env.log_returns(episode_id, reward, info, multiagent_done_dict)
            else:
                if multiagent_done_dict is not None:
                    raise ValueError("multiagent_done_dict is for multi-agent episodes")
                env.log_returns(episode_id, reward, info)
            return
        message: dict[str, Any] = {"command": LOG_RETURNS, "episode_id": episode_id}
        if self.multi_agent:
            message["reward"] = encode_agent_dict(reward, lambda a, r: float(r))
            if info is not None:
                message["info"] = encode_agent_dict(info, lambda a, i: encode_info(i))
            if multiagent_done_dict is not None:
                message["done"] = encode_agent_dict(multiagent_done_dict, lambda a, d: bool(d))
        else:
            if multiagent_done_dict is not None:
                raise ValueError("multiagent_done_dict is for multi-agent episodes")
            message["reward"] = float(reward)
            if info is not None:
                message["info"] = encode_info(info)
        self._send(message)

    def end_episode(self, episode_id: str, obs: Any) -> None:
        """Record the end of an episode with its last observation."""
        if self.local:
            self._update_local_policy()
            self._env().end_episode(episode_id, obs)
            return
        self._send(
            {"command": END_EPISODE, "episode_id": episode_id, "observation": self._encode(obs)}
        )

    def update_policy_weights(self) -> None:
        """Pull the server's weights now (local inference)."""
        if self.local:
            self._update_local_policy(force=True)

    def close(self) -> None:
        """Local inference: send the rows and metrics still held, stop the reporter thread.
        Episodes still running are left."""
        if self._stop.is_set():
            return
        self._stop.set()
        if self._reporter is not None:
            self._reporter.join(timeout=30.0)
        if self._sampler is not None:
            self._report(self._sampler.flush())
            self._sampler.close()
        self._http.close()

    def __enter__(self) -> PolicyClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ remote

    def _send(self, message: dict[str, Any]) -> dict[str, Any]:
        return self._http.post(message)

    def _encode(self, value: Any, space: gym.Space[Any] | None = None) -> Any:
        if self.multi_agent:
            return encode_agent_dict(value, lambda a, v: encode_plain(v))
        return encode_value(space or self.observation_space, value)

    def _decode_action(self, value: Any) -> Any:
        if self.multi_agent:
            return decode_agent_dict(value, "action", lambda a, v: decode_plain(v))
        return decode_value(self.action_space, value, "action")

    # ------------------------------------------------------------------ local

    def _env(self) -> ExternalEnv:
        assert self.env is not None
        return self.env

    def _setup_local(self, args: dict[str, Any], config: Any) -> None:
        from rlconf.registry import get_algorithm_class, get_config_class
        from runtime.env.rollout_worker import RolloutWorker

        algorithm = args.get("algorithm")
        if config is None:
            if self.multi_agent:
                raise ValueError(
                    "local inference of a multi-agent setup needs the config (its policies and "
                    "policy_mapping_fn can't cross the wire): PolicyClient(..., config=config)"
                )
            not_sent = list(args.get("config_not_sent", []))
            if not_sent:
                raise ValueError(
                    f"the server's config holds {', '.join(not_sent)}, which can't cross the "
                    "wire (a class, a function or a space); give the client the config: "
                    "PolicyClient(..., config=config), or use inference_mode='remote'"
                )
            if not isinstance(algorithm, str):
                raise ValueError(
                    f"the server's config names no registered algorithm ({algorithm!r}); give "
                    "the client the config: PolicyClient(..., config=config)"
                )
            plain = dict(args["config"])
            plain["observation_space"] = self.observation_space
            plain["action_space"] = self.action_space
            config = get_config_class(algorithm).from_dict(plain)
        else:
            algorithm = getattr(config, "algo_name", None) or algorithm
            if not isinstance(algorithm, str):
                raise ValueError(
                    f"config {type(config).__name__} names no registered algorithm; register "
                    "it with rlconf.register_algorithm"
                )
            config = config.copy()
            if not self.multi_agent:
                config = config.environment(
                    observation_space=self.observation_space, action_space=self.action_space
                )
        # The client samples its own calls: no input (a server's input_ would start a server
        # here) and no output.
        config = config.offline_data(input_="sampler", output=None).freeze()
        policy_class = get_algorithm_class(algorithm).policy_class
        self.worker = RolloutWorker(
            env_creator=None,
            config=config,
            policy_class=policy_class,
            spaces=(self.observation_space, self.action_space),
            policy_spaces=dict(self.policy_spaces) if self.multi_agent else None,
        )
        env_class = _LocalMultiAgentEnv if self.multi_agent else _LocalEnv
        self.env = env_class(self.action_space, self.observation_space)
        self._sampler = ExternalEnvSampler(
            self.env,
            self.worker,
            int(config.get_rollout_fragment_length()),
            start_env=False,
        )
        self._update_local_policy(force=True)
        self._reporter = threading.Thread(
            target=self._report_loop, name="PolicyClient-reporter", daemon=True
        )
        self._reporter.start()

    def _update_local_policy(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and (
            self.update_interval is None or now - self._last_update < self.update_interval
        ):
            return
        with self._update_lock:
            if not force and now - self._last_update < (self.update_interval or 0.0):
                return
            reply = self._send({"command": GET_WEIGHTS})
            weights = decode_weights(reply.get("weights"))
            timestep = reply.get("timestep", 0)
            if not isinstance(timestep, int) or isinstance(timestep, bool):
                raise WireFormatError(f"timestep is {timestep!r}; allowed: an int")
            self.worker.set_weights(weights, {"timestep": timestep})
            filters = reply.get("filters") or {}
            if not isinstance(filters, dict):
                raise WireFormatError("filters is not an object")
            self.worker.sync_filters(filters)
            self._last_update = time.monotonic()

    def _report_loop(self) -> None:
        assert self._sampler is not None
        while not self._stop.is_set():
            try:
                batch = self._sampler.poll(REPORT_INTERVAL_S)
            except ExternalEnvClosed:
                return
            self._report(batch)

    def _report(self, batch: Any) -> None:
        """Send rows (None: none), the finished episodes' metrics and the filter buffers."""
        assert self._sampler is not None
        metrics = self._sampler.pop_metrics()
        if batch is None and not metrics:
            return
        message: dict[str, Any] = {
            "command": REPORT_SAMPLES,
            "samples": None if batch is None else encode_batch(batch),
            "metrics": encode_metrics(metrics),
            "filters": {
                pid: buffer.pop_buffer()
                for pid, buffer in self.worker.filters.items()
                if buffer.name != "NoFilter"
            },
        }
        try:
            self._send(message)
        except (OSError, PolicyServerError) as error:
            rows = 0 if batch is None else len(batch)
            logger.warning(
                "PolicyClient: %d rows and %d episodes' metrics were not reported: %s",
                rows,
                len(metrics),
                error,
            )


def encode_plain(value: Any) -> Any:
    """A value without a space to go by (a multi-agent agent's observation or action): arrays
    as typed buffers, numpy scalars as numbers, dicts and tuples part by part."""
    if isinstance(value, np.ndarray):
        return encode_array(value)
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, dict):
        return {str(k): encode_plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [encode_plain(v) for v in value]
    return value


def decode_plain(value: Any) -> Any:
    if is_typed_buffer(value):
        return decode_array(value, "value")
    if isinstance(value, dict):
        return {k: decode_plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [decode_plain(v) for v in value]
    return value


class ProtocolError(ConnectionError):
    """The server's reply is not the HTTP this client reads."""


class _Connection:
    """One keep-alive HTTP/1.1 connection: each request goes out in one write (head and body:
    the standard library's client writes them apart, and the server then waits for a second
    packet), and the reply is read with a buffered reader (the status line, Content-Length and
    Connection; the standard library's email parser costs more than the rest of a small
    request)."""

    def __init__(self, host: str, port: int, timeout: float, tls: ssl.SSLContext | None) -> None:
        sock = socket.create_connection((host, port), timeout=timeout)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if tls is not None:
            sock = tls.wrap_socket(sock, server_hostname=host)
        self.sock = sock
        self.reader = sock.makefile("rb")

    def exchange(self, request: bytes) -> tuple[int, bytes, bool]:
        """Send ``request``; the reply's status, body and whether the server closes."""
        self.sock.sendall(request)
        while True:
            line = self.reader.readline(65537)
            if not line:
                raise ConnectionResetError("the server closed the connection")
            parts = line.split(None, 2)
            if len(parts) < 2 or not parts[0].startswith(b"HTTP/") or not parts[1].isdigit():
                raise ProtocolError(f"not an HTTP status line: {line[:80]!r}")
            status = int(parts[1])
            close = parts[0] != b"HTTP/1.1"
            length: int | None = None
            for _ in range(101):
                header = self.reader.readline(65537)
                if header in (b"\r\n", b"\n", b""):
                    break
                name, _, value = header.partition(b":")
                name = name.strip().lower()
                if name == b"content-length":
                    if not value.strip().isdigit():
                        raise ProtocolError(f"Content-Length {value.strip()[:20]!r}")
                    length = int(value)
                elif name == b"connection":
                    close = value.strip().lower() == b"close"
            else:
                raise ProtocolError("more than 100 header lines")
            if status != 100:
                break
        if length is None:
            return status, self.reader.read(), True
        body = self.reader.read(length)
        if len(body) < length:
            raise ConnectionResetError("the server closed the connection mid-reply")
        return status, body, close

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.reader.close()
            self.sock.close()


class _Http:
    """POSTs of wire-format messages over keep-alive connections, one per thread."""

    def __init__(self, address: str, token: str | None, timeout: float) -> None:
        text = address if "://" in address else f"http://{address}"
        parsed = urllib.parse.urlsplit(text)
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise ValueError(
                f"address {address!r}; allowed: 'host:port', 'http://host:port' or "
                "'https://host:port'"
            )
        self.host = parsed.hostname
        self.port = parsed.port or (443 if parsed.scheme == "https" else 80)
        self.tls = ssl.create_default_context() if parsed.scheme == "https" else None
        self.timeout = timeout
        path = parsed.path or "/"
        host = f"[{self.host}]" if ":" in self.host else self.host
        if token is not None and not (token.isprintable() and token.isascii()):
            raise ValueError("token holds a character that is not printable ASCII")
        auth = "" if token is None else f"Authorization: Bearer {token}\r\n"
        self._head = (
            f"POST {path} HTTP/1.1\r\nHost: {host}:{self.port}\r\n"
            f"Content-Type: application/json\r\n{auth}Content-Length: "
        ).encode("latin-1")
        self._local = threading.local()
        self._all: list[_Connection] = []
        self._lock = threading.Lock()

    def _connection(self) -> tuple[_Connection, bool]:
        connection: _Connection | None = getattr(self._local, "connection", None)
        if connection is not None:
            return connection, True
        connection = _Connection(self.host, self.port, self.timeout, self.tls)
        self._local.connection = connection
        with self._lock:
            self._all.append(connection)
        return connection, False

    def _drop(self) -> None:
        connection = getattr(self._local, "connection", None)
        if connection is not None:
            connection.close()
            self._local.connection = None

    def post(self, message: dict[str, Any]) -> dict[str, Any]:
        body = dumps(message)
        request = self._head + str(len(body)).encode() + b"\r\n\r\n" + body
        command = str(message.get("command"))
        for attempt in (0, 1):
            connection, reused = self._connection()
            try:
                status, data, close = connection.exchange(request)
            except (BrokenPipeError, ConnectionResetError):
                self._drop()
                # A kept-alive connection the server closed while idle: the request never got
                # there; send it again once on a fresh one.
                if reused and attempt == 0:
                    continue
                raise
            except OSError:
                self._drop()
                raise
            if close:
                self._drop()
            if status != 200:
                raise PolicyServerError(status, _reason(data), command)
            return loads(data)
        raise AssertionError("unreachable")

    def close(self) -> None:
        with self._lock:
            connections, self._all = self._all, []
        for connection in connections:
            connection.close()


def _reason(data: bytes) -> str:
    try:
        reason = loads(data).get("error")
    except WireFormatError:
        reason = None
    return str(reason) if reason is not None else data[:200].decode("utf-8", "replace")
