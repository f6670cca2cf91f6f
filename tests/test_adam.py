"""The runtime's Adam: torch.optim.Adam's results and state layout, without torch.optim."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from rlconf import ConfigError
from runtime.core.adam import Adam, make_adam


def _train(optimizer_factory: Any, steps: int = 15) -> tuple[torch.nn.Module, Any]:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.Tanh(), torch.nn.Linear(16, 2))
    optimizer = optimizer_factory(model.parameters())
    inputs = torch.randn(32, 4)
    for _ in range(steps):
        optimizer.zero_grad(set_to_none=True)
        model(inputs).pow(2).mean().backward()
        optimizer.step()
    return model, optimizer


@pytest.mark.parametrize(
    "options", [{}, {"amsgrad": True, "weight_decay": 0.1}, {"maximize": True, "eps": 1e-6}]
)
def test_same_weights_and_state_as_torch_optim_adam(options: dict[str, Any]) -> None:
    ours, ours_opt = _train(lambda p: Adam(p, lr=1e-2, **options))
    theirs, theirs_opt = _train(lambda p: torch.optim.Adam(p, lr=1e-2, fused=True, **options))
    for a, b in zip(ours.parameters(), theirs.parameters(), strict=True):
        assert torch.equal(a, b)
    mine, torch_state = ours_opt.state_dict(), theirs_opt.state_dict()
    assert mine["param_groups"][0].keys() == torch_state["param_groups"][0].keys()
    for index, state in torch_state["state"].items():
        assert state.keys() == mine["state"][index].keys()
        for name, value in state.items():
            assert torch.equal(mine["state"][index][name], value)


def test_parameters_without_gradients_keep_their_state_as_torch_optim_adam_does() -> None:
    # A branch no loss reaches (the unused value branch of a Q-network) has no gradient; it
    # alternates here with steps where the whole model has one: the step counts of the others
    # advance alone, as torch.optim.Adam's do.
    def run(factory: Any) -> tuple[torch.nn.Module, dict[str, Any]]:
        torch.manual_seed(0)
        used, unused = torch.nn.Linear(3, 4), torch.nn.Linear(3, 1)
        model = torch.nn.ModuleList([used, unused])
        optimizer = factory(model.parameters())
        inputs = torch.randn(8, 3)
        for step in range(6):
            optimizer.zero_grad(set_to_none=True)
            loss = used(inputs).pow(2).mean()
            if step % 3 == 0:
                loss = loss + unused(inputs).pow(2).mean()
            loss.backward()
            optimizer.step()
        return model, optimizer.state_dict()

    ours, mine = run(lambda p: Adam(p, lr=1e-2))
    theirs, torch_state = run(lambda p: torch.optim.Adam(p, lr=1e-2, fused=True))
    for a, b in zip(ours.parameters(), theirs.parameters(), strict=True):
        assert torch.equal(a, b)
    assert [float(mine["state"][i]["step"]) for i in range(4)] == [6.0, 6.0, 2.0, 2.0]
    for index, state in torch_state["state"].items():
        for name, value in state.items():
            assert torch.equal(mine["state"][index][name], value)


def test_state_loads_across_both_optimizers() -> None:
    _, theirs_opt = _train(lambda p: torch.optim.Adam(p, lr=1e-2))
    model, ours_opt = _train(lambda p: Adam(p, lr=1.0), steps=1)
    ours_opt.load_state_dict(theirs_opt.state_dict())
    assert ours_opt.param_groups[0]["lr"] == 1e-2
    assert float(ours_opt.state_dict()["state"][0]["step"]) == 15
    back = torch.optim.Adam(model.parameters(), lr=1.0)
    back.load_state_dict(ours_opt.state_dict())
    assert back.param_groups[0]["lr"] == 1e-2


def test_options_it_does_not_implement_get_torch_optim() -> None:
    params = list(torch.nn.Linear(2, 2).parameters())
    assert isinstance(make_adam(params, 1e-3, {"betas": [0.8, 0.9]}), Adam)
    assert isinstance(make_adam(params, 1e-3, {"fused": False}), torch.optim.Adam)
    assert isinstance(make_adam(params, 1e-3, {"foreach": True}), torch.optim.Adam)
    with pytest.raises(ValueError, match="betas"):
        make_adam(params, 1e-3, {"betas": [1.5, 0.9]})
    with pytest.raises(ConfigError, match=r"optimizer.*no_such_option.*allowed: betas"):
        make_adam(params, 1e-3, {"no_such_option": 1})
