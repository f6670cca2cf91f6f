"""The wire format of the policy server and its clients: JSON, with numpy arrays as typed
buffers, and nothing that runs code.

The reference sends pickles, and unpickling a body runs whatever the sender put in it; a server
reachable over a network must never do that. Everything here is plain JSON (UTF-8, no NaN or
infinity literals), and arrays travel as ``{"dtype": "float32", "shape": [4], "b64": "..."}``:
the raw little-endian bytes in base64, with ``dtype`` one of ``ARRAY_DTYPES`` (never ``object``,
never a structured dtype) and the byte count checked against the shape. Decoding builds only
numbers, strings, lists, dicts and numeric arrays.

What is decoded against a space (observations, actions) is coerced into the space's form and
dtype and checked with ``space.contains``; a value outside it is a ``WireFormatError``. So are a
body that is not JSON (a pickle), a dtype outside the list, a buffer whose size disagrees with
its shape, and a non-finite reward. Multi-agent dicts travel as ``[[agent_id, value], ...]``
pairs, because JSON object keys are strings and agent ids may be ints.

Spaces (``Box``, ``Discrete``, ``MultiDiscrete``, ``MultiBinary`` and ``Dict``/``Tuple`` of
these), policy weights, experience rows and episode metrics have encodings here too.
"""

from __future__ import annotations

import binascii
import json
import math
from collections.abc import Callable, Mapping
from typing import Any

import gymnasium as gym
import numpy as np
import numpy.typing as npt

from runtime.core.multi_agent_batch import MultiAgentBatch
from runtime.core.sample_batch import SampleBatch
from runtime.env.episode import EpisodeMetrics

Array = npt.NDArray[Any]

#: The version of this format; a client and a server of different versions refuse each other.
WIRE_VERSION = 1
#: The dtypes an array may have on the wire.
ARRAY_DTYPES = frozenset(
    {
        "bool",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "float16",
        "float32",
        "float64",
    }
)
#: The most elements one array (or one space) may have: a bound on what a shape can ask for
#: before any byte is decoded.
MAX_ELEMENTS = 1 << 28
#: How deeply Dict / Tuple spaces (and values of them) may nest.
MAX_SPACE_DEPTH = 8
#: The longest episode id accepted.
MAX_EPISODE_ID = 128
#: How deeply an info dict may nest.
MAX_INFO_DEPTH = 16


class WireFormatError(ValueError):
    """A message that is not in the wire format: nothing of it was executed."""


# ---------------------------------------------------------------------- bodies


def dumps(message: Mapping[str, Any]) -> bytes:
    """A message as compact UTF-8 JSON (no NaN or infinity literals)."""
    try:
        return json.dumps(message, separators=(",", ":"), allow_nan=False).encode()
    except (TypeError, ValueError) as exc:
        raise WireFormatError(f"the message can't be written as JSON: {exc}") from None


def loads(body: bytes) -> dict[str, Any]:
    """A message from a body: a JSON object, or a ``WireFormatError`` saying why not (a pickle,
    bad UTF-8, bad JSON, NaN literals, too deep a nesting, an integer of too many digits)."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise WireFormatError(
            f"the body is not UTF-8 JSON (starts with {body[:8]!r}); this server speaks JSON "
            "only (never pickle)"
        ) from None
    try:
        message = json.loads(text, parse_constant=_refuse_constant)
    except (ValueError, RecursionError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise WireFormatError(f"the body is not valid JSON: {reason}") from None
    if not isinstance(message, dict):
        raise WireFormatError(
            f"the body is a JSON {type(message).__name__}; allowed: a JSON object"
        )
    return message


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON (non-finite numbers are not allowed)")


# ---------------------------------------------------------------------- arrays


def encode_array(array: Any) -> dict[str, Any]:
    """A numeric array as a typed buffer (little-endian bytes in base64)."""
    array = np.asarray(array)
    name = array.dtype.name
    if name not in ARRAY_DTYPES:
        raise WireFormatError(
            f"an array of dtype {name} can't be sent; allowed: {', '.join(sorted(ARRAY_DTYPES))}"
        )
    data = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<")).tobytes()
    text = binascii.b2a_base64(data, newline=False).decode()
    return {"dtype": name, "shape": list(array.shape), "b64": text}


def is_typed_buffer(value: Any) -> bool:
    return isinstance(value, dict) and value.keys() == {"dtype", "shape", "b64"}


def decode_array(value: Any, what: str) -> Array:
    """A typed buffer back to an array (a writable copy); ``what`` names it in errors."""
    if not is_typed_buffer(value):
        raise WireFormatError(
            f"{what} is not a typed buffer; allowed: {{'dtype': ..., 'shape': [...], 'b64': ...}}"
        )
    name, shape, data = value["dtype"], value["shape"], value["b64"]
    if not isinstance(name, str) or name not in ARRAY_DTYPES:
        raise WireFormatError(
            f"{what} has dtype {name!r}; allowed: {', '.join(sorted(ARRAY_DTYPES))}"
        )
    if (
        not isinstance(shape, list)
        or len(shape) > 32
        or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape)
    ):
        raise WireFormatError(
            f"{what} has shape {shape!r}; allowed: a list of at most 32 non-negative ints"
        )
    size = math.prod(shape)
    if size > MAX_ELEMENTS:
        raise WireFormatError(f"{what} has {size} elements; at most {MAX_ELEMENTS} are allowed")
    if not isinstance(data, str):
        raise WireFormatError(f"{what}'s b64 is a {type(data).__name__}; allowed: a string")
    try:
        raw = binascii.a2b_base64(data, strict_mode=True)
    except (binascii.Error, ValueError):
        raise WireFormatError(f"{what}'s b64 is not valid base64") from None
    dtype = np.dtype(name).newbyteorder("<")
    if len(raw) != size * dtype.itemsize:
        raise WireFormatError(
            f"{what} has {len(raw)} bytes; shape {shape} of {name} needs {size * dtype.itemsize}"
        )
    if name == "bool":
        # Any byte but 0 is True (a bool array must hold 0 or 1 in each byte).
        flags: Array = (np.frombuffer(raw, dtype=np.uint8) != 0).reshape(shape)
        return flags
    array: Array = np.frombuffer(raw, dtype=dtype).astype(np.dtype(name)).reshape(shape)
    return array


# ---------------------------------------------------------------------- spaces


def encode_space(space: gym.Space[Any]) -> dict[str, Any]:
    """A space as JSON (bounds as typed buffers, so infinite bounds travel)."""
    if isinstance(space, gym.spaces.Box):
        return {
            "type": "Box",
            "low": encode_array(space.low),
            "high": encode_array(space.high),
            "dtype": np.dtype(space.dtype).name,
        }
    if isinstance(space, gym.spaces.Discrete):
        return {"type": "Discrete", "n": int(space.n), "start": int(space.start)}
    if isinstance(space, gym.spaces.MultiDiscrete):
        return {
            "type": "MultiDiscrete",
            "nvec": encode_array(space.nvec),
            "start": encode_array(space.start),
            "dtype": np.dtype(space.dtype).name,
        }
    if isinstance(space, gym.spaces.MultiBinary):
        n: Any = space.n
        return {
            "type": "MultiBinary",
            "n": int(n) if np.ndim(n) == 0 else [int(d) for d in np.asarray(n).ravel()],
        }
    if isinstance(space, gym.spaces.Tuple):
        return {"type": "Tuple", "spaces": [encode_space(s) for s in space.spaces]}
    if isinstance(space, gym.spaces.Dict):
        return {"type": "Dict", "spaces": [[k, encode_space(s)] for k, s in space.spaces.items()]}
    raise WireFormatError(
        f"a {type(space).__name__} space can't be sent; allowed: Box, Discrete, MultiDiscrete, "
        "MultiBinary, and Dict / Tuple of these"
    )


def decode_space(value: Any, what: str = "space", depth: int = 0) -> gym.Space[Any]:
    """A space from ``encode_space``'s JSON, checked (dtypes, sizes, nesting)."""
    if depth > MAX_SPACE_DEPTH:
        raise WireFormatError(f"{what} nests deeper than {MAX_SPACE_DEPTH} levels")
    if not isinstance(value, dict) or not isinstance(value.get("type"), str):
        raise WireFormatError(f"{what} is not a space description (an object with a 'type')")
    kind = value["type"]
    try:
        if kind == "Box":
            dtype = _numeric_dtype(value.get("dtype"), f"{what}.dtype")
            low = decode_array(value.get("low"), f"{what}.low")
            high = decode_array(value.get("high"), f"{what}.high")
            if low.shape != high.shape:
                raise WireFormatError(
                    f"{what}: low has shape {low.shape}, high has shape {high.shape}"
                )
            return gym.spaces.Box(low.astype(dtype), high.astype(dtype), dtype=dtype)
        if kind == "Discrete":
            n, start = value.get("n"), value.get("start", 0)
            if not (isinstance(n, int) and _is_int(n) and 1 <= n <= 2**62 and _is_int(start)):
                raise WireFormatError(f"{what}: Discrete n={n!r}, start={start!r}")
            return gym.spaces.Discrete(n, start=start)
        if kind == "MultiDiscrete":
            dtype = _numeric_dtype(value.get("dtype"), f"{what}.dtype")
            nvec = decode_array(value.get("nvec"), f"{what}.nvec")
            start = decode_array(value.get("start"), f"{what}.start")
            return gym.spaces.MultiDiscrete(nvec, dtype=dtype, start=start)
        if kind == "MultiBinary":
            n = value.get("n")
            shape = [n] if _is_int(n) else n
            if not isinstance(shape, list) or not all(_is_int(d) and d > 0 for d in shape):
                raise WireFormatError(f"{what}: MultiBinary n={n!r}")
            if math.prod(shape) > MAX_ELEMENTS:
                raise WireFormatError(f"{what}: MultiBinary of {math.prod(shape)} elements")
            return gym.spaces.MultiBinary(shape[0] if _is_int(n) else shape)
        if kind == "Tuple":
            parts = value.get("spaces")
            if not isinstance(parts, list):
                raise WireFormatError(f"{what}: Tuple spaces is not a list")
            return gym.spaces.Tuple(
                [decode_space(s, f"{what}[{i}]", depth + 1) for i, s in enumerate(parts)]
            )
        if kind == "Dict":
            items = value.get("spaces")
            if not isinstance(items, list) or not all(
                isinstance(p, list) and len(p) == 2 and isinstance(p[0], str) for p in items
            ):
                raise WireFormatError(f"{what}: Dict spaces is not a list of [key, space] pairs")
            return gym.spaces.Dict(
                {k: decode_space(s, f"{what}[{k!r}]", depth + 1) for k, s in items}
            )
    except WireFormatError:
        raise
    except (ValueError, TypeError, AssertionError) as exc:
        raise WireFormatError(f"{what}: {kind} can't be made: {exc}") from None
    raise WireFormatError(
        f"{what} has type {kind!r}; allowed: Box, Discrete, MultiDiscrete, MultiBinary, Dict, Tuple"
    )


def _numeric_dtype(name: Any, what: str) -> np.dtype[Any]:
    if not isinstance(name, str) or name not in ARRAY_DTYPES:
        raise WireFormatError(f"{what} is {name!r}; allowed: {', '.join(sorted(ARRAY_DTYPES))}")
    return np.dtype(name)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


# ---------------------------------------------------------------------- values of a space


def encode_value(space: gym.Space[Any], value: Any) -> Any:
    """An observation or action of ``space`` as JSON: a Discrete value as an int, arrays as
    typed buffers, Dict / Tuple values part by part."""
    if isinstance(space, gym.spaces.Discrete):
        return int(value)
    if isinstance(space, gym.spaces.Box | gym.spaces.MultiDiscrete | gym.spaces.MultiBinary):
        return encode_array(np.asarray(value, dtype=space.dtype))
    if isinstance(space, gym.spaces.Tuple):
        return [encode_value(s, v) for s, v in zip(space.spaces, value, strict=True)]
    if isinstance(space, gym.spaces.Dict):
        return {k: encode_value(s, value[k]) for k, s in space.spaces.items()}
    raise WireFormatError(f"values of a {type(space).__name__} space can't be sent")


def decode_value(space: gym.Space[Any], value: Any, what: str) -> Any:
    """A value of ``space`` from JSON (a typed buffer, or plain numbers and lists), in the
    space's form and dtype, and inside it; else a ``WireFormatError`` naming ``what``."""
    decoded = _coerce(space, value, what, 0)
    if type(space) is gym.spaces.Box:
        # (The observations' path: one vectorised bounds test, which NaN fails too.)
        if not (np.all(decoded >= space.low) and np.all(decoded <= space.high)):
            raise WireFormatError(f"{what} {_describe(decoded)} is not in {space}")
        return decoded
    try:
        inside = bool(space.contains(decoded))
    except Exception:  # a space may raise on a value of the wrong kind
        inside = False
    if not inside:
        raise WireFormatError(f"{what} {_describe(decoded)} is not in {space}")
    return decoded


def _coerce(space: gym.Space[Any], value: Any, what: str, depth: int) -> Any:
    if depth > MAX_SPACE_DEPTH:
        raise WireFormatError(f"{what} nests deeper than {MAX_SPACE_DEPTH} levels")
    if isinstance(space, gym.spaces.Discrete):
        if not _is_int(value) or not -(2**63) <= value < 2**63:
            raise WireFormatError(
                f"{what} is {_describe(value)}; allowed: an int of {space} (not a bool)"
            )
        return np.int64(value)
    if isinstance(space, gym.spaces.Box | gym.spaces.MultiDiscrete | gym.spaces.MultiBinary):
        if is_typed_buffer(value):
            array = decode_array(value, what)
            if array.dtype == np.bool_ and space.dtype != np.bool_:
                raise WireFormatError(f"{what} is a bool array; {space} holds numbers")
        elif isinstance(value, list | int | float) and not isinstance(value, bool):
            try:
                array = np.asarray(value, dtype=np.float64)
            except (ValueError, TypeError):
                raise WireFormatError(
                    f"{what} is a list that is not a rectangular array of numbers"
                ) from None
        else:
            raise WireFormatError(
                f"{what} is {_describe(value)}; allowed: a typed buffer or a (nested) list of "
                f"numbers of shape {space.shape}"
            )
        if array.shape != space.shape:
            raise WireFormatError(
                f"{what} has shape {array.shape}; {space} needs shape {space.shape}"
            )
        target = np.dtype(space.dtype)
        if array.dtype.kind == "f" and np.isnan(array).any():
            raise WireFormatError(f"{what} holds NaN")
        if array.dtype == target:
            return array
        if (
            target.kind in "iub"
            and array.dtype.kind == "f"
            and not (np.all(np.isfinite(array)) and np.all(array == np.round(array)))
        ):
            raise WireFormatError(f"{what} holds non-integer values; {space} holds integers")
        with np.errstate(over="ignore", invalid="ignore"):
            return array.astype(target)
    if isinstance(space, gym.spaces.Tuple):
        if not isinstance(value, list) or len(value) != len(space.spaces):
            raise WireFormatError(f"{what} is not a list of {len(space.spaces)} parts for {space}")
        return tuple(
            _coerce(s, v, f"{what}[{i}]", depth + 1)
            for i, (s, v) in enumerate(zip(space.spaces, value, strict=True))
        )
    if isinstance(space, gym.spaces.Dict):
        if not isinstance(value, dict) or set(value) != set(space.spaces):
            keys = sorted(value) if isinstance(value, dict) else type(value).__name__
            raise WireFormatError(
                f"{what} has keys {keys}; {space} needs exactly {sorted(space.spaces)}"
            )
        return {k: _coerce(s, value[k], f"{what}[{k!r}]", depth + 1) for k, s in space.items()}
    raise WireFormatError(f"values of a {type(space).__name__} space can't be received")


def _describe(value: Any) -> str:
    if isinstance(value, np.ndarray):
        if value.size <= 8:
            return f"{value.tolist()!r} ({value.dtype})"
        return f"an array of shape {value.shape} ({value.dtype})"
    text = repr(value)
    return text if len(text) <= 80 else f"a {type(value).__name__}"


# ---------------------------------------------------------------------- scalars, infos, agents


def decode_reward(value: Any, what: str = "reward") -> float:
    """A finite number (not a bool)."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise WireFormatError(f"{what} is {_describe(value)}; allowed: a finite number")
    reward = float(value)
    if not math.isfinite(reward):
        raise WireFormatError(f"{what} is {reward}; allowed: a finite number")
    return reward


def encode_info(info: Any, what: str = "info") -> Any:
    """An info dict as JSON-safe data: numbers, strings, bools, None, lists and dicts with
    string keys (numpy scalars and arrays become numbers and lists); else a
    ``WireFormatError`` naming the path of the first value that is not."""
    if info is None:
        return None
    if not isinstance(info, Mapping):
        raise WireFormatError(f"{what} is a {type(info).__name__}; allowed: a dict or None")
    return _json_safe(info, what, 0)


def _json_safe(value: Any, path: str, depth: int) -> Any:
    if depth > MAX_INFO_DEPTH:
        raise WireFormatError(f"{path} nests deeper than {MAX_INFO_DEPTH} levels")
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise WireFormatError(f"{path} is {value}; JSON has no non-finite numbers")
        return value
    if isinstance(value, np.generic):
        return _json_safe(value.item(), path, depth)
    if isinstance(value, np.ndarray):
        if value.dtype.name not in ARRAY_DTYPES:
            raise WireFormatError(f"{path} is an array of dtype {value.dtype}")
        return _json_safe(value.tolist(), path, depth)
    if isinstance(value, list | tuple):
        return [_json_safe(v, f"{path}[{i}]", depth + 1) for i, v in enumerate(value)]
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise WireFormatError(f"{path} has key {key!r}; allowed: string keys")
            out[key] = _json_safe(item, f"{path}[{key!r}]", depth + 1)
        return out
    raise WireFormatError(
        f"{path} is a {type(value).__name__}; allowed: numbers, strings, bools, None, lists and "
        "dicts of these"
    )


def decode_info(value: Any, what: str = "info") -> dict[str, Any]:
    """An info dict from JSON (None: an empty dict); anything else is refused."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise WireFormatError(f"{what} is {_describe(value)}; allowed: an object or null")
    checked: dict[str, Any] = _json_safe(value, what, 0)
    return checked


def encode_agent_dict(values: Mapping[Any, Any], encode: Callable[[Any, Any], Any]) -> Any:
    """A multi-agent dict as ``[[agent_id, encode(agent_id, value)], ...]``; ids are strings or
    ints."""
    pairs = []
    for agent, value in values.items():
        if isinstance(agent, np.integer):
            agent = int(agent)
        if not (isinstance(agent, str) or _is_int(agent)):
            raise WireFormatError(
                f"agent id {agent!r} is a {type(agent).__name__}; allowed: str or int"
            )
        pairs.append([agent, encode(agent, value)])
    return pairs


def decode_agent_dict(
    value: Any, what: str, decode: Callable[[Any, Any], Any], max_agents: int = 10_000
) -> dict[Any, Any]:
    """``encode_agent_dict``'s pairs back to a dict (``decode(agent_id, value)`` per entry)."""
    if not isinstance(value, list) or len(value) > max_agents:
        raise WireFormatError(
            f"{what} is not a list of at most {max_agents} [agent_id, value] pairs"
        )
    out: dict[Any, Any] = {}
    for pair in value:
        if not isinstance(pair, list) or len(pair) != 2:
            raise WireFormatError(f"{what} holds {_describe(pair)}; allowed: [agent_id, value]")
        agent, item = pair
        if not (isinstance(agent, str) or _is_int(agent)):
            raise WireFormatError(f"{what} has agent id {agent!r}; allowed: str or int")
        if agent in out:
            raise WireFormatError(f"{what} names agent {agent!r} twice")
        out[agent] = decode(agent, item)
    return out


def check_episode_id(value: Any, what: str = "episode_id") -> str:
    """An episode id: a non-empty string of at most ``MAX_EPISODE_ID`` printable characters."""
    if (
        not isinstance(value, str)
        or not 0 < len(value) <= MAX_EPISODE_ID
        or not value.isprintable()
    ):
        raise WireFormatError(
            f"{what} is {_describe(value)}; allowed: a string of 1 to {MAX_EPISODE_ID} "
            "printable characters"
        )
    return value


# ---------------------------------------------------------------------- weights, rows, metrics


def encode_weights(weights: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each policy's weights (``{policy_id: {name: array}}``) as typed buffers."""
    return {
        str(pid): {str(name): encode_array(array) for name, array in policy.items()}
        for pid, policy in weights.items()
    }


def decode_weights(value: Any, what: str = "weights") -> dict[str, dict[str, Array]]:
    if not isinstance(value, dict) or not all(isinstance(v, dict) for v in value.values()):
        raise WireFormatError(f"{what} is not an object of policies' weights")
    return {
        pid: {name: decode_array(buf, f"{what}[{pid!r}][{name!r}]") for name, buf in arrays.items()}
        for pid, arrays in value.items()
    }


def encode_batch(batch: SampleBatch | MultiAgentBatch) -> dict[str, Any]:
    """Experience rows as ``{"env_steps": n, "policies": {policy_id: {column: buffer}}}`` (a
    SampleBatch is the default policy's); ``infos`` and other object columns stay behind."""
    wrapped = MultiAgentBatch.wrap(batch)
    return {
        "env_steps": int(wrapped.env_steps()),
        "policies": {
            str(pid): {
                name: encode_array(values)
                for name, values in rows.items()
                if np.asarray(values).dtype.name in ARRAY_DTYPES
            }
            for pid, rows in wrapped.items()
        },
    }


def decode_batch(value: Any, what: str = "samples") -> tuple[dict[str, dict[str, Array]], int]:
    """``encode_batch``'s form back to ``({policy_id: {column: array}}, env_steps)``; the
    columns are checked by the receiver (``policy_server_input``)."""
    if not isinstance(value, dict) or set(value) != {"env_steps", "policies"}:
        raise WireFormatError(f"{what} is not an object with 'env_steps' and 'policies'")
    env_steps, policies = value["env_steps"], value["policies"]
    if not _is_int(env_steps) or env_steps < 0:
        raise WireFormatError(f"{what}.env_steps is {env_steps!r}; allowed: an int >= 0")
    if not isinstance(policies, dict) or not all(isinstance(v, dict) for v in policies.values()):
        raise WireFormatError(f"{what}.policies is not an object of policies' columns")
    decoded = {
        pid: {
            name: decode_array(buf, f"{what}.policies[{pid!r}][{name!r}]")
            for name, buf in columns.items()
        }
        for pid, columns in policies.items()
    }
    return decoded, env_steps


def encode_metrics(metrics: list[EpisodeMetrics]) -> list[dict[str, Any]]:
    out = []
    for m in metrics:
        out.append(
            {
                "length": int(m.length),
                "total_reward": float(m.total_reward),
                "custom_metrics": _json_safe(dict(m.custom_metrics), "custom_metrics", 0),
                "hist_data": _json_safe(dict(m.hist_data), "hist_data", 0),
                "agent_rewards": [
                    [agent, pid, float(r)] for (agent, pid), r in m.agent_rewards.items()
                ],
                "faulty": bool(m.faulty),
            }
        )
    return out


def decode_metrics(
    value: Any, what: str = "metrics", max_items: int = 100_000
) -> list[EpisodeMetrics]:
    """Episode summaries from JSON, every number checked (finite, lengths >= 0)."""
    if not isinstance(value, list) or len(value) > max_items:
        raise WireFormatError(f"{what} is not a list of at most {max_items} episode summaries")
    out = []
    fields = {"length", "total_reward", "custom_metrics", "hist_data", "agent_rewards", "faulty"}
    for i, item in enumerate(value):
        where = f"{what}[{i}]"
        if not isinstance(item, dict) or not set(item) <= fields:
            raise WireFormatError(f"{where} is not an episode summary (keys: {sorted(fields)})")
        length = item.get("length", 0)
        if not _is_int(length) or length < 0:
            raise WireFormatError(f"{where}.length is {length!r}; allowed: an int >= 0")
        custom = item.get("custom_metrics", {})
        if not isinstance(custom, dict):
            raise WireFormatError(f"{where}.custom_metrics is not an object")
        hist = item.get("hist_data", {})
        if not isinstance(hist, dict) or not all(isinstance(v, list) for v in hist.values()):
            raise WireFormatError(f"{where}.hist_data is not an object of lists")
        rewards = item.get("agent_rewards", [])
        if not isinstance(rewards, list) or not all(
            isinstance(r, list) and len(r) == 3 and isinstance(r[1], str) for r in rewards
        ):
            raise WireFormatError(f"{where}.agent_rewards is not a list of [agent, policy, r]")
        faulty = item.get("faulty", False)
        if not isinstance(faulty, bool):
            raise WireFormatError(f"{where}.faulty is not a bool")
        out.append(
            EpisodeMetrics(
                length,
                decode_reward(item.get("total_reward", 0.0), f"{where}.total_reward"),
                {
                    str(k): decode_reward(v, f"{where}.custom_metrics[{k!r}]")
                    for k, v in custom.items()
                },
                {
                    str(k): [decode_reward(x, f"{where}.hist_data[{k!r}]") for x in v]
                    for k, v in hist.items()
                },
                {(a, p): decode_reward(r, f"{where}.agent_rewards") for a, p, r in rewards},
                faulty,
            )
        )
    return out
