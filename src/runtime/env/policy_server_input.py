"""``PolicyServerInput``: a policy server over HTTP that is also a worker's input: the
reference's external application API (``PolicyClient`` talks to it), safe to expose on a
network.

The server runs in daemon threads (the standard library's ``ThreadingHTTPServer``: one thread
per connection, HTTP/1.1 keep-alive) while the algorithm trains, and serves two kinds of
clients:

- remote inference: each ``start_episode`` / ``get_action`` / ``log_action`` / ``log_returns``
  / ``end_episode`` of a client is a request, served by an ``ExternalEnvSampler`` over the
  worker (``ioctx.worker``) with its policies, preprocessors and filters;
- local inference: the client asks for what it needs to act itself (``GET_WORKER_ARGS``: the
  spaces, the algorithm's name and the JSON-safe part of the config; ``GET_WEIGHTS``), collects
  rows and reports them (``REPORT_SAMPLES``); they are checked against the rows this server
  makes itself (columns, dtypes, shapes, values in the spaces, episodes contiguous) before they
  are taken.

``next()`` returns the rows of both as raw rows (no advantages: the worker's input adds them,
``runtime.offline.episode_columns``), actions in the policy's coordinates as the sampler records
them (``rows_in_policy_space``: not to be normalised again); ``pop_metrics()`` the episodes
clients finished (remote episodes counted here, local ones as their clients report them).

Two timeouts: ``idle_timeout`` is the reference's: how long ``next()`` waits for a fragment
(``rollout_fragment_length`` rows) before it returns what there is (running episodes cut), or
an empty batch when there is nothing, so that an algorithm with no client connected keeps
iterating. ``episode_timeout`` is how long a remote episode may go without a call before it is
dropped (its client is taken to have vanished: its rows not handed out yet go, it counts as a
faulty episode, its later calls get 404), so that a vanished client holds neither memory nor a
``max_episodes`` slot; other episodes lose nothing.

Security: the body is JSON in ``runtime.env.wire_format`` (never pickle: nothing a client
sends is executed); any request that is not (bad JSON, a pickle, wrong shapes or dtypes, an
observation outside the space, an unknown command or episode, a body over ``max_body_bytes``:
413) gets a 4xx with a one-line JSON reason ``{"error": ...}``, changes nothing and leaves the
server serving others. With ``token`` set, every request must carry ``Authorization: Bearer
<token>`` (401 otherwise; compared in constant time). The server binds ``127.0.0.1`` when
``address`` is None or ""; give ``"0.0.0.0"`` (or an interface's address) explicitly to listen
beyond the machine, and then set a token: HTTP is plain text, so use it on a trusted network or
behind a TLS-terminating proxy. ``max_connections`` bounds the connections (and threads) served
at once; a connection idle for ``connection_timeout`` seconds is closed.
"""

from __future__ import annotations

import atexit
import contextlib
import hmac
import logging
import socket
import sys
import threading
from collections.abc import Callable, Mapping
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
import numpy.typing as npt

from rlconf.callback_hooks import CALLBACK_HOOKS
from runtime.core.multi_agent_batch import MultiAgentBatch
from runtime.core.sample_batch import SampleBatch
from runtime.env.agent_rows import AGENT_INDEX
from runtime.env.episode import EpisodeMetrics
from runtime.env.external_env import (
    EpisodeError,
    ExternalEnv,
    ExternalEnvClosed,
    ExternalEnvSampler,
    ExternalMultiAgentEnv,
)
from runtime.env.wire_format import (
    WIRE_VERSION,
    WireFormatError,
    check_episode_id,
    decode_agent_dict,
    decode_batch,
    decode_info,
    decode_metrics,
    decode_reward,
    decode_value,
    dumps,
    encode_agent_dict,
    encode_space,
    encode_value,
    encode_weights,
    loads,
)
from runtime.offline.input_reader import InputReader

logger = logging.getLogger(__name__)
Array = npt.NDArray[Any]
SB = SampleBatch

#: The commands, as the reference names them.
START_EPISODE = "START_EPISODE"
GET_ACTION = "GET_ACTION"
LOG_ACTION = "LOG_ACTION"
LOG_RETURNS = "LOG_RETURNS"
END_EPISODE = "END_EPISODE"
GET_WORKER_ARGS = "GET_WORKER_ARGS"
GET_WEIGHTS = "GET_WEIGHTS"
REPORT_SAMPLES = "REPORT_SAMPLES"

DEFAULT_MAX_BODY_BYTES = 64 << 20
#: Config keys a client never needs (the server's env, input, output, callbacks, evaluation):
#: left out of GET_WORKER_ARGS.
SERVER_ONLY_KEYS = frozenset(
    {
        "env",
        "env_config",
        "env_task_fn",
        "input",
        "input_config",
        "output",
        "callbacks",
        *CALLBACK_HOOKS,
        "custom_eval_function",
        "evaluation_config",
        "logger_config",
        "extra_python_environs_for_driver",
        "extra_python_environs_for_worker",
        "observation_space",
        "action_space",
    }
)
#: The most rows one REPORT_SAMPLES may carry.
MAX_REPORTED_ROWS = 1_000_000


class _ServedEnv(ExternalEnv):
    """The server's env: its episodes are driven by the handler threads, not by ``run()``."""

    def run(self) -> None:
        return None


class _ServedMultiAgentEnv(ExternalMultiAgentEnv):
    def run(self) -> None:
        return None


class PolicyServerInput(InputReader):
    """Serves ``PolicyClient``s at ``address:port`` and hands their experience to the worker
    of ``ioctx`` (see the module doc). ``close()`` shuts the server down."""

    #: The rows' actions are in the policy's coordinates already (as the samplers record
    #: them): an input must not normalise them again.
    rows_in_policy_space: ClassVar[bool] = True

    def __init__(
        self,
        ioctx: Any,
        address: str | None,
        port: int,
        idle_timeout: float = 3.0,
        *,
        token: str | None = None,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        episode_timeout: float | None = 300.0,
        max_episodes: int = 100,
        max_connections: int = 64,
        connection_timeout: float = 60.0,
    ) -> None:
        worker = getattr(ioctx, "worker", None)
        if worker is None:
            raise ValueError(
                "PolicyServerInput needs the IOContext of a rollout worker (ioctx.worker is "
                "None); make it with config.offline_data(input_=lambda ioctx: "
                "PolicyServerInput(ioctx, address, port))"
            )
        if token is not None and (not isinstance(token, str) or not token):
            raise ValueError(f"token={token!r}; allowed: a non-empty string, or None")
        if int(max_body_bytes) < 1024:
            raise ValueError(f"max_body_bytes={max_body_bytes!r}; allowed: an int >= 1024")
        self.worker = worker
        self.idle_timeout = float(idle_timeout)
        self.max_body_bytes = int(max_body_bytes)
        self._token = None if token is None else token.encode()
        self.multi_agent = bool(getattr(worker, "multi_agent", False))
        spaces = worker.policy_spaces
        first_obs, first_action = next(iter(spaces.values()))
        env_class = _ServedMultiAgentEnv if self.multi_agent else _ServedEnv
        self.env = env_class(first_action, first_obs, max_concurrent=int(max_episodes))
        fragment = worker.config.get_rollout_fragment_length()
        self.sampler = ExternalEnvSampler(
            self.env, worker, int(fragment), episode_timeout=episode_timeout, start_env=False
        )
        host = address or "127.0.0.1"
        handler = type("PolicyRequestHandler", (_Handler,), {"timeout": float(connection_timeout)})
        self._server = _Server((host, int(port)), handler, self, int(max_connections))
        self.address, self.port = self._server.server_address[:2]
        self._closed = False
        #: Requests being served (close() waits for them).
        self._requests = threading.Condition()
        self._in_flight = 0
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.25},
            name=f"PolicyServerInput:{self.port}",
            daemon=True,
        )
        self._thread.start()
        atexit.register(self._close_at_exit)
        logger.info(
            "policy server listening on %s:%s%s",
            self.address,
            self.port,
            " (token required)" if self._token else "",
        )

    # ------------------------------------------------------------------ InputReader

    def next(self) -> SampleBatch | MultiAgentBatch:
        """The rows clients sent since the last call: a fragment as soon as there is one, else
        after ``idle_timeout`` seconds what there is (an empty batch when nothing came)."""
        try:
            batch = self.sampler.poll(self.idle_timeout, partial=True)
        except ExternalEnvClosed:
            batch = None
        if batch is None:
            empty: SampleBatch | MultiAgentBatch = self.sampler.empty_batch()
            return empty
        return batch  # type: ignore[no-any-return]

    def pop_metrics(self) -> list[EpisodeMetrics]:
        return self.sampler.pop_metrics()

    # ------------------------------------------------------------------ lifecycle

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """Stop serving: the listening socket closes, the requests in flight finish (up to 10
        s: none is left inside a forward pass when the process exits), then every open
        connection closes; the episodes' later calls are refused. Also run at exit for a
        server still open then."""
        with self._requests:
            if self._closed:
                return
            self._closed = True
        atexit.unregister(self._close_at_exit)
        self.sampler.close()
        self._server.shutdown()
        self._server.server_close()
        with self._requests:
            self._requests.wait_for(lambda: self._in_flight == 0, timeout=10.0)
        self._server.close_connections()
        self._thread.join(timeout=5.0)
        logger.info("policy server on %s:%s closed", self.address, self.port)

    def _close_at_exit(self) -> None:
        self.close()

    def enter_request(self) -> bool:
        """Count a request in (False once closing: it is refused)."""
        with self._requests:
            if self._closed:
                return False
            self._in_flight += 1
            return True

    def leave_request(self) -> None:
        with self._requests:
            self._in_flight -= 1
            if self._in_flight == 0:
                self._requests.notify_all()

    def __enter__(self) -> PolicyServerInput:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ requests

    def authorized(self, header: str | None) -> bool:
        if self._token is None:
            return True
        given = (header or "").encode("latin-1", "replace")
        return hmac.compare_digest(given, b"Bearer " + self._token)

    def execute(self, message: dict[str, Any]) -> dict[str, Any]:
        """Run one command (already parsed JSON); its reply. Anything wrong with it raises
        ``WireFormatError`` or an ``EpisodeError`` before anything changes."""
        command = message.get("command")
        handler = self._commands.get(command) if isinstance(command, str) else None
        if handler is None:
            raise WireFormatError(
                f"command {command!r} is unknown; allowed: {', '.join(sorted(self._commands))}"
            )
        keys, run = handler
        extra = set(message) - keys - {"command"}
        if extra:
            raise WireFormatError(
                f"{command} does not take {sorted(extra)}; it takes {sorted(keys)}"
            )
        return run(self, message)

    def _start_episode(self, message: dict[str, Any]) -> dict[str, Any]:
        episode_id = message.get("episode_id")
        if episode_id is not None:
            check_episode_id(episode_id)
        training = message.get("training_enabled", True)
        if not isinstance(training, bool):
            raise WireFormatError(f"training_enabled is {training!r}; allowed: true or false")
        return {"episode_id": self.sampler.start_episode(episode_id, training)}

    def _get_action(self, message: dict[str, Any]) -> dict[str, Any]:
        episode_id = check_episode_id(message.get("episode_id"))
        obs = self._decode_obs(episode_id, _required(message, "observation"))
        action = self.sampler.act(episode_id, obs, checked=True)
        if not self.multi_agent:
            space = self.sampler.action_space(self.sampler.single_policy)
            return {"action": encode_value(space, action)}
        return {
            "action": encode_agent_dict(
                action,
                lambda agent, value: encode_value(
                    self.sampler.action_space(self.sampler.policy_for(episode_id, agent)), value
                ),
            )
        }

    def _log_action(self, message: dict[str, Any]) -> dict[str, Any]:
        episode_id = check_episode_id(message.get("episode_id"))
        obs = self._decode_obs(episode_id, _required(message, "observation"))
        action = self._decode_in(
            episode_id, _required(message, "action"), "action", self.sampler.action_space
        )
        self.sampler.act(episode_id, obs, action, off_policy=True, checked=True)
        return {}

    def _log_returns(self, message: dict[str, Any]) -> dict[str, Any]:
        episode_id = check_episode_id(message.get("episode_id"))
        reward, info, done = message.get("reward"), message.get("info"), message.get("done")
        if not self.multi_agent:
            if done is not None:
                raise WireFormatError("done is for multi-agent episodes; use END_EPISODE")
            self.sampler.log_returns(
                episode_id, {None: decode_reward(reward)}, {None: decode_info(info)}, None
            )
            return {}
        rewards = decode_agent_dict(reward, "reward", lambda a, r: decode_reward(r, "reward"))
        infos = (
            None
            if info is None
            else decode_agent_dict(info, "info", lambda a, i: decode_info(i, "info"))
        )
        dones = None if done is None else decode_agent_dict(done, "done", _decode_bool)
        self.sampler.log_returns(episode_id, rewards, infos, dones)
        return {}

    def _end_episode(self, message: dict[str, Any]) -> dict[str, Any]:
        episode_id = check_episode_id(message.get("episode_id"))
        obs = self._decode_obs(episode_id, _required(message, "observation"))
        self.sampler.end_episode(episode_id, obs, checked=True)
        return {}

    def _get_worker_args(self, message: dict[str, Any]) -> dict[str, Any]:
        config = self.worker.config
        plain, not_sent = client_config(config)
        return {
            "wire_version": WIRE_VERSION,
            "algorithm": getattr(config, "algo_name", None),
            "config": plain,
            "config_not_sent": not_sent,
            "multi_agent": self.multi_agent,
            "policies": {
                pid: {
                    "observation_space": encode_space(obs_space),
                    "action_space": encode_space(action_space),
                }
                for pid, (obs_space, action_space) in self.worker.policy_spaces.items()
            },
        }

    def _get_weights(self, message: dict[str, Any]) -> dict[str, Any]:
        timestep = max((int(p.global_timestep) for p in self.worker.policy_map.values()), default=0)
        return {
            "weights": encode_weights(self.worker.get_weights()),
            "timestep": timestep,
            "filters": self.worker.get_filter_states(),
        }

    def _report_samples(self, message: dict[str, Any]) -> dict[str, Any]:
        samples = message.get("samples")
        metrics = decode_metrics(message.get("metrics", []))
        filters = message.get("filters") or {}
        if not isinstance(filters, dict):
            raise WireFormatError("filters is not an object of policies' filter buffers")
        checked_filters = {
            pid: self._checked_filter_buffer(pid, buffer) for pid, buffer in filters.items()
        }
        accepted: list[tuple[str, dict[str, Array], int]] = []
        if samples is not None:
            policies, env_steps = decode_batch(samples)
            total = sum(len(next(iter(c.values()), ())) for c in policies.values())
            if total > MAX_REPORTED_ROWS:
                raise WireFormatError(
                    f"samples has {total} rows; at most {MAX_REPORTED_ROWS} per report"
                )
            for pid, columns in policies.items():
                accepted.append((pid, self._checked_rows(pid, columns), 0))
            if accepted:
                # The env steps go with the first policy's rows (the batch counts them once).
                pid, columns, _ = accepted[0]
                accepted[0] = (pid, columns, min(int(env_steps), total))
        # Everything checked: now take it.
        for pid, columns, steps in accepted:
            eps = columns[SB.EPS_ID]
            unique, inverse = np.unique(eps, return_inverse=True)
            fresh = np.asarray(self.sampler.new_episode_ids(len(unique)), dtype=np.int64)
            columns[SB.EPS_ID] = fresh[inverse.reshape(-1)]
            self.sampler.add_rows(pid, columns, steps)
        for pid, buffer in checked_filters.items():
            self.worker.filters[pid].apply_buffer(buffer)
        self.sampler.add_metrics(metrics)
        return {"rows": sum(len(c[SB.OBS]) for _, c, _ in accepted)}

    _commands: ClassVar[dict[str, tuple[set[str], Callable[..., dict[str, Any]]]]] = {
        START_EPISODE: ({"episode_id", "training_enabled"}, _start_episode),
        GET_ACTION: ({"episode_id", "observation"}, _get_action),
        LOG_ACTION: ({"episode_id", "observation", "action"}, _log_action),
        LOG_RETURNS: ({"episode_id", "reward", "info", "done"}, _log_returns),
        END_EPISODE: ({"episode_id", "observation"}, _end_episode),
        GET_WORKER_ARGS: (set(), _get_worker_args),
        GET_WEIGHTS: (set(), _get_weights),
        REPORT_SAMPLES: ({"samples", "metrics", "filters"}, _report_samples),
    }

    # ------------------------------------------------------------------ decoding

    def _decode_obs(self, episode_id: str, value: Any) -> Any:
        return self._decode_in(episode_id, value, "observation", self.sampler.observation_space)

    def _decode_in(
        self,
        episode_id: str,
        value: Any,
        what: str,
        space_of: Callable[[str], gym.Space[Any]],
    ) -> Any:
        """A value (or, multi-agent, a dict of them) decoded into the space of its policy."""
        if not self.multi_agent:
            return decode_value(space_of(self.sampler.single_policy), value, what)
        return decode_agent_dict(
            value,
            what,
            lambda agent, item: decode_value(
                space_of(self.sampler.policy_for(episode_id, agent)),
                item,
                f"{what} of agent {agent!r}",
            ),
        )

    def _checked_rows(self, policy_id: str, columns: dict[str, Array]) -> dict[str, Array]:
        """A local-inference client's rows of ``policy_id``, checked against the rows this
        server's sampler makes: the same columns, dtypes and row shapes, actions in the
        policy's space, finite rewards, no NaN, each agent's episode one run of consecutive
        ``t``."""
        where = f"samples of policy {policy_id!r}"
        if policy_id not in self.worker.policy_spaces:
            raise WireFormatError(
                f"{where}: no such policy; policies: {sorted(self.worker.policy_spaces)}"
            )
        schema = self.sampler.row_schema(policy_id)
        if set(columns) != set(schema):
            missing = sorted(set(schema) - set(columns))
            unexpected = sorted(set(columns) - set(schema))
            raise WireFormatError(
                f"{where}: columns missing {missing}, unexpected {unexpected}; the rows have "
                f"{sorted(schema)}"
            )
        rows = len(columns[SB.OBS]) if columns[SB.OBS].ndim else -1
        for name, (dtype, shape) in schema.items():
            values = columns[name]
            if values.dtype != dtype or values.shape != (rows, *shape):
                raise WireFormatError(
                    f"{where}: column {name!r} is {values.dtype} of shape {values.shape}; "
                    f"allowed: {dtype} of shape {(max(rows, 0), *shape)}"
                )
            if values.dtype.kind == "f" and np.isnan(values).any():
                raise WireFormatError(f"{where}: column {name!r} holds NaN")
        if not np.all(np.isfinite(columns[SB.REWARDS])):
            raise WireFormatError(f"{where}: rewards must be finite")
        _check_actions(self.sampler.action_space(policy_id), columns[SB.ACTIONS], where)
        t = columns[SB.T]
        if (t < 0).any() or (AGENT_INDEX in columns and (columns[AGENT_INDEX] < 0).any()):
            raise WireFormatError(f"{where}: t and agent_index must be >= 0")
        if rows > 1:
            key = columns[SB.EPS_ID]
            change = key[1:] != key[:-1]
            if AGENT_INDEX in columns:
                agents = columns[AGENT_INDEX]
                change = change | (agents[1:] != agents[:-1])
                runs = len(np.unique(np.stack([key, agents]), axis=1)[0])
            else:
                runs = len(np.unique(key))
            if runs != int(change.sum()) + 1:
                raise WireFormatError(
                    f"{where}: the rows of an episode are not contiguous (each agent's episode "
                    "must be one run of rows)"
                )
            if np.any((t[1:] != t[:-1] + 1) & ~change):
                raise WireFormatError(f"{where}: t does not step by 1 within an episode")
        return dict(columns)

    def _checked_filter_buffer(self, policy_id: Any, buffer: Any) -> dict[str, Any]:
        where = f"filters[{policy_id!r}]"
        obs_filter = self.worker.filters.get(policy_id)
        if obs_filter is None:
            raise WireFormatError(f"{where}: no such policy")
        if not isinstance(buffer, dict) or buffer.get("name") != obs_filter.name:
            raise WireFormatError(f"{where}: not a buffer of a {obs_filter.name}")
        if obs_filter.name == "NoFilter":
            return {"name": "NoFilter"}
        stats = buffer.get("stats")
        if not isinstance(stats, dict) or set(stats) != {"n", "mean", "m2"}:
            raise WireFormatError(f"{where}.stats is not {{'n', 'mean', 'm2'}}")
        n = stats["n"]
        if not isinstance(n, int) or isinstance(n, bool) or not 0 <= n <= 1 << 40:
            raise WireFormatError(f"{where}.stats.n is {n!r}; allowed: an int >= 0")
        shape = tuple(getattr(obs_filter, "shape", ()))
        arrays = {}
        for name in ("mean", "m2"):
            try:
                array = np.asarray(stats[name], dtype=np.float64)
            except (TypeError, ValueError):
                raise WireFormatError(f"{where}.stats.{name} is not an array of numbers") from None
            if array.shape != shape or not np.all(np.isfinite(array)):
                raise WireFormatError(
                    f"{where}.stats.{name} has shape {array.shape}; allowed: finite, {shape}"
                )
            arrays[name] = array
        if (arrays["m2"] < 0).any():
            raise WireFormatError(f"{where}.stats.m2 must be >= 0")
        return {
            "name": obs_filter.name,
            "stats": {"n": n, "mean": arrays["mean"].tolist(), "m2": arrays["m2"].tolist()},
        }


def _required(message: Mapping[str, Any], key: str) -> Any:
    if key not in message:
        raise WireFormatError(f"{message.get('command')} needs {key!r}")
    return message[key]


def _decode_bool(agent: Any, value: Any) -> bool:
    if not isinstance(value, bool):
        raise WireFormatError(f"done of agent {agent!r} is {value!r}; allowed: true or false")
    return value


def _check_actions(space: gym.Space[Any], actions: Array, where: str) -> None:
    """Actions (in the policy's coordinates) that the policy could have taken."""
    if isinstance(space, gym.spaces.Discrete):
        if ((actions < 0) | (actions >= int(space.n))).any():
            raise WireFormatError(f"{where}: actions outside 0..{int(space.n) - 1}")
    elif isinstance(space, gym.spaces.MultiDiscrete):
        if ((actions < 0) | (actions >= space.nvec)).any():
            raise WireFormatError(f"{where}: actions outside {space}")
    elif isinstance(space, gym.spaces.MultiBinary):
        if ((actions != 0) & (actions != 1)).any():
            raise WireFormatError(f"{where}: actions outside {space}")
    elif actions.dtype.kind == "f" and not np.all(np.isfinite(actions)):
        raise WireFormatError(f"{where}: actions must be finite")


def client_config(config: Any) -> tuple[dict[str, Any], list[str]]:
    """The part of ``config`` a local-inference client builds its policy from: plain JSON values
    (the server-only keys left out), and the paths of the values that could not be sent (a
    class, a function, a space): a client refuses to guess them."""
    plain: dict[str, Any] = {}
    not_sent: list[str] = []
    for key, value in config.to_dict().items():
        if key in SERVER_ONLY_KEYS:
            continue
        kept = _plain(value, key, not_sent)
        if kept is not _DROP:
            plain[key] = kept
    return plain, not_sent


_DROP = object()


def _plain(value: Any, path: str, not_sent: list[str]) -> Any:
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        if np.isfinite(value):
            return value
        not_sent.append(path)
        return _DROP
    if isinstance(value, list | tuple):
        items = [_plain(v, f"{path}[{i}]", not_sent) for i, v in enumerate(value)]
        if any(item is _DROP for item in items):
            return _DROP
        return items
    if isinstance(value, Mapping) and all(isinstance(k, str) for k in value):
        out = {}
        for k, v in value.items():
            item = _plain(v, f"{path}.{k}", not_sent)
            if item is not _DROP:
                out[k] = item
        return out
    not_sent.append(path)
    return _DROP


# ---------------------------------------------------------------------- HTTP


#: Header fields a request may give once only (two lengths are a request-smuggling trick).
_SINGLE_FIELDS = frozenset({"content-length", "transfer-encoding", "authorization", "host"})


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(
        self,
        address: tuple[str, int],
        handler: type[BaseHTTPRequestHandler],
        owner: PolicyServerInput,
        max_connections: int,
    ) -> None:
        self.owner = owner
        self._slots = threading.BoundedSemaphore(max(1, max_connections))
        self._connections: set[Any] = set()
        self._connections_lock = threading.Lock()
        super().__init__(address, handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            logger.warning("policy server: too many connections; refusing %s", client_address)
            refusal = _error_body("too many connections; try again later")
            with contextlib.suppress(OSError):
                request.sendall(_response(HTTPStatus.SERVICE_UNAVAILABLE, refusal, close=True))
            self.shutdown_request(request)
            return
        with self._connections_lock:
            self._connections.add(request)
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._release(request)
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._release(request)

    def _release(self, request: Any) -> None:
        with self._connections_lock:
            if request in self._connections:
                self._connections.discard(request)
                self._slots.release()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A connection that broke (the client went away) is no news; anything else is logged
        (socketserver would print it to stderr)."""
        error = sys.exc_info()[1]
        if isinstance(error, OSError):
            logger.debug("policy server: connection from %s ended: %s", client_address, error)
        else:
            logger.exception("policy server: the connection from %s failed", client_address)

    def close_connections(self) -> None:
        with self._connections_lock:
            connections = list(self._connections)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)


def _error_body(reason: str) -> bytes:
    return dumps({"error": " ".join(reason.split())})


def _response(status: HTTPStatus | int, body: bytes, close: bool = False) -> bytes:
    status = HTTPStatus(status)
    head = (
        f"HTTP/1.1 {status.value} {status.phrase}\r\n"
        "Content-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n"
        f"{'Connection: close' + chr(13) + chr(10) if close else ''}\r\n"
    )
    return head.encode("latin-1") + body


class _Handler(BaseHTTPRequestHandler):
    """One connection: POST bodies in the wire format, JSON replies, keep-alive."""

    protocol_version = "HTTP/1.1"
    server_version = "rlconf-policy-server"
    sys_version = ""
    #: Replies go out in one write; no Nagle delay on the small ones.
    disable_nagle_algorithm = True
    server: _Server

    def _reply(self, status: int, payload: dict[str, Any], close: bool = False) -> None:
        body = dumps(payload) if status == 200 else _error_body(str(payload.get("error", "")))
        close = close or self.close_connection
        self.wfile.write(_response(status, body, close))
        if close:
            self.close_connection = True

    #: The request's header fields, names in lower case (``parse_request``).
    fields: dict[str, str]

    def parse_request(self) -> bool:
        """The request line and the header fields, read lean (the standard library's email
        parser costs more than the rest of a small request): HTTP/1.0 and 1.1 only, at most 100
        fields, none of Content-Length, Transfer-Encoding or Authorization twice."""
        self.close_connection = True
        self.fields = {}
        raw_line: bytes = getattr(self, "raw_requestline", b"")
        line = raw_line.decode("iso-8859-1").rstrip("\r\n")
        self.requestline = line
        words = line.split()
        if len(words) != 3 or not words[2].startswith("HTTP/"):
            self.send_error(400, f"bad request line {line[:80]!r}")
            return False
        command, path, version = words
        if version not in ("HTTP/1.0", "HTTP/1.1"):
            self.send_error(400, f"HTTP version {version[:20]!r}; allowed: HTTP/1.0, HTTP/1.1")
            return False
        self.command, self.path, self.request_version = command, path, version
        fields: dict[str, str] = {}
        for _ in range(101):
            raw = self.rfile.readline(65537)
            if len(raw) > 65536:
                self.send_error(431, "a header line is longer than 65536 bytes")
                return False
            if raw in (b"\r\n", b"\n", b""):
                break
            name, colon, value = raw.decode("iso-8859-1").partition(":")
            name = name.lower()
            if not colon or not name or name != name.strip():
                self.send_error(400, f"malformed header line {raw[:40]!r}")
                return False
            if name in fields and name in _SINGLE_FIELDS:
                self.send_error(400, f"header {name} given twice")
                return False
            fields[name] = value.strip()
        else:
            self.send_error(431, "more than 100 header lines")
            return False
        self.fields = fields
        connection = fields.get("connection", "").lower()
        self.close_connection = connection == "close" or (
            version == "HTTP/1.0" and connection != "keep-alive"
        )
        return True

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """The standard library's own errors (a malformed request line, an unsupported
        method), as JSON."""
        reason = message or HTTPStatus(code).phrase
        try:
            self._reply(code, {"error": f"{reason}"}, close=True)
        except OSError:
            self.close_connection = True

    def do_POST(self) -> None:
        owner = self.server.owner
        if not owner.enter_request():
            self._reply(503, {"error": "the policy server is closing"}, close=True)
            return
        try:
            self._post(owner)
        finally:
            owner.leave_request()

    def _post(self, owner: PolicyServerInput) -> None:
        fields = self.fields
        if not owner.authorized(fields.get("authorization")):
            self._reply(
                401, {"error": "missing or wrong token (Authorization: Bearer <token>)"}, True
            )
            return
        if "transfer-encoding" in fields:
            self._reply(411, {"error": "chunked bodies are refused; send Content-Length"}, True)
            return
        length_text = fields.get("content-length")
        if length_text is None:
            self._reply(411, {"error": "Content-Length is required"}, True)
            return
        if not length_text.strip().isdigit():
            self._reply(400, {"error": f"Content-Length {length_text!r} is not a number"}, True)
            return
        length = int(length_text)
        if length > owner.max_body_bytes:
            self._reply(
                413,
                {"error": f"the body has {length} bytes; at most {owner.max_body_bytes} allowed"},
                True,
            )
            return
        if fields.get("expect", "").lower() == "100-continue":
            self.wfile.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        body = self.rfile.read(length)
        if len(body) < length:
            self.close_connection = True
            return
        try:
            reply = owner.execute(loads(body))
        except (WireFormatError, EpisodeError) as error:
            status = getattr(error, "status", 400)
            self._reply(status, {"error": str(error)})
            return
        except ExternalEnvClosed as error:
            self._reply(503, {"error": str(error)}, close=True)
            return
        except Exception as error:
            logger.exception("policy server: a request failed")
            self._reply(500, {"error": f"{type(error).__name__}: {error}"})
            return
        self._reply(200, reply)

    def _not_allowed(self) -> None:
        self._reply(405, {"error": f"method {self.command} is not allowed; use POST"}, True)

    do_GET = do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = _not_allowed

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("policy server %s: " + format, self.address_string(), *args)
