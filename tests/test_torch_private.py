"""runtime.core.torch_private: every private torch path and its public fallback give the same
numbers (to float32 rounding), and a private API that is missing is replaced by its fallback."""

from __future__ import annotations

import logging
from typing import Any

import pytest
import torch

from runtime.core import torch_private
from runtime.core.adam import Adam
from runtime.core.gradients import clip_grad_norm
from runtime.core.tanh import Tanh


def _refuse(name: str) -> Any:
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError(f"torch.{name} was called though its fallback was forced")

    return refuse


def _train(steps: int = 15, **options: Any) -> tuple[list[torch.Tensor], dict[str, Any]]:
    """A few Adam steps with clipping; the last layer's bias gets no gradient after the first
    step (the step counts then go through ``foreach_add_``)."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 16), Tanh(), torch.nn.Linear(16, 2))
    optimizer = Adam(model.parameters(), lr=1e-2, **options)
    params = list(model.parameters())
    inputs = torch.randn(32, 4)
    for step in range(steps):
        optimizer.zero_grad(set_to_none=True)
        model(inputs).pow(2).mean().backward()
        if step % 2:
            params[-1].grad = None
        clip_grad_norm(params, 0.5)
        optimizer.step()
    return [p.detach().clone() for p in params], optimizer.state_dict()


def _assert_same(
    private: tuple[list[torch.Tensor], dict[str, Any]],
    public: tuple[list[torch.Tensor], dict[str, Any]],
) -> None:
    for a, b in zip(private[0], public[0], strict=True):
        torch.testing.assert_close(a, b)
    for index, state in private[1]["state"].items():
        assert state.keys() == public[1]["state"][index].keys()
        for name, value in state.items():
            torch.testing.assert_close(value, public[1]["state"][index][name])


@pytest.mark.parametrize(
    "options", [{}, {"amsgrad": True, "weight_decay": 0.1}, {"maximize": True, "eps": 1e-6}]
)
def test_adam_fallback_gives_the_fused_kernels_numbers(
    monkeypatch: pytest.MonkeyPatch, options: dict[str, Any]
) -> None:
    private = _train(**options)
    monkeypatch.setattr(torch_private, "use_fused_adam", False)
    monkeypatch.setattr(torch, "_fused_adam_", _refuse("_fused_adam_"))
    _assert_same(private, _train(**options))


def test_foreach_fallbacks_give_the_foreach_numbers(monkeypatch: pytest.MonkeyPatch) -> None:
    private = _train()
    grads = [torch.randn(5, 3), torch.randn(7)]
    norms = torch_private.foreach_norm(grads)
    monkeypatch.setattr(torch_private, "use_foreach", False)
    for name in ("_foreach_add_", "_foreach_norm", "_foreach_mul_"):
        monkeypatch.setattr(torch, name, _refuse(name))
    _assert_same(private, _train())
    for norm, expected in zip(torch_private.foreach_norm(grads), norms, strict=True):
        torch.testing.assert_close(norm, expected)


def test_foreach_lerp_and_copy_fallbacks_give_the_foreach_numbers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def run() -> list[torch.Tensor]:
        generator = torch.Generator().manual_seed(1)
        targets = [torch.randn(4, 3, generator=generator), torch.randn(6, generator=generator)]
        sources = [torch.randn(t.shape, generator=generator) for t in targets]
        torch_private.foreach_lerp_(targets, sources, 0.005)
        copies = [torch.zeros_like(t) for t in targets]
        torch_private.foreach_copy_(copies, targets)
        return targets + copies

    private = run()
    monkeypatch.setattr(torch_private, "use_foreach", False)
    for name in ("_foreach_lerp_", "_foreach_copy_"):
        monkeypatch.setattr(torch, name, _refuse(name))
    for got, expected in zip(run(), private, strict=True):
        torch.testing.assert_close(got, expected)


def test_tanh_fallback_gives_the_numpy_numbers(monkeypatch: pytest.MonkeyPatch) -> None:
    x = torch.randn(64, 256)
    with torch.no_grad():
        private = Tanh()(x)
        monkeypatch.setattr(torch_private, "use_numpy_tanh", False)
        public = Tanh()(x)
    torch.testing.assert_close(private, public)
    torch.testing.assert_close(public, torch.tanh(x), rtol=0, atol=0)


def test_tanh_with_autograd_gives_torchs_values_and_gradients(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The numpy tanh under autograd: the same values and first and second derivatives as
    ``torch.tanh`` (to float32 rounding), through a layer and a loss."""
    torch.manual_seed(0)
    layer = torch.nn.Linear(5, 7)
    x = torch.randn(9, 5)

    def run() -> list[torch.Tensor]:
        layer.zero_grad()
        y = Tanh()(layer(x))
        (grad_y,) = torch.autograd.grad(y.pow(3).sum(), y, create_graph=True)
        loss = (y * grad_y).sum()
        loss.backward()
        assert layer.weight.grad is not None and layer.bias.grad is not None
        return [y.detach(), layer.weight.grad.clone(), layer.bias.grad.clone()]

    private = run()
    assert Tanh()(layer(x)).grad_fn is not None
    assert type(Tanh()(layer(x)).grad_fn).__name__ == "_NumpyTanhBackward"
    monkeypatch.setattr(torch_private, "use_numpy_tanh", False)
    assert type(Tanh()(layer(x)).grad_fn).__name__ == "TanhBackward0"
    for got, expected in zip(private, run(), strict=True):
        torch.testing.assert_close(got, expected)
    # Second derivatives through the saved result.
    monkeypatch.setattr(torch_private, "use_numpy_tanh", True)
    z = torch.randn(4, 3, dtype=torch.float32, requires_grad=True)
    (g,) = torch.autograd.grad(Tanh()(z).sum(), z, create_graph=True)
    (gg,) = torch.autograd.grad(g.sum(), z)
    t = torch.tanh(z.detach())
    torch.testing.assert_close(g.detach(), 1 - t * t)
    torch.testing.assert_close(gg, -2 * t * (1 - t * t))


@pytest.mark.filterwarnings("ignore:`torch.jit.trace:DeprecationWarning")
def test_a_traced_tanh_is_torchs() -> None:
    """Numpy's work would not be recorded: a trace replays the traced input's result."""
    traced = torch.jit.trace(Tanh(), torch.randn(4, 3))  # type: ignore[no-untyped-call]
    x = torch.randn(4, 3)
    torch.testing.assert_close(traced(x), torch.tanh(x))


def test_a_missing_private_api_is_replaced_by_its_fallback(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    private = _train()
    monkeypatch.setattr(torch_private, "_checked", {api: {} for api in torch_private._checked})
    for name in ("_fused_adam_", "_foreach_add_", "_foreach_norm", "_foreach_mul_"):
        monkeypatch.delattr(torch, name)
    with caplog.at_level(logging.WARNING, logger=torch_private.__name__):
        public = _train()
    _assert_same(private, public)
    warned = [r.getMessage() for r in caplog.records]
    assert len(warned) == 2  # once per API, not once per call
    assert all("AttributeError" in w and "public fallback" in w for w in warned)
    assert torch_private._checked["fused_adam"] == {torch.device("cpu"): False}
    assert torch_private._checked["foreach"] == {torch.device("cpu"): False}
