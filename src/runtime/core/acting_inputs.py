"""What a policy's acting calls read besides the observations, and from where: a model with
memory's state and previous action and reward (``memory_inputs``), the columns of an input dict
(``input_dict_columns``: the reference's ``compute_actions_from_input_dict`` and
``compute_single_action(input_dict=...)``), and the inputs refused (``refuse_unread_inputs``).

An input dict is read by its column names, as the reference's default
``compute_actions_from_input_dict`` reads it: ``obs``, ``state_in_<i>``, ``prev_actions``,
``prev_rewards`` and ``infos``. The trajectory's other columns (``actions``, ``t``, ...) are
no acting inputs and stay unread, as in the reference; a column that is none of these (a
misspelt ``prev_action``, a view of the reference's own such as ``prev_n_obs``) is a
``ValueError`` naming it, since no model here would see it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from rlconf.unknown_keys import did_you_mean
from runtime.core.sample_batch import SampleBatch as SB

#: An input dict: a ``SampleBatch`` or a dict of column name -> values.
InputDict = SB | Mapping[str, Any]

if TYPE_CHECKING:
    from runtime.core.policy import TorchPolicy

_STATE_IN = re.compile(r"state_in_(\d+)")
#: The columns an acting call reads from an input dict (``state_in_<i>`` besides).
READ_COLUMNS = (SB.OBS, SB.PREV_ACTIONS, SB.PREV_REWARDS, SB.INFOS)
#: Trajectory columns an input dict may hold that acting does not read: the sample batch's
#: and the reference's other standard ones.
_UNREAD_COLUMNS = frozenset(
    {
        value
        for name, value in vars(SB).items()
        if name.isupper() and isinstance(value, str) and value not in READ_COLUMNS
    }
    | {"agent_index", "unroll_id", "action_prob", "dones", "env_id"}
)


def refuse_unread_inputs(method: str, **given: Any) -> None:
    """A ``ValueError`` naming the first state given (not None) to a policy whose model has no
    memory (``use_lstm``, ``use_attention``): it has no state to act from. Previous actions and
    rewards, infos and episodes are inputs of every call, as in the reference: a model that
    doesn't read them ignores them."""
    for name, value in given.items():
        if value is not None:
            reason = "this policy's model has no memory (use_lstm, use_attention) and so no state"
            raise ValueError(f"{method}({name}=...): {reason}; leave {name} out (None)")


@dataclass(frozen=True)
class ActingInputs:
    """The inputs of one acting call: observations, the state (one array per state tensor;
    None: the initial state), previous actions and rewards, infos."""

    obs: Any
    state: list[Any] | None = None
    prev_actions: Any = None
    prev_rewards: Any = None
    infos: Any = None


def input_dict_columns(method: str, input_dict: InputDict) -> ActingInputs:
    """The acting inputs an input dict holds (a ``SampleBatch`` or a dict of column name ->
    values, batched or not: they are taken as they are)."""
    states: dict[int, Any] = {}
    for column in input_dict:
        match = _STATE_IN.fullmatch(column)
        if match:
            states[int(match.group(1))] = input_dict[column]
        elif column == SB.SEQ_LENS:
            lens = np.asarray(input_dict[column])
            if np.any(lens != 1):
                raise ValueError(
                    f"{method}(input_dict=...): seq_lens {lens.tolist()}: acting takes one step "
                    "per row (each row's state_in_<i> is its state); allowed: all 1, or no "
                    "seq_lens"
                )
        elif not (
            column in READ_COLUMNS or column in _UNREAD_COLUMNS or column.startswith("state_out_")
        ):
            hint = did_you_mean(column, (*READ_COLUMNS, "state_in_0"))
            raise ValueError(
                f"{method}(input_dict=...): column {column!r} is no input of a model here; "
                f"acting reads {', '.join(READ_COLUMNS)} and state_in_<i>"
                + (f"; {hint}" if hint else "")
            )
    if SB.OBS not in input_dict:
        raise ValueError(f"{method}(input_dict=...): the input dict has no 'obs' column")
    if sorted(states) != list(range(len(states))):
        raise ValueError(
            f"{method}(input_dict=...): state columns state_in_{sorted(states)}; allowed: "
            "state_in_0 ... state_in_<n-1>, one per state tensor (see get_initial_state())"
        )
    return ActingInputs(
        input_dict[SB.OBS],
        [states[k] for k in range(len(states))] or None,
        input_dict.get(SB.PREV_ACTIONS),
        input_dict.get(SB.PREV_REWARDS),
        input_dict.get(SB.INFOS),
    )


def single_call_inputs(
    method: str, input_dict: InputDict | None, obs_name: str, **given: Any
) -> ActingInputs:
    """The inputs of a ``compute_single_action`` call: those of ``input_dict`` where it is
    given (then none of the separate inputs may be: a ``ValueError`` naming them), else the
    observation ``given[obs_name]`` and the state, previous action and reward and info given
    (``state``, ``prev_action``, ``prev_reward``, ``info``)."""
    if input_dict is not None:
        both = [name for name, value in given.items() if value is not None]
        if both:
            raise ValueError(
                f"{method}(input_dict=..., {'=..., '.join(both)}=...): give either input_dict "
                f"or {obs_name} (and its state, prev_action, ...), not both"
            )
        return input_dict_columns(method, input_dict)
    if given[obs_name] is None:
        raise TypeError(f"{method}() needs {obs_name} (or input_dict)")
    return ActingInputs(
        given[obs_name], given["state"], given["prev_action"], given["prev_reward"], given["info"]
    )


def memory_inputs(
    policy: TorchPolicy,
    method: str,
    rows: int,
    state_batches: list[Any] | None,
    prev_action_batch: Any,
    prev_reward_batch: Any,
) -> dict[str, torch.Tensor]:
    """The state and previous action / reward inputs of ``rows`` rows: as given, else the
    initial state and zeros (an episode's first step); none for a model without memory
    (which reads the observation alone, and refuses a state)."""
    if not policy.module.is_recurrent:
        refuse_unread_inputs(method, state_batches=state_batches or None)
        return {}
    device = policy.device
    inputs: dict[str, torch.Tensor] = {}
    initial = policy.get_initial_state()
    if state_batches:
        if len(state_batches) != len(initial):
            raise ValueError(
                f"{method}(state_batches=...): {len(state_batches)} state arrays given; this "
                f"policy's model has {len(initial)} (see get_initial_state())"
            )
        states = [np.asarray(s, dtype=np.float32) for s in state_batches]
    else:
        states = [np.repeat(s[None], rows, axis=0) for s in initial]
    for k, state in enumerate(states):
        inputs[SB.state_in(k)] = torch.from_numpy(state).to(device)
    model = policy.model
    action_space = policy.action_space
    if getattr(model, "uses_prev_actions", False):
        if prev_action_batch is None:
            dtype = action_space.dtype or np.float32
            prev = np.zeros((rows, *(action_space.shape or ())), dtype=dtype)
        else:
            prev = np.asarray(prev_action_batch)
        inputs[SB.PREV_ACTIONS] = torch.from_numpy(prev).to(device)
    if getattr(model, "uses_prev_rewards", False):
        prev_r = np.zeros(rows) if prev_reward_batch is None else prev_reward_batch
        inputs[SB.PREV_REWARDS] = torch.from_numpy(
            np.asarray(prev_r, dtype=np.float32).reshape(rows)
        ).to(device)
    return inputs
