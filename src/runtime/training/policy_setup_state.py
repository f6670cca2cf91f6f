"""The policy setup in a checkpoint: every policy's spec (with its spaces), the mapping
function and ``policies_to_train``, as JSON. Restoring gives the workers exactly the saved
policies: added ones come back, removed ones go.

Functions are stored by import path; one that has none (a lambda, a closure) is not saved,
and the restored algorithm keeps the function it was built with (logged as a warning)."""

from __future__ import annotations

import logging
from typing import Any

from rlconf.errors import ConfigError
from rlconf.json_codec import decode, encode
from rlconf.policy_spec import PolicySpec, normalize_policies
from runtime.env.worker_policies import PolicySetup

logger = logging.getLogger(__name__)

_WHERE = "checkpoint policy setup"


def _encode_function(value: Any) -> Any:
    try:
        return {"saved": encode(value, _WHERE)}
    except ConfigError:
        return {"unsaved": repr(value)}


def encode_setup(setup: PolicySetup) -> dict[str, Any]:
    policies = {
        pid: encode(PolicySpec(spec.policy_class, spaces[0], spaces[1], spec.config), _WHERE, pid)
        for pid, (spec, spaces) in setup.policies.items()
    }
    return {
        "policies": policies,
        "policy_mapping_fn": _encode_function(setup.mapping_fn),
        "policies_to_train": _encode_function(setup.policies_to_train),
    }


def decode_setup(data: dict[str, Any], current: PolicySetup) -> PolicySetup:
    """The saved setup; a function that was not saved stays ``current``'s."""
    specs = normalize_policies(decode(data["policies"], _WHERE))
    policies = {
        pid: (spec, (spec.observation_space, spec.action_space)) for pid, spec in specs.items()
    }
    functions = []
    for key, now in (
        ("policy_mapping_fn", current.mapping_fn),
        ("policies_to_train", current.policies_to_train),
    ):
        entry = data.get(key) or {}
        if "saved" in entry:
            functions.append(decode(entry["saved"], _WHERE, key))
        elif entry.get("unsaved") == repr(now):
            functions.append(now)  # the very function the algorithm was built with
        else:
            logger.warning(
                "the checkpoint's %s (%s) has no import path and was not saved; the restored "
                "algorithm keeps its own (%r)",
                key,
                entry.get("unsaved"),
                now,
            )
            functions.append(now)
    mapping_fn, to_train = functions
    return PolicySetup(policies, mapping_fn, to_train)
