"""``lean_actions``: ``TorchPolicy.compute_actions`` for the common case, without the per-call
overhead of the general path.

A sampler calls ``compute_actions`` once per env step with a few rows (8 in the tuned PPO, 16
per policy in a multi-agent env whose agents finish at different times), so the fixed cost of a
call weighs as much as the arithmetic: module calls, input and output dicts, the exploration's
dispatch. For the built-in networks (``TrunkModel``: the fully connected and vision networks)
acting with ``StochasticSampling``, this runs the same torch operations in the same order on
the same tensors - so the same actions, log-likelihoods, values and random draws - calling the
layers' ``forward`` directly; a fully connected network on CPU with a categorical or Gaussian
distribution acts on numpy instead (``runtime.core.numpy_acting``: the same actions from the
same random draws, the other outputs to float32 rounding). Anything else (a custom model or
exploration, a model with memory, the exploration's random first steps, a hooked module,
tracing) returns None and the general path acts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy.typing as npt
import torch
from torch import nn

from runtime.core.exploration.stochastic_sampling import StochasticSampling
from runtime.core.image_obs import model_obs
from runtime.core.layer_calls import run_layers
from runtime.core.models import TrunkModel
from runtime.core.module import ActorCriticModule
from runtime.core.numpy_acting import numpy_actions
from runtime.core.sample_batch import SampleBatch
from runtime.core.torch_private import no_global_hooks, unhooked

if TYPE_CHECKING:
    from runtime.core.policy import TorchPolicy

Array = npt.NDArray[Any]


def plain_trunk_model(model: nn.Module) -> bool:
    """A ``TrunkModel`` that acts and values as ``TrunkModel`` defines it."""
    if not isinstance(model, TrunkModel):
        return False
    kind = type(model)
    return (
        kind.forward is TrunkModel.forward
        and kind.value_function is TrunkModel.value_function
        and kind.values is TrunkModel.values
    )


def lean_actions(
    policy: TorchPolicy,
    obs_batch: Array,
    explore: bool,
    timestep: int,
    value_preds: bool,
    env_indices: Sequence[int] | None,
) -> tuple[Array, list[Any], dict[str, Array]] | None:
    """``policy.compute_actions(obs_batch, explore=..., timestep=..., value_preds=...)`` of a
    policy without memory and without state inputs, or None where the general path must act
    (see the module's docstring). Called inside ``compute_actions``'s inference mode."""
    module = policy.module
    exploration = policy.exploration
    dist_class = policy.dist_class
    if (
        type(module) is not ActorCriticModule
        or module.is_recurrent
        or type(exploration) is not StochasticSampling
        or dist_class is None
        or (explore and timestep < exploration.random_timesteps)
    ):
        return None
    model = module.model
    if not (plain_trunk_model(model) and no_global_hooks() and unhooked(model)):
        return None
    assert isinstance(model, TrunkModel)
    exploration.env_indices = env_indices
    if policy.device.type == "cpu":
        on_numpy = numpy_actions(
            model, dist_class, obs_batch, explore, value_preds and module.has_critic
        )
        if on_numpy is not None:
            return on_numpy[0], [], on_numpy[1]
    tensor = torch.from_numpy(model_obs(obs_batch, policy.keep_uint8_obs))
    if policy.device.type != "cpu":
        tensor = tensor.to(policy.device)
    # TrunkModel.forward, as ActorCriticModule calls it (through obs_input).
    obs = tensor.reshape(len(tensor), -1) if model.obs_key == "obs_flat" else tensor
    features = run_layers(model.trunk, obs)
    model.__dict__["_features"] = features if model.vf_share_layers else obs
    dist_inputs = run_layers(model.log_std, run_layers(model.logits, features))
    dist = dist_class(dist_inputs)
    actions = dist.sample() if explore else dist.deterministic_sample()
    extra = {
        SampleBatch.ACTION_LOGP: dist.logp(actions).cpu().numpy(),
        SampleBatch.ACTION_DIST_INPUTS: dist_inputs.cpu().numpy(),
    }
    if value_preds and module.has_critic:
        branch_input = features if model.vf_share_layers else obs
        values = run_layers(model.value_branch, branch_input).squeeze(-1)
        extra[SampleBatch.VF_PREDS] = values.cpu().numpy()
    return actions.cpu().numpy(), [], extra
