"""Settings the runtime does not carry out, refused when an algorithm is built (with the
reason) rather than silently ignored."""

from __future__ import annotations

from typing import Any

from rlconf.algorithm_config import AlgorithmConfig
from rlconf.errors import ConfigError, FieldIssue

#: key -> (the one value the runtime supports, why)
_FIXED: dict[str, tuple[Any, str]] = {
    "sample_async": (False, "asynchronous sampling is not available; sampling is synchronous"),
    "remote_worker_envs": (False, "sub-envs run in the worker process; use num_workers"),
    "postprocess_inputs": (
        False,
        "input batches are trained on as written (output writes them postprocessed)",
    ),
}


def refuse_unsupported(config: AlgorithmConfig, name: str) -> None:
    issues = [
        FieldIssue(key, f"is not supported by the runtime: {why}", config[key], True, repr(ok))
        for key, (ok, why) in _FIXED.items()
        if config[key] != ok
    ]
    source = config["input"]
    if not (isinstance(source, str) or _is_str_list(source)):
        issues.append(
            FieldIssue(
                "input",
                "is not supported by the runtime: mixing sources or custom readers is not "
                "available",
                source,
                True,
                "'sampler', a file, folder or glob, or a list of them",
            )
        )
    elif source != "sampler" and int(config["num_workers"]) > 0:
        issues.append(
            FieldIssue(
                "num_workers",
                "must be 0 when input reads files (the driver reads them)",
                config["num_workers"],
            )
        )
    output = config["output"]
    if output is not None and not isinstance(output, str):
        issues.append(
            FieldIssue(
                "output",
                "is not supported by the runtime: custom writers are not available",
                output,
                True,
                "None, 'logdir' or a folder",
            )
        )
    if config["multiagent"]["policies"]:
        issues.append(
            FieldIssue(
                "multiagent.policies",
                "is not supported by the runtime yet: it trains one policy, 'default_policy'",
                dict(config["multiagent"]["policies"]),
                True,
                "{} (empty)",
            )
        )
    if issues:
        raise ConfigError(f"{name}(config=...)", issues)


def _is_str_list(value: Any) -> bool:
    return isinstance(value, list | tuple) and all(isinstance(v, str) for v in value)
