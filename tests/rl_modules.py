"""RL modules of the RLModule tests (``tests/test_rl_module.py``), in a module of their own so
that remote rollout and learner workers import them (``tests.rl_modules``)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from rlconf import Columns
from runtime import QNetAPI, TorchRLModule, ValueFunctionAPI


def _obs_size(space: Any) -> int:
    return int(np.prod(space.shape))


def _dist_size(space: Any) -> int:
    if isinstance(space, gym.spaces.Discrete):
        return int(space.n)
    return 2 * int(np.prod(space.shape))


class MLPModule(TorchRLModule, ValueFunctionAPI):
    """A trunk shared by a policy head and a value head (``model_config["hidden_dim"]``)."""

    def setup(self) -> None:
        hidden = int(self.model_config.get("hidden_dim", 32))
        self.net = nn.Sequential(nn.Linear(_obs_size(self.observation_space), hidden), nn.Tanh())
        self.pi = nn.Linear(hidden, _dist_size(self.action_space))
        self.vf = nn.Linear(hidden, 1)

    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        embeddings = self.net(batch[Columns.OBS].float())
        return {Columns.ACTION_DIST_INPUTS: self.pi(embeddings), Columns.EMBEDDINGS: embeddings}

    def compute_values(self, batch: dict[str, Any], embeddings: Any = None) -> torch.Tensor:
        if embeddings is None:
            embeddings = self.net(batch[Columns.OBS].float())
        values: torch.Tensor = self.vf(embeddings).squeeze(-1)
        return values


class VfPredsModule(TorchRLModule):
    """Values as a ``vf_preds`` output (no ``compute_values``), and its own three passes."""

    def setup(self) -> None:
        self.pi = nn.Linear(_obs_size(self.observation_space), _dist_size(self.action_space))
        self.vf = nn.Linear(_obs_size(self.observation_space), 1)

    def _forward_inference(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        return {Columns.ACTION_DIST_INPUTS: self.pi(batch[Columns.OBS])}

    def _forward_exploration(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        return self._forward_train(batch)

    def _forward_train(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        obs = batch[Columns.OBS]
        return {Columns.ACTION_DIST_INPUTS: self.pi(obs), Columns.VF_PREDS: self.vf(obs)}


class PolicyOnlyModule(TorchRLModule):
    """Action distribution inputs only: no values."""

    def setup(self) -> None:
        self.pi = nn.Linear(_obs_size(self.observation_space), _dist_size(self.action_space))

    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        return {Columns.ACTION_DIST_INPUTS: self.pi(batch[Columns.OBS])}


class LSTMModule(TorchRLModule, ValueFunctionAPI):
    """A module with memory: an LSTM over the observations, ``(B, T, ...)`` in and out."""

    def setup(self) -> None:
        self.cell = int(self.model_config.get("lstm_cell_size", 16))
        self.lstm = nn.LSTM(_obs_size(self.observation_space), self.cell, batch_first=True)
        self.pi = nn.Linear(self.cell, _dist_size(self.action_space))
        self.vf = nn.Linear(self.cell, 1)

    def get_initial_state(self) -> dict[str, Any]:
        return {"h": torch.zeros(self.cell), "c": torch.zeros(self.cell)}

    def _embeddings(self, batch: dict[str, Any]) -> tuple[torch.Tensor, dict[str, Any]]:
        state = batch[Columns.STATE_IN]
        h, c = state["h"].unsqueeze(0), state["c"].unsqueeze(0)
        out, (h, c) = self.lstm(batch[Columns.OBS].float(), (h, c))
        return out, {"h": h.squeeze(0), "c": c.squeeze(0)}

    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        embeddings, state = self._embeddings(batch)
        return {
            Columns.ACTION_DIST_INPUTS: self.pi(embeddings),
            Columns.EMBEDDINGS: embeddings,
            Columns.STATE_OUT: state,
        }

    def compute_values(self, batch: dict[str, Any], embeddings: Any = None) -> torch.Tensor:
        if embeddings is None:
            embeddings, _ = self._embeddings(batch)
        values: torch.Tensor = self.vf(embeddings).squeeze(-1)
        return values


class QNetModule(TorchRLModule, QNetAPI):
    """DQN's Q-values per action (``compute_q_values``)."""

    def setup(self) -> None:
        hidden = int(self.model_config.get("hidden_dim", 32))
        self.q = nn.Sequential(
            nn.Linear(_obs_size(self.observation_space), hidden),
            nn.ReLU(),
            nn.Linear(hidden, int(self.action_space.n)),
        )

    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        return {Columns.QF_PREDS: self.q(batch[Columns.OBS])}

    def compute_q_values(self, batch: dict[str, Any]) -> dict[str, Any]:
        return self._forward(batch)


class QOutputModule(TorchRLModule):
    """DQN's Q-values as the passes' ``qf_preds`` output (no ``compute_q_values``)."""

    def setup(self) -> None:
        self.q = nn.Linear(_obs_size(self.observation_space), int(self.action_space.n))

    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        return {Columns.QF_PREDS: self.q(batch[Columns.OBS])}


class SACNetsModule(TorchRLModule, QNetAPI):
    """SAC's policy and twin Q-networks, for Box (Q of obs and action) and Discrete (a Q-value
    per action) action spaces."""

    def setup(self) -> None:
        hidden = int(self.model_config.get("hidden_dim", 32))
        obs = _obs_size(self.observation_space)
        self.discrete = isinstance(self.action_space, gym.spaces.Discrete)
        q_in = obs if self.discrete else obs + int(np.prod(self.action_space.shape))
        q_out = int(self.action_space.n) if self.discrete else 1
        self.pi = nn.Sequential(
            nn.Linear(obs, hidden), nn.ReLU(), nn.Linear(hidden, _dist_size(self.action_space))
        )
        self.qf = nn.Sequential(nn.Linear(q_in, hidden), nn.ReLU(), nn.Linear(hidden, q_out))
        self.qf_twin = nn.Sequential(nn.Linear(q_in, hidden), nn.ReLU(), nn.Linear(hidden, q_out))

    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        return {Columns.ACTION_DIST_INPUTS: self.pi(batch[Columns.OBS])}

    def compute_q_values(self, batch: dict[str, Any]) -> dict[str, Any]:
        inputs = batch[Columns.OBS]
        if not self.discrete:
            inputs = torch.cat([inputs, batch[Columns.ACTIONS]], dim=-1)
        return {Columns.QF_PREDS: self.qf(inputs), Columns.QF_TWIN_PREDS: self.qf_twin(inputs)}


class RecurrentQModule(LSTMModule, QNetAPI):
    """Q-values from an LSTM: a module with memory, which DQN can't train."""

    def compute_q_values(self, batch: dict[str, Any]) -> dict[str, Any]:
        embeddings, _ = self._embeddings(batch)
        return {Columns.QF_PREDS: self.pi(embeddings)}


class FixedHeadModule(TorchRLModule, ValueFunctionAPI):
    """Distribution inputs of ``model_config["outputs"]`` per row, whatever the action space."""

    def setup(self) -> None:
        self.pi = nn.Linear(_obs_size(self.observation_space), int(self.model_config["outputs"]))
        self.vf = nn.Linear(_obs_size(self.observation_space), 1)

    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        return {Columns.ACTION_DIST_INPUTS: self.pi(batch[Columns.OBS])}

    def compute_values(self, batch: dict[str, Any], embeddings: Any = None) -> torch.Tensor:
        return self.vf(batch[Columns.OBS]).squeeze(-1)  # type: ignore[no-any-return]
