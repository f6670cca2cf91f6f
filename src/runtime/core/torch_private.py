"""The one place that relies on torch's private APIs and undocumented behaviour; each use says
what it is for and has a public fallback, so a torch upgrade that moves one slows the runtime
down here and breaks nothing.

- ``fused_adam_``: ``torch._fused_adam_``, the kernel of ``torch.optim.Adam(fused=True)``
  (``runtime.core.adam`` calls it without importing ``torch.optim``, which imports
  ``torch._dynamo``); fallback: the same update as a loop of public tensor operations.
- ``foreach_add_``, ``foreach_norm``, ``foreach_mul_``, ``foreach_lerp_``, ``foreach_copy_``:
  ``torch._foreach_*``, one call for a list of tensors (the Adam step counts, gradient
  clipping by global norm, polyak-averaged target networks, weights copied into an acting
  module after every update); fallback: a loop over the tensors (the norms as
  ``torch.nn.utils.clip_grad_norm_`` computes them).
- ``tanh``: on CPU, numpy's SIMD tanh written into a torch tensor through the memory
  ``Tensor.numpy()`` shares with it (with autograd, as a ``torch.autograd.Function`` whose
  backward is ``torch.ops.aten.tanh_backward``, tanh's own); fallback: ``torch.tanh``.
- ``unhooked``, ``no_global_hooks``: whether calling a module is calling its ``forward`` (no
  hooks on it, none registered globally, no tracing), read from the attributes
  ``nn.Module.__call__`` tests itself; lets acting call ``forward`` without the call's
  overhead (``runtime.core.lean_acting``); fallback: every module is called as a module.
- ``module_registries``: the dicts a module keeps its submodules, parameters and hooks in
  (``_modules``, ``_parameters``, ``_forward_hooks``, ...), for the numpy acting path's cached
  layers (``runtime.core.numpy_acting``) to check on every call that they are still in place
  and unhooked; fallback: None, and torch acts.
- ``tensor_versions``: tensors' in-place version counters (``Tensor._version``, with their
  storage addresses), to tell whether weights changed since they were last copied
  (``runtime.core.grouped_acting``); fallback: None, "maybe changed", and the copy is made
  again.

Each private path is checked once per device before its first use: it must exist and give
the fallback's numbers on a small input. One that fails is replaced by its fallback for the
rest of the process, with one warning. Setting a ``use_*`` flag to False forces the fallback
(the tests compare both paths that way).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from typing import Any, cast

import numpy as np
import torch
from torch import nn

logger = logging.getLogger(__name__)

#: False: ``fused_adam_`` takes its public fallback.
use_fused_adam = True
#: False: ``foreach_add_``, ``foreach_norm`` and ``foreach_mul_`` take their public fallbacks.
use_foreach = True
#: False: ``tanh`` is always ``torch.tanh``.
use_numpy_tanh = True

_CPU = torch.device("cpu")

#: api -> device -> whether the private path passed its check there.
_checked: dict[str, dict[torch.device, bool]] = {"fused_adam": {}, "foreach": {}, "numpy_tanh": {}}


def _private_ok(api: str, device: torch.device) -> bool:
    ok = _checked[api].get(device)
    if ok is None:
        ok = _checked[api][device] = _check(api, device)
    return ok


def _check(api: str, device: torch.device) -> bool:
    try:
        passed = _CHECKS[api](device)
        reason = "it gives other numbers than its public fallback"
    except Exception as error:  # missing (AttributeError), or unsupported here
        passed = False
        reason = f"{type(error).__name__}: {error}"
    if not passed:
        logger.warning(
            "torch %s: the private path of %s is not used on %s (%s); using its public fallback",
            torch.__version__,
            api,
            device,
            reason,
        )
    return passed


# ---------------------------------------------------------------------------------- Adam


def fused_adam_(
    params: list[torch.Tensor],
    grads: list[torch.Tensor],
    exp_avgs: list[torch.Tensor],
    exp_avg_sqs: list[torch.Tensor],
    max_exp_avg_sqs: list[torch.Tensor],
    steps: list[torch.Tensor],
    *,
    lr: float,
    beta1: float,
    beta2: float,
    weight_decay: float,
    eps: float,
    amsgrad: bool,
    maximize: bool,
    private: bool | None = None,
) -> None:
    """One Adam update of ``params`` in place (``torch.optim.Adam``'s algorithm; ``steps``
    already counts this step, and ``max_exp_avg_sqs`` is empty unless ``amsgrad``).

    ``private``: True for ``torch._fused_adam_``, False for the public fallback, None (the
    default) for the first where ``use_fused_adam`` is set and it passed its check. The
    fallback is the kernel's update in public operations, in the kernel's order: the same
    numbers to float rounding (one step gives equal moments; the kernel's parameter update
    rounds differently in the last bit now and then)."""
    if private is None:
        private = use_fused_adam and _private_ok("fused_adam", params[0].device)
    if private:
        torch._fused_adam_(
            params,
            grads,
            exp_avgs,
            exp_avg_sqs,
            max_exp_avg_sqs,
            steps,
            lr=lr,
            beta1=beta1,
            beta2=beta2,
            weight_decay=weight_decay,
            eps=eps,
            amsgrad=amsgrad,
            maximize=maximize,
        )
        return
    with torch.no_grad():
        for i, (param, grad, exp_avg, exp_avg_sq, step_t) in enumerate(
            zip(params, grads, exp_avgs, exp_avg_sqs, steps, strict=True)
        ):
            step = float(step_t)
            bias_correction1 = 1 - beta1**step
            bias_correction2_sqrt = math.sqrt(1 - beta2**step)
            if maximize:
                grad = -grad
            if weight_decay != 0:
                grad = grad.add(param, alpha=weight_decay)
            exp_avg.lerp_(grad, 1 - beta1)
            exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
            second = exp_avg_sq
            if amsgrad:
                torch.maximum(max_exp_avg_sqs[i], exp_avg_sq, out=max_exp_avg_sqs[i])
                second = max_exp_avg_sqs[i]
            denom = second.sqrt() / bias_correction2_sqrt + eps
            param.add_(exp_avg * (-lr / bias_correction1) / denom)


def _check_fused_adam(device: torch.device) -> bool:
    def run(private: bool) -> list[torch.Tensor]:
        generator = torch.Generator().manual_seed(0)
        param, grad, exp_avg, exp_avg_sq, max_sq = (
            torch.rand(8, generator=generator).to(device) for _ in range(5)
        )
        step = torch.full((), 3.0, device=device)
        fused_adam_(
            [param],
            [grad],
            [exp_avg],
            [exp_avg_sq],
            [max_sq],
            [step],
            lr=0.1,
            beta1=0.9,
            beta2=0.99,
            weight_decay=0.01,
            eps=1e-8,
            amsgrad=True,
            maximize=False,
            private=private,
        )
        return [param, exp_avg, exp_avg_sq, max_sq]

    private = run(True)
    public = run(False)
    return all(
        torch.allclose(a, b, rtol=1e-5, atol=1e-6) for a, b in zip(private, public, strict=True)
    )


# ------------------------------------------------------------------------- foreach ops


def foreach_add_(tensors: list[torch.Tensor], value: float) -> None:
    """``t.add_(value)`` for every tensor."""
    if use_foreach and _private_ok("foreach", tensors[0].device):
        torch._foreach_add_(tensors, value)
        return
    for tensor in tensors:
        tensor.add_(value)


def foreach_norm(tensors: list[torch.Tensor]) -> tuple[torch.Tensor, ...] | list[torch.Tensor]:
    """The 2-norm of every tensor (0-dim tensors)."""
    if use_foreach and _private_ok("foreach", tensors[0].device):
        return torch._foreach_norm(tensors)
    return [torch.linalg.vector_norm(tensor) for tensor in tensors]


def foreach_mul_(tensors: list[torch.Tensor], scale: torch.Tensor) -> None:
    """``t.mul_(scale)`` for every tensor (``scale`` a 0-dim tensor)."""
    if use_foreach and _private_ok("foreach", tensors[0].device):
        torch._foreach_mul_(tensors, scale)
        return
    for tensor in tensors:
        tensor.mul_(scale)


def foreach_lerp_(targets: list[torch.Tensor], sources: list[torch.Tensor], weight: float) -> None:
    """``t.lerp_(s, weight)``, i.e. ``t = (1 - weight) * t + weight * s``, for every pair."""
    if use_foreach and _private_ok("foreach", targets[0].device):
        torch._foreach_lerp_(targets, sources, weight)
        return
    for target, source in zip(targets, sources, strict=True):
        target.lerp_(source, weight)


def foreach_copy_(targets: list[torch.Tensor], sources: list[torch.Tensor]) -> None:
    """``t.copy_(s)`` for every pair."""
    if use_foreach and _private_ok("foreach", targets[0].device):
        torch._foreach_copy_(targets, sources)
        return
    for target, source in zip(targets, sources, strict=True):
        target.copy_(source)


def _check_foreach(device: torch.device) -> bool:
    generator = torch.Generator().manual_seed(0)
    tensors = [torch.randn(n, generator=generator).to(device) for n in (3, 5)]
    norms = torch._foreach_norm(tensors)
    scaled = [t.clone() for t in tensors]
    torch._foreach_mul_(scaled, torch.full((), 0.5, device=device))
    torch._foreach_add_(scaled, 1.0)
    averaged = [t.clone() for t in tensors]
    torch._foreach_lerp_(averaged, scaled, 0.25)
    copied = [torch.zeros_like(t) for t in tensors]
    torch._foreach_copy_(copied, tensors)
    return all(
        torch.allclose(norm, torch.linalg.vector_norm(t))
        and torch.allclose(s, t * 0.5 + 1.0)
        and torch.allclose(a, 0.75 * t + 0.25 * s)
        and torch.equal(c, t)
        for norm, t, s, a, c in zip(norms, tensors, scaled, averaged, copied, strict=True)
    )


# -------------------------------------------------------------------------------- tanh


def tanh(x: torch.Tensor) -> torch.Tensor:
    """``torch.tanh(x)``; on CPU in float32 computed by numpy.

    torch 2.13's float32 tanh on CPU runs scalar code under every kernel set (35 us for a
    256 x 64 activation here, against 4 us for numpy's SIMD tanh); numpy writes its result
    straight into a torch tensor through the memory ``Tensor.numpy()`` shares with it. The
    values are the same to float32 rounding. With autograd, the gradient is
    ``grad * (1 - tanh(x)**2)`` from the saved result, by ``torch.tanh``'s own backward; a
    forward and backward pass of the tuned PPO's 256 x 64 layer takes 28-33 us against 51-57
    (and 6-10% of its learner's gradient step)."""
    if (
        not use_numpy_tanh
        or not x.is_cpu
        or x.dtype != torch.float32
        or _tracing_state()
        or not _private_ok("numpy_tanh", _CPU)
    ):
        return torch.tanh(x)
    if x.requires_grad and torch.is_grad_enabled():
        return cast(torch.Tensor, _NumpyTanh.apply(x))  # type: ignore[no-untyped-call]
    return _numpy_tanh(x)


#: Whether the JIT tracer is recording (numpy's work would not be in the trace).
_tracing_state: Callable[[], Any] = getattr(torch._C, "_get_tracing_state", lambda: None)


def _numpy_tanh(x: torch.Tensor) -> torch.Tensor:
    y = torch.empty_like(x)
    np.tanh(x.detach().numpy(), out=y.numpy())
    return y


class _NumpyTanh(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        y = _numpy_tanh(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        (y,) = ctx.saved_tensors
        return _tanh_backward(grad, y)


def _public_tanh_backward(grad: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return grad * (1 - y * y)


# ``torch.tanh``'s own backward kernel: one pass where the formula takes three (6 us against
# 14 at 256 x 64 under the DEFAULT kernels); differentiable, so second derivatives work.
try:
    _tanh_backward: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] = (
        torch.ops.aten.tanh_backward
    )
except (AttributeError, RuntimeError):  # pragma: no cover - another torch's layout
    _tanh_backward = _public_tanh_backward


def _check_numpy_tanh(device: torch.device) -> bool:
    x = torch.linspace(-3, 3, 16, device=device)
    y = torch.zeros_like(x)
    out = y.numpy()
    np.tanh(x.numpy(), out=out)
    grad = torch.linspace(1, 2, 16, device=device)
    return (
        bool(np.shares_memory(out, y.numpy()))
        and torch.allclose(y, torch.tanh(x))
        and torch.allclose(_tanh_backward(grad, y), _public_tanh_backward(grad, y))
    )


_CHECKS: dict[str, Callable[[torch.device], bool]] = {
    "fused_adam": _check_fused_adam,
    "foreach": _check_foreach,
    "numpy_tanh": _check_numpy_tanh,
}


# -------------------------------------------------------------------------------- module hooks

try:
    from torch.nn.modules import module as _module_internals

    _GLOBAL_HOOKS = (
        _module_internals._global_backward_pre_hooks,
        _module_internals._global_backward_hooks,
        _module_internals._global_forward_hooks,
        _module_internals._global_forward_pre_hooks,
    )
    _get_tracing_state = torch._C._get_tracing_state
    _HOOK_ATTRIBUTES: tuple[str, ...] = (
        "_backward_hooks",
        "_backward_pre_hooks",
        "_forward_hooks",
        "_forward_pre_hooks",
    )
    _hooks_readable = all(hasattr(nn.Linear(1, 1), name) for name in _HOOK_ATTRIBUTES)
except (ImportError, AttributeError):  # pragma: no cover - another torch's layout
    _hooks_readable = False

if not _hooks_readable:  # pragma: no cover
    logger.warning(
        "torch's module hook registries were not found; modules are called as modules when "
        "acting (correct, a little slower)"
    )


def no_global_hooks() -> bool:
    """True when no module hook is registered globally and nothing is being traced: what
    ``unhooked`` needs besides the module's own hooks. False when that can't be read."""
    return _hooks_readable and not (any(_GLOBAL_HOOKS) or _get_tracing_state())


def unhooked(module: nn.Module) -> bool:
    """True when ``module`` itself has no hooks, so that (given ``no_global_hooks()``) calling
    it is exactly calling its ``forward``, as ``nn.Module.__call__`` decides."""
    return _hooks_readable and not (
        module._backward_hooks
        or module._backward_pre_hooks
        or module._forward_hooks
        or module._forward_pre_hooks
    )


def module_registries(
    module: nn.Module,
) -> tuple[dict[str, Any], dict[str, Any], tuple[dict[Any, Any], ...]] | None:
    """The dicts ``module`` keeps its submodules, its parameters and its own hooks in (torch
    adds to and deletes from them in place; assigning a submodule or parameter replaces an
    entry), or None when torch does not keep them so: lets a cache of a module's layers check,
    with a few dict reads per call, that they are still in place and unhooked."""
    if not _hooks_readable:
        return None
    try:
        hooks = tuple(getattr(module, name) for name in _HOOK_ATTRIBUTES)
        return module._modules, module._parameters, hooks
    except AttributeError:  # pragma: no cover - another torch's layout
        return None


def tensor_versions(tensors: list[torch.Tensor]) -> tuple[int, ...] | None:
    """The tensors' version counters (each in-place change bumps its tensor's) and storage
    addresses (``param.data = ...`` swaps the storage without a bump), or None when torch does
    not expose the counters."""
    try:
        return tuple(n for t in tensors for n in (t._version, t.data_ptr()))
    except AttributeError:  # pragma: no cover - another torch's layout
        return None
