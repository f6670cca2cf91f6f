"""The GTrXL attention network: its shapes and state, a whole padded sequence computing what
its steps compute one at a time (the memory and previous-action buffers it hands on), padding
that never reaches valid steps, the acting and training memory windows, image observations,
and gradients down to the trunk."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch

from rlconf.model_config import MODEL_DEFAULTS
from runtime.core.attention_network import AttentionNetwork

OBS = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)


def _config(**overrides: Any) -> dict[str, Any]:
    """The reference's model dict (its attention defaults included) with ``overrides``."""
    return {**MODEL_DEFAULTS, **overrides}


def _model(
    action_space: gym.Space[Any], obs_space: gym.Space[Any] = OBS, **overrides: Any
) -> AttentionNetwork:
    torch.manual_seed(0)
    outputs = int(action_space.n) if isinstance(action_space, gym.spaces.Discrete) else 4
    return AttentionNetwork(obs_space, action_space, outputs, _config(**overrides), "attention")


def _inputs(
    model: AttentionNetwork, rows: int, generator: torch.Generator
) -> dict[str, torch.Tensor]:
    """Random observations, previous actions and rewards for ``rows`` rows."""
    shape = model.obs_space.shape or ()
    obs = torch.rand((rows, *shape), generator=generator) * 2 - 1
    space = model.action_space
    if isinstance(space, gym.spaces.Discrete):
        actions = torch.randint(int(space.n), (rows,), generator=generator)
    else:
        actions = torch.randn((rows, *(space.shape or ())), generator=generator)
    return {
        "obs": obs,
        "obs_flat": obs.reshape(rows, -1),
        "prev_actions": actions,
        "prev_rewards": torch.randn(rows, generator=generator),
    }


def _random_state(model: AttentionNetwork, batch: int, generator: torch.Generator) -> list[Any]:
    return [torch.randn((batch, *s.shape), generator=generator) for s in model.get_initial_state()]


def _rows(inputs: dict[str, torch.Tensor], index: list[int]) -> dict[str, torch.Tensor]:
    return {key: value[index] for key, value in inputs.items()}


@pytest.mark.parametrize("action_space", [gym.spaces.Discrete(2), gym.spaces.Box(-1, 1, (2,))])
def test_shapes_of_outputs_values_and_state(action_space: gym.Space[Any]) -> None:
    model = _model(action_space, attention_num_transformer_units=2)
    assert not model.uses_prev_actions and not model.uses_prev_rewards
    initial = model.get_initial_state()
    assert [tuple(s.shape) for s in initial] == [(50, 64), (50, 64)]
    assert all(not s.any() for s in initial)
    batch, steps = 3, 5
    inputs = _inputs(model, batch * steps, torch.Generator().manual_seed(1))
    state = [s.expand(batch, *s.shape) for s in initial]
    out, state_out = model(inputs, state, torch.tensor([5, 3, 1]))
    assert out.shape == (batch * steps, model.num_outputs)
    assert model.value_function().shape == (batch * steps,)
    assert [tuple(s.shape) for s in state_out] == [(batch, 50, 64)] * 2
    # acting: one step each
    out, state_out = model(_rows(inputs, [0, 1, 2]), state, torch.ones(batch, dtype=torch.int64))
    assert out.shape == (batch, model.num_outputs)
    assert model.value_function().shape == (batch,)
    assert [tuple(s.shape) for s in state_out] == [(batch, 50, 64)] * 2


def test_state_holds_the_larger_memory_and_the_older_previous_actions_and_rewards() -> None:
    model = _model(
        gym.spaces.Discrete(3),
        attention_memory_inference=3,
        attention_memory_training=7,
        attention_dim=16,
        attention_use_n_prev_actions=3,
        attention_use_n_prev_rewards=2,
    )
    assert model.uses_prev_actions and model.uses_prev_rewards
    assert not AttentionNetwork.uses_prev_actions and not AttentionNetwork.uses_prev_rewards
    assert [tuple(s.shape) for s in model.get_initial_state()] == [(7, 16), (2, 3), (1, 1)]
    one = _model(gym.spaces.Box(-1, 1, (2,)), attention_use_n_prev_actions=1)
    assert one.uses_prev_actions and not one.uses_prev_rewards
    assert [tuple(s.shape) for s in one.get_initial_state()] == [(50, 64)]


def test_free_log_std_halves_the_outputs() -> None:
    model = AttentionNetwork(OBS, gym.spaces.Box(-1, 1, (2,)), 4, _config(free_log_std=True), "a")
    inputs = _inputs(model, 2, torch.Generator().manual_seed(0))
    state = [s.expand(2, *s.shape) for s in model.get_initial_state()]
    out, _ = model(inputs, state, torch.ones(2, dtype=torch.int64))
    assert out.shape == (2, 4)
    assert torch.equal(out[:, 2:], torch.zeros(2, 2))
    with pytest.raises(ValueError, match="even number"):
        AttentionNetwork(OBS, gym.spaces.Box(-1, 1, (2,)), 3, _config(free_log_std=True), "a")


@pytest.mark.parametrize(
    ("action_space", "prev_actions", "prev_rewards"),
    [
        (gym.spaces.Discrete(3), 0, 0),
        (gym.spaces.Discrete(3), 2, 2),
        (gym.spaces.Box(-1, 1, (2,)), 3, 1),
    ],
)
def test_a_whole_sequence_computes_what_its_steps_compute_one_at_a_time(
    action_space: gym.Space[Any], prev_actions: int, prev_rewards: int
) -> None:
    # A window of 4 steps, shorter than the sequences: the window slides along them.
    model = _model(
        action_space,
        attention_num_transformer_units=2,
        attention_num_heads=2,
        attention_head_dim=8,
        attention_dim=16,
        attention_memory_inference=4,
        attention_memory_training=4,
        attention_use_n_prev_actions=prev_actions,
        attention_use_n_prev_rewards=prev_rewards,
    )
    generator = torch.Generator().manual_seed(2)
    batch, steps, lens = 3, 6, [6, 4, 2]
    inputs = _inputs(model, batch * steps, generator)
    state = _random_state(model, batch, generator)
    with torch.no_grad():
        whole, whole_state = model(inputs, state, torch.tensor(lens))
        whole_values = model.value_function()
        for b, length in enumerate(lens):
            carried = [s[b : b + 1] for s in state]
            for t in range(length):
                row = b * steps + t
                out, carried = model(
                    _rows(inputs, [row]), carried, torch.ones(1, dtype=torch.int64)
                )
                torch.testing.assert_close(out[0], whole[row], atol=1e-5, rtol=0)
                torch.testing.assert_close(
                    model.value_function()[0], whole_values[row], atol=1e-5, rtol=0
                )
            for step_state, whole_part in zip(carried, whole_state, strict=True):
                torch.testing.assert_close(step_state[0], whole_part[b], atol=1e-5, rtol=0)


def test_padded_steps_change_no_valid_output_nor_the_state() -> None:
    model = _model(
        gym.spaces.Discrete(3),
        attention_memory_inference=5,
        attention_memory_training=5,
        attention_use_n_prev_actions=2,
        attention_use_n_prev_rewards=2,
    )
    generator = torch.Generator().manual_seed(3)
    batch, steps, lens = 3, 6, torch.tensor([6, 4, 2])
    inputs = _inputs(model, batch * steps, generator)
    state = _random_state(model, batch, generator)
    valid = (torch.arange(steps) < lens[:, None]).reshape(-1)
    noise = _inputs(model, batch * steps, generator)
    padded = {
        key: torch.where(_rows_mask(valid, value), value, noise[key])
        for key, value in inputs.items()
    }
    with torch.no_grad():
        out, state_out = model(inputs, state, lens)
        out_padded, state_out_padded = model(padded, state, lens)
    assert not torch.equal(padded["obs"], inputs["obs"])
    torch.testing.assert_close(out_padded[valid], out[valid], atol=1e-6, rtol=0)
    for a, b in zip(state_out_padded, state_out, strict=True):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=0)


def _rows_mask(valid: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    return valid.reshape(-1, *[1] * (like.dim() - 1))


def test_acting_attends_over_the_inference_memory_and_training_over_the_training_memory() -> None:
    model = _model(
        gym.spaces.Discrete(2), attention_memory_inference=2, attention_memory_training=5
    )
    generator = torch.Generator().manual_seed(4)
    state = _random_state(model, 1, generator)
    older = [s.clone() for s in state]
    older[0][:, :3] = torch.randn(1, 3, 64, generator=generator)  # all but the last 2 entries
    inputs = _inputs(model, 3, generator)
    one = torch.ones(1, dtype=torch.int64)
    with torch.no_grad():
        acting, _ = model(_rows(inputs, [0]), state, one)
        acting_older, _ = model(_rows(inputs, [0]), older, one)
        training, _ = model(inputs, state, 3 * one)
        training_older, _ = model(inputs, older, 3 * one)
    torch.testing.assert_close(acting_older, acting, atol=1e-6, rtol=0)
    assert not torch.allclose(training_older, training, atol=1e-4)


def test_the_memory_keeps_the_last_inputs_of_each_unit_after_the_valid_steps() -> None:
    model = _model(
        gym.spaces.Discrete(2), attention_memory_inference=3, attention_memory_training=3
    )
    generator = torch.Generator().manual_seed(5)
    state = _random_state(model, 2, generator)
    inputs = _inputs(model, 2 * 4, generator)
    lens = torch.tensor([4, 1])
    with torch.no_grad():
        _, (memory,) = model(inputs, state, lens)
        features = model.project(model.trunk(inputs["obs_flat"])).reshape(2, 4, 64)
    torch.testing.assert_close(memory[0], features[0, 1:4])
    torch.testing.assert_close(memory[1], torch.cat([state[0][1, 1:], features[1, :1]]))


def test_image_observations_go_through_the_conv_stack() -> None:
    image = gym.spaces.Box(0.0, 255.0, (42, 42, 3), np.float32)
    model = _model(gym.spaces.Discrete(2), image, attention_memory_inference=8)
    assert any(isinstance(m, torch.nn.Conv2d) for m in model.trunk.modules())
    batch, steps = 2, 3
    inputs = _inputs(model, batch * steps, torch.Generator().manual_seed(6))
    inputs["obs"] = (inputs["obs"] + 1) * 127.5
    state = [s.expand(batch, *s.shape) for s in model.get_initial_state()]
    out, state_out = model(inputs, state, torch.tensor([3, 2]))
    assert out.shape == (batch * steps, 2)
    assert model.value_function().shape == (batch * steps,)
    assert [tuple(s.shape) for s in state_out] == [(batch, 50, 64)]


def test_a_training_pass_reaches_the_trunk_through_the_memory_model() -> None:
    model = _model(
        gym.spaces.Discrete(2), attention_num_transformer_units=2, attention_use_n_prev_actions=2
    )
    generator = torch.Generator().manual_seed(7)
    batch, steps = 2, 4
    inputs = _inputs(model, batch * steps, generator)
    state = _random_state(model, batch, generator)
    out, _ = model(inputs, state, torch.tensor([4, 3]))
    (out.square().sum() + model.value_function().square().sum()).backward()
    for name, param in model.named_parameters():
        assert param.grad is not None, name
    trunk_grads = [p.grad for p in model.trunk.parameters()]
    assert trunk_grads and all(g is not None and g.abs().sum() > 0 for g in trunk_grads)


def test_the_previous_action_and_reward_buffers_shift_along_the_valid_steps() -> None:
    model = _model(
        gym.spaces.Discrete(3), attention_use_n_prev_actions=3, attention_use_n_prev_rewards=2
    )
    generator = torch.Generator().manual_seed(8)
    state = _random_state(model, 2, generator)
    inputs = _inputs(model, 2 * 4, generator)
    with torch.no_grad():
        _, (_, actions, rewards) = model(inputs, state, torch.tensor([4, 1]))
    one_hot = torch.nn.functional.one_hot(inputs["prev_actions"], 3).float().reshape(2, 4, 3)
    prev_rewards = inputs["prev_rewards"].reshape(2, 4, 1)
    # oldest first: the last n - 1 previous actions (rewards) of each sequence's valid steps
    torch.testing.assert_close(actions[0], one_hot[0, 2:4])
    torch.testing.assert_close(actions[1], torch.cat([state[1][1, 1:], one_hot[1, :1]]))
    torch.testing.assert_close(rewards[0], prev_rewards[0, 3:4])
    torch.testing.assert_close(rewards[1], prev_rewards[1, :1])
