"""``AttentionNetwork``: the model of ``use_attention`` - a GTrXL (Parisotto et al. 2019,
"Stabilizing Transformers for Reinforcement Learning"), the reference's attention wrapper.

The features of the network the catalog would build (an MLP, or a conv stack over images),
optionally with the last ``attention_use_n_prev_actions`` actions and
``attention_use_n_prev_rewards`` rewards, are projected to ``attention_dim`` and go through
``attention_num_transformer_units`` units; the last unit's output feeds the policy and the value
outputs (the value function shares the memory). Each unit is, as in the paper:

- pre-layer-norm multi-head self-attention with Transformer-XL's relative positions (sinusoids
  of the distance between query and key, projected per unit, with learned content and position
  biases ``u`` and ``v``), ReLU, then a GRU-type gate in place of the residual connection;
- a position-wise MLP (layer norm, ``attention_position_wise_mlp_dim``, ReLU, ``attention_dim``,
  ReLU), gated the same way.

Memory: the state holds, per unit, the last ``M = max(attention_memory_inference,
attention_memory_training)`` inputs to that unit. A step attends to itself and the ``W`` inputs
before it (``W = attention_memory_inference`` while acting, one step a call; else
``attention_memory_training``): a sliding window over the memory and the earlier steps of its
sequence. Training on a sequence therefore sees exactly the context the policy acted with (when
both memories are the same size), where Transformer-XL would let later steps of a sequence see
up to ``W + T`` steps back. As the reference, entries of the memory that no step has filled yet
(zeros at an episode's start) are attended to like any other: masking them would need a count
of filled entries in the state, for no measured gain.

The runner feeds one previous action and reward per row; the model keeps the ``n - 1`` before
them in its state (oldest first) and shifts them along each step.
"""

from __future__ import annotations

import math
from typing import Any

import gymnasium as gym
import torch
from torch import nn

from runtime.core.feature_trunk import action_encoder, add_time_dimension, feature_trunk
from runtime.core.models import TorchModel, heads_of, linear, policy_outputs


class AttentionNetwork(TorchModel):
    """Trunk features (+ previous actions, + previous rewards) -> linear(``attention_dim``) ->
    GTrXL units -> logits and value. The state is each unit's memory ``(M, attention_dim)``,
    then the older previous actions ``(n - 1, action size)`` and rewards ``(n - 1, 1)``."""

    def __init__(
        self,
        obs_space: gym.Space[Any],
        action_space: gym.Space[Any],
        num_outputs: int,
        model_config: dict[str, Any],
        name: str,
    ) -> None:
        super().__init__(obs_space, action_space, num_outputs, model_config, name)
        self.trunk, in_size, self.obs_key = feature_trunk(obs_space, model_config)
        self.n_prev_actions = int(model_config["attention_use_n_prev_actions"])
        self.n_prev_rewards = int(model_config["attention_use_n_prev_rewards"])
        self.uses_prev_actions = self.n_prev_actions > 0
        self.uses_prev_rewards = self.n_prev_rewards > 0
        self.action_size = 0
        if self.uses_prev_actions:
            self.action_size, self._encode_action = action_encoder(action_space)
            in_size += self.n_prev_actions * self.action_size
        in_size += self.n_prev_rewards
        self.dim = int(model_config["attention_dim"])
        self.memory_inference = int(model_config["attention_memory_inference"])
        self.memory_training = int(model_config["attention_memory_training"])
        self.memory_size = max(self.memory_inference, self.memory_training)
        self.project = linear(in_size, self.dim, 1.0)
        self.units = nn.ModuleList(
            GTrXLUnit(
                self.dim,
                int(model_config["attention_num_heads"]),
                int(model_config["attention_head_dim"]),
                int(model_config["attention_position_wise_mlp_dim"]),
                float(model_config["attention_init_gru_gate_bias"]),
            )
            for _ in range(int(model_config["attention_num_transformer_units"]))
        )
        outputs, log_std = policy_outputs(num_outputs, model_config)
        # Each output after the layers of its head (head_fcnet_hiddens), if any; the attention
        # layers keep their own start.
        heads = heads_of(model_config)
        self.logits = heads.output(self.dim, outputs, 0.01)
        self.log_std: nn.Module = log_std
        self.value_branch = heads.output(self.dim, 1, 1.0)
        self._features: torch.Tensor | None = None

    def get_initial_state(self) -> list[torch.Tensor]:
        state = [torch.zeros(self.memory_size, self.dim) for _ in self.units]
        if self.n_prev_actions > 1:
            state.append(torch.zeros(self.n_prev_actions - 1, self.action_size))
        if self.n_prev_rewards > 1:
            state.append(torch.zeros(self.n_prev_rewards - 1, 1))
        return state

    def forward(
        self, input_dict: dict[str, torch.Tensor], state: list[torch.Tensor], seq_lens: Any
    ) -> tuple[torch.Tensor, list[torch.Tensor]]:
        lens = torch.as_tensor(seq_lens, dtype=torch.long, device=input_dict[self.obs_key].device)
        units = len(self.units)
        x, buffers_out = self._inputs(input_dict, list(state[units:]), lens)
        span = self.memory_inference if x.shape[1] == 1 else self.memory_training
        memories_out = []
        for unit, memory in zip(self.units, state[:units], strict=True):
            history = torch.cat([memory, x], dim=1)
            memories_out.append(_after_valid_steps(history, lens, self.memory_size))
            x = unit(x, memory[:, self.memory_size - span :])
        features = x.reshape(-1, self.dim)
        self.__dict__["_features"] = features
        return self.log_std(self.logits(features)), memories_out + buffers_out

    def _inputs(
        self, input_dict: dict[str, torch.Tensor], buffers: list[torch.Tensor], lens: torch.Tensor
    ) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """The first unit's ``(B, T, attention_dim)`` inputs, and the previous-action and
        -reward buffers after the sequences (``buffers``: those before them)."""
        parts = [add_time_dimension(self.trunk(input_dict[self.obs_key]), lens)]
        buffers_out: list[torch.Tensor] = []
        if self.uses_prev_actions:
            actions = add_time_dimension(self._encode_action(input_dict["prev_actions"]), lens)
            window, kept = _last_n(actions, self.n_prev_actions, buffers, lens)
            parts.append(window)
            buffers_out += kept
        if self.uses_prev_rewards:
            rewards = add_time_dimension(input_dict["prev_rewards"].float().reshape(-1, 1), lens)
            window, kept = _last_n(rewards, self.n_prev_rewards, buffers, lens)
            parts.append(window)
            buffers_out += kept
        x: torch.Tensor = self.project(parts[0] if len(parts) == 1 else torch.cat(parts, dim=-1))
        return x, buffers_out

    def value_function(self) -> torch.Tensor:
        assert self._features is not None, "value_function() is called after forward()"
        out: torch.Tensor = self.value_branch(self._features)
        return out.squeeze(-1)


def _last_n(
    steps: torch.Tensor, n: int, buffers: list[torch.Tensor], lens: torch.Tensor
) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """``(window, state out)`` of a ``(B, T, size)`` input of which each step sees its last
    ``n`` values: ``(B, T, n * size)``, oldest first. The ``n - 1`` values before a sequence's
    first step come from (and are popped off) ``buffers``; the state out holds the ``n - 1``
    after its valid steps."""
    if n == 1:
        return steps, []
    history = torch.cat([buffers.pop(0), steps], dim=1)
    batch, length, size = steps.shape
    # unfold: (B, T, size, n) windows of n consecutive steps.
    window = history.unfold(1, n, 1).transpose(-1, -2).reshape(batch, length, n * size)
    return window, [_after_valid_steps(history, lens, n - 1)]


def _after_valid_steps(history: torch.Tensor, lens: torch.Tensor, keep: int) -> torch.Tensor:
    """The last ``keep`` rows of ``(B, keep + T, ...)`` histories (``keep`` rows before a
    sequence, then its steps) after each sequence's valid steps: padded steps never enter."""
    index = lens[:, None] + torch.arange(keep, device=history.device)
    return history[torch.arange(len(history), device=history.device)[:, None], index]


class GTrXLUnit(nn.Module):
    """One transformer unit: gated relative multi-head attention over the memory and the
    sequence, then a gated position-wise MLP. Layer norms sit on the branches' inputs only
    ("identity map reordering"): with the gates starting near the identity, a unit starts by
    passing its input on almost unchanged."""

    def __init__(self, dim: int, heads: int, head_dim: int, mlp_dim: int, gate_bias: float):
        super().__init__()
        self.attention = RelativeMultiHeadAttention(dim, heads, head_dim)
        self.attention_gate = GRUGate(dim, gate_bias)
        self.mlp = nn.Sequential(
            nn.LayerNorm(dim),
            linear(dim, mlp_dim, math.sqrt(2)),
            nn.ReLU(),
            linear(mlp_dim, dim, math.sqrt(2)),
            nn.ReLU(),
        )
        self.mlp_gate = GRUGate(dim, gate_bias)

    def forward(self, x: torch.Tensor, memory: torch.Tensor) -> torch.Tensor:
        """``(B, T, dim)`` inputs, ``(B, W, dim)`` memory (earlier inputs) -> ``(B, T, dim)``."""
        attended = torch.relu(self.attention(x, memory))
        y = self.attention_gate(x, attended)
        out: torch.Tensor = self.mlp_gate(y, self.mlp(y))
        return out


class RelativeMultiHeadAttention(nn.Module):
    """Causal multi-head attention of each step over itself and the ``W`` inputs before it
    (``W`` = the memory's length), with Transformer-XL's relative position scores: query ``i``
    and key ``j`` at distance ``k`` score ``(q_i + u) . key_j + (q_i + v) . W_r phi(k)``, with
    ``phi`` the sinusoids of ``k``. Positions enter only as distances, so a step scores the
    same wherever its sequence was cut."""

    def __init__(self, dim: int, heads: int, head_dim: int) -> None:
        super().__init__()
        self.heads, self.head_dim = heads, head_dim
        self.norm = nn.LayerNorm(dim)
        self.query = _xavier(dim, heads * head_dim)
        self.key_value = _xavier(dim, 2 * heads * head_dim, 2)
        self.out = _xavier(heads * head_dim, dim)
        # phi's frequencies, as Transformer-XL's: 10000 ** (-2i / dim), a sine and a cosine each.
        self.register_buffer(
            "inverse_freq", 10000.0 ** (-torch.arange(0, dim, 2.0) / dim), persistent=False
        )
        self.position = _xavier(2 * len(self.inverse_freq), heads * head_dim)
        self.u = nn.Parameter(nn.init.xavier_uniform_(torch.empty(heads, head_dim)))
        self.v = nn.Parameter(nn.init.xavier_uniform_(torch.empty(heads, head_dim)))

    inverse_freq: torch.Tensor

    def forward(self, x: torch.Tensor, memory: torch.Tensor) -> torch.Tensor:
        batch, steps, _ = x.shape
        span = memory.shape[1]
        heads, head_dim = self.heads, self.head_dim
        inputs = self.norm(torch.cat([memory, x], dim=1))
        queries = self.query(inputs[:, span:]).reshape(batch, steps, heads, head_dim)
        keys, values = (
            self.key_value(inputs).reshape(batch, span + steps, 2, heads, head_dim).unbind(2)
        )
        # Key j is at distance span + i - j from query i; visible from 0 (itself) to span back.
        distance = (
            span
            + torch.arange(steps, device=x.device)[:, None]
            - torch.arange(span + steps, device=x.device)
        )
        visible = (distance >= 0) & (distance <= span)
        content = torch.einsum("bihd,bjhd->bijh", queries + self.u, keys)
        angles = torch.arange(span + 1, device=x.device, dtype=x.dtype)[:, None] * self.inverse_freq
        phi = torch.cat([angles.sin(), angles.cos()], dim=-1)
        rel = self.position(phi).reshape(span + 1, heads, head_dim)
        by_distance = torch.einsum("bihd,khd->bikh", queries + self.v, rel)
        index = distance.clamp(0, span)[None, :, :, None].expand(batch, -1, -1, heads)
        scores = (content + by_distance.gather(2, index)) / math.sqrt(head_dim)
        scores = scores.masked_fill(~visible[None, :, :, None], float("-inf"))
        weights = torch.softmax(scores, dim=2)
        attended = torch.einsum("bijh,bjhd->bihd", weights, values)
        out: torch.Tensor = self.out(attended.reshape(batch, steps, heads * head_dim))
        return out


class GRUGate(nn.Module):
    """The paper's GRU-type gate in place of a residual connection ``x + y``:
    ``r = sigmoid(W_r y + U_r x)``, ``z = sigmoid(W_z y + U_z x - b)``,
    ``h = tanh(W_h y + U_h (r * x))``, out ``(1 - z) * x + z * h``. A positive bias ``b``
    (``attention_init_gru_gate_bias``) starts ``z`` near 0, the unit near the identity: what
    lets the agent learn reactive behaviour first and memory later."""

    def __init__(self, dim: int, bias: float) -> None:
        super().__init__()
        self.w = _xavier(dim, 3 * dim, 3)
        self.u = _xavier(dim, 2 * dim, 2)
        self.u_h = _xavier(dim, dim)
        self.bias = nn.Parameter(torch.full((dim,), bias))

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """``x`` the branch's input (the skip), ``y`` its output."""
        w_r, w_z, w_h = self.w(y).chunk(3, dim=-1)
        u_r, u_z = self.u(x).chunk(2, dim=-1)
        r = torch.sigmoid(w_r + u_r)
        z = torch.sigmoid(w_z + u_z - self.bias)
        h = torch.tanh(w_h + self.u_h(r * x))
        return torch.lerp(x, h, z)


def _xavier(in_size: int, out_size: int, parts: int = 1) -> nn.Linear:
    """A bias-free layer of ``parts`` stacked ``in_size -> out_size / parts`` projections, each
    with Xavier-uniform weights: the attention's and gates' projections, initialised as the
    reference's."""
    layer = nn.Linear(in_size, out_size, bias=False)
    for block in layer.weight.chunk(parts):
        nn.init.xavier_uniform_(block)
    return layer
