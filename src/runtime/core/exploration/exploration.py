"""``Exploration``: the base of every exploration strategy (built-in and user-written).

A strategy turns what the module computed for a batch of observations (an action distribution
over its outputs) into the actions to take. It is built once per policy, from
``exploration_config`` (``type`` and the strategy's own arguments), and keeps its own state
(e.g. the current epsilon), which the policy reports, syncs and checkpoints.

``action_space`` is the space of the policy's actions, in the policy's coordinates: with
``normalize_actions`` and a bounded Box it is ``Box(-1, 1)`` (the env runner maps that onto the
env's bounds), else the env's own space (``factory.policy_action_space``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from runtime.core.distributions import ActionDistribution


class Exploration:
    """Subclass it and implement ``get_exploration_action`` (returning the actions, or
    ``(actions, logp)``); keyword arguments in
    ``exploration_config`` besides ``type`` are passed to ``__init__``."""

    def __init__(
        self,
        action_space: gym.Space[Any],
        *,
        framework: str = "torch",
        policy_config: Any = None,
        model: Any = None,
        num_workers: int = 0,
        worker_index: int = 0,
    ) -> None:
        self.action_space = action_space
        self.framework = framework
        self.policy_config = policy_config
        self.model = model
        self.num_workers = num_workers
        self.worker_index = worker_index
        #: The sub-env of each row of the batch being acted on: None for sub-envs ``0..B-1`` in
        #: order (what callers that pass nothing mean), else one sub-env index per row. The
        #: policy sets it before each ``get_exploration_action`` (``compute_actions``'s
        #: ``env_indices``); strategies with per-sub-env state (``OrnsteinUhlenbeckNoise``)
        #: read it.
        self.env_indices: Sequence[int] | None = None

    def get_exploration_action(
        self,
        *,
        action_distribution: ActionDistribution,
        timestep: int,
        explore: bool = True,
    ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor | None]:
        """The actions for the batch behind ``action_distribution`` at global ``timestep``;
        ``explore=False`` must act greedily (the distribution's deterministic sample).

        Return the actions, or - as the reference documents - ``(actions, logp)``: then the
        policy reports ``logp`` (one log-likelihood per row) as the ``action_logp`` the
        on-policy losses use, instead of the actions' log-likelihood under
        ``action_distribution`` (which a ``logp`` of None asks for too)."""
        raise NotImplementedError(f"{type(self).__name__} must implement get_exploration_action()")

    def forward_module(self, module: Any, batch: dict[str, torch.Tensor], explore: bool) -> Any:
        """The module's outputs to act on: its exploring or its greedy pass. A strategy that
        acts through other weights (``ParameterNoise``) overrides it; the policy calls it only
        then."""
        return module.forward_exploration(batch) if explore else module.forward_inference(batch)

    def postprocess_fragment(self, policy: Any, columns: dict[str, Any]) -> None:
        """A sampled fragment's ``(T, N)`` columns, before the algorithm's postprocessing (the
        reference's ``postprocess_trajectory``); the policy calls it only for strategies that
        override it."""

    def on_timestep(self, timestep: int) -> None:
        """The policy's global timestep changed (a weight sync): a strategy whose state follows
        it (e.g. the epsilon schedule) updates here, so that a worker that never acts (the
        local worker beside remote ones) still reports the current state."""

    def on_episode_start(
        self,
        policy: Any = None,
        *,
        environment: Any = None,
        episode: Any = None,
        tf_sess: Any = None,
    ) -> None:
        """An episode starts on sub-env ``episode.env_id`` of ``environment`` (the env runner's
        step loop calls it, only for strategies that override it; ``tf_sess`` is the
        reference's and always None)."""

    def on_episode_end(
        self,
        policy: Any = None,
        *,
        environment: Any = None,
        episode: Any = None,
        tf_sess: Any = None,
    ) -> None:
        """The episode on sub-env ``episode.env_id`` ended (called like ``on_episode_start``)."""

    def random_actions(self, count: int, like: torch.Tensor) -> torch.Tensor:
        """``count`` uniform draws from the action space (its own seeded generator)."""
        draws = np.stack([self.action_space.sample() for _ in range(count)])
        return torch.as_tensor(draws, device=like.device)

    def get_state(self) -> dict[str, Any]:
        """JSON-able state (reported as the exploration state, synced and checkpointed)."""
        return {}

    def set_state(self, state: Mapping[str, Any]) -> None:
        """Restore what ``get_state`` returned."""

    def stats(self) -> dict[str, float]:
        """Numbers to report with each learner update (``learner_stats``), e.g. ``cur_epsilon``."""
        return {}


def exploration_actions(
    strategy: Exploration, chosen: Any, dist: ActionDistribution, rows: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """The actions ``strategy.get_exploration_action()`` returned, and their log-likelihoods:
    the ``logp`` of an ``(actions, logp)`` pair (the reference's documented return), else (a
    tensor of actions, or a pair whose ``logp`` is None) their log-likelihood under ``dist``."""
    logp: Any = None
    if isinstance(chosen, tuple):
        if len(chosen) != 2:
            raise TypeError(
                f"{type(strategy).__name__}.get_exploration_action() returned a "
                f"tuple of {len(chosen)} items; allowed: a tensor of actions, or a pair "
                "(actions, logp)"
            )
        chosen, logp = chosen
    actions = torch.as_tensor(chosen, device=dist.inputs.device)
    if logp is None:
        return actions, dist.logp(actions)
    logp = torch.as_tensor(logp, dtype=torch.float32, device=dist.inputs.device)
    if tuple(logp.shape) != (rows,):
        raise ValueError(
            f"{type(strategy).__name__}.get_exploration_action() returned "
            f"(actions, logp) with logp of shape {tuple(logp.shape)}; allowed: one "
            f"log-likelihood per row, shape ({rows},)"
        )
    return actions, logp
