"""View requirements: which columns of a trajectory a model (and its policy) reads or writes,
with their spaces, as the reference's ``ModelV2.view_requirements`` and
``Policy.view_requirements`` describe them (RLlib's tests read them, e.g. to sample a state for
a model whose ``get_initial_state()`` is empty).

Here they describe what the runtime feeds a model and are derived from its spaces and its
memory; they are read-only: the samplers don't read a model's view requirements, so a column a
model added (the reference's ``prev_n_obs``-style views) would never reach it, and adding one is
a ``TypeError`` saying so.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn

import gymnasium as gym
import numpy as np

from runtime.core.sample_batch import SampleBatch as SB


def _any_scalar() -> gym.Space[Any]:
    return gym.spaces.Box(-np.inf, np.inf, (), np.float32)


@dataclass(frozen=True)
class ViewRequirement:
    """One column a model or policy reads or writes: ``data_col`` (None: the column's own
    name) shifted by ``shift`` steps (-1: the step before), its ``space``, and whether acting
    (``used_for_compute_actions``) and learning (``used_for_training``) read it."""

    data_col: str | None = None
    space: gym.Space[Any] = field(default_factory=_any_scalar)
    shift: int = 0
    used_for_compute_actions: bool = True
    used_for_training: bool = True


class ViewRequirements(Mapping[str, ViewRequirement]):
    """A read-only mapping of column name -> ``ViewRequirement``."""

    def __init__(self, requirements: Mapping[str, ViewRequirement]) -> None:
        self._requirements = dict(requirements)

    def __getitem__(self, name: str) -> ViewRequirement:
        return self._requirements[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._requirements)

    def __len__(self) -> int:
        return len(self._requirements)

    def __setitem__(self, name: str, value: Any) -> NoReturn:
        raise TypeError(
            f"view_requirements[{name!r}] = ...: the view requirements describe what the runtime "
            "feeds a model (its observations, previous actions and rewards, its state) and are "
            "read-only; the samplers feed no other column"
        )

    def __repr__(self) -> str:
        return f"ViewRequirements({self._requirements!r})"


def _state_space(state: Any) -> gym.spaces.Box:
    shape = tuple(int(n) for n in np.shape(np.asarray(state)))
    return gym.spaces.Box(-np.inf, np.inf, shape, np.float32)


def model_view_requirements(
    observation_space: gym.Space[Any],
    action_space: gym.Space[Any],
    initial_state: Sequence[Any] = (),
    uses_prev_actions: bool = False,
    uses_prev_rewards: bool = False,
) -> ViewRequirements:
    """A model's view requirements: the observation it acts on, the actions and rewards it is
    trained with, the previous action and reward where it reads them, and for a model with
    memory each state tensor in (the state after the step before) and out, shaped as
    ``initial_state`` (one tensor per state, without a batch dimension)."""
    views: dict[str, ViewRequirement] = {
        SB.OBS: ViewRequirement(space=observation_space),
        SB.ACTIONS: ViewRequirement(space=action_space, used_for_compute_actions=False),
        SB.REWARDS: ViewRequirement(used_for_compute_actions=False),
    }
    if uses_prev_actions:
        views[SB.PREV_ACTIONS] = ViewRequirement(data_col=SB.ACTIONS, space=action_space, shift=-1)
    if uses_prev_rewards:
        views[SB.PREV_REWARDS] = ViewRequirement(data_col=SB.REWARDS, shift=-1)
    for k, state in enumerate(initial_state):
        space = _state_space(state)
        views[SB.state_in(k)] = ViewRequirement(data_col=SB.state_out(k), space=space, shift=-1)
        views[SB.state_out(k)] = ViewRequirement(space=space, used_for_compute_actions=False)
    return ViewRequirements(views)


def policy_view_requirements(
    model_views: Mapping[str, ViewRequirement], observation_space: gym.Space[Any]
) -> ViewRequirements:
    """A policy's view requirements: its model's, and the trajectory columns its samplers
    record besides (the next observation, the episode's end flags, its id and step)."""
    views = dict(model_views)
    views.setdefault(
        SB.NEXT_OBS,
        ViewRequirement(
            data_col=SB.OBS, space=observation_space, shift=1, used_for_compute_actions=False
        ),
    )
    for column in (SB.TERMINATEDS, SB.TRUNCATEDS, SB.EPS_ID, SB.T):
        views.setdefault(column, ViewRequirement(used_for_compute_actions=False))
    return ViewRequirements(views)
