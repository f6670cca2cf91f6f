"""``LSTMNetwork``: the model of ``use_lstm`` - the features of the network the catalog would
build (an MLP, or a conv stack over images), optionally with the previous action and reward,
fed through an LSTM whose output feeds the policy and the value outputs (the reference's
LSTM wrapper). ``vf_share_layers`` acts as for the other networks: with True (the reference's
LSTM wrapper) the value output reads the policy's LSTM; with False the value function has
layers of its own, an LSTM included (as Stable-Baselines3's recurrent PPO's critic): its state
is then ``[h, c, h_value, c_value]``. ``post_fcnet_hiddens`` are the layers between the LSTM and
each output, the policy's and the value's own (where RLlib's later catalogs put them, as
Stable-Baselines3's recurrent policy does with its ``net_arch``), rather than before the LSTM.
The state returned is the one after a sequence's last
step, padded steps included: the runners act one step a call (nothing is padded), and training
reads the outputs of the valid steps only."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import torch
from torch import nn

from runtime.core.feature_trunk import action_encoder, add_time_dimension, feature_trunk
from runtime.core.models import TorchModel, heads_of, mlp, policy_outputs


class LSTMNetwork(TorchModel):
    """Trunk features (+ previous action, + previous reward) -> LSTM(``lstm_cell_size``) ->
    post_fcnet layers -> head layers (``head_fcnet_hiddens``) -> logits, and the same (own
    layers) -> value. The state is the LSTM's ``[h, c]`` (and the value LSTM's)."""

    def __init__(
        self,
        obs_space: gym.Space[Any],
        action_space: gym.Space[Any],
        num_outputs: int,
        model_config: dict[str, Any],
        name: str,
    ) -> None:
        super().__init__(obs_space, action_space, num_outputs, model_config, name)
        self.trunk, in_size, self.obs_key = feature_trunk(obs_space, model_config, False)
        self.uses_prev_actions = bool(model_config["lstm_use_prev_action"])
        self.uses_prev_rewards = bool(model_config["lstm_use_prev_reward"])
        if self.uses_prev_actions:
            size, self._encode_action = action_encoder(action_space)
            in_size += size
        if self.uses_prev_rewards:
            in_size += 1
        self.cell_size = int(model_config["lstm_cell_size"])
        heads = heads_of(model_config)
        self.lstm = nn.LSTM(in_size, self.cell_size, batch_first=True)
        heads.inits.lstm.start_lstm(self.lstm)
        self.vf_share_layers = bool(model_config["vf_share_layers"])
        if not self.vf_share_layers:
            self.value_trunk, _, _ = feature_trunk(obs_space, model_config, False)
            self.value_lstm = nn.LSTM(in_size, self.cell_size, batch_first=True)
            heads.inits.lstm.start_lstm(self.value_lstm)
        post = [int(size) for size in model_config["post_fcnet_hiddens"]]
        post_activation = model_config["post_fcnet_activation"]
        body = heads.inits.fcnet
        self.policy_head, head_size = mlp(self.cell_size, post, post_activation, init=body)
        self.value_head, _ = mlp(self.cell_size, post, post_activation, init=body)
        outputs, log_std = policy_outputs(num_outputs, model_config)
        # Each output after the layers of its head (head_fcnet_hiddens), if any.
        self.logits = heads.output(head_size, outputs, 0.01)
        self.log_std: nn.Module = log_std
        self.value_branch = heads.output(head_size, 1, 1.0)
        self._features: torch.Tensor | None = None

    def get_initial_state(self) -> list[torch.Tensor]:
        count = 2 if self.vf_share_layers else 4
        return [torch.zeros(self.cell_size) for _ in range(count)]

    def forward(
        self, input_dict: dict[str, torch.Tensor], state: list[torch.Tensor], seq_lens: Any
    ) -> tuple[torch.Tensor, list[torch.Tensor]]:
        features, state_out = self._memory(self.trunk, self.lstm, input_dict, state[:2], seq_lens)
        if self.vf_share_layers:
            self.__dict__["_features"] = features
        else:
            value_features, value_state = self._memory(
                self.value_trunk, self.value_lstm, input_dict, state[2:], seq_lens
            )
            self.__dict__["_features"] = value_features
            state_out += value_state
        return self.log_std(self.logits(self.policy_head(features))), state_out

    def _memory(
        self,
        trunk: nn.Module,
        lstm: nn.LSTM,
        input_dict: dict[str, torch.Tensor],
        state: list[torch.Tensor],
        seq_lens: Any,
    ) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """The LSTM's output rows over ``trunk``'s features (and the previous inputs), and its
        state after the last step."""
        parts = [trunk(input_dict[self.obs_key])]
        if self.uses_prev_actions:
            parts.append(self._encode_action(input_dict["prev_actions"]))
        if self.uses_prev_rewards:
            parts.append(input_dict["prev_rewards"].float().reshape(-1, 1))
        rows = parts[0] if len(parts) == 1 else torch.cat(parts, dim=-1)
        sequences = add_time_dimension(rows, seq_lens)
        out, (h, c) = lstm(sequences, (state[0].unsqueeze(0), state[1].unsqueeze(0)))
        return out.reshape(-1, self.cell_size), [h.squeeze(0), c.squeeze(0)]

    def value_function(self) -> torch.Tensor:
        assert self._features is not None, "value_function() is called after forward()"
        out: torch.Tensor = self.value_branch(self.value_head(self._features))
        return out.squeeze(-1)
