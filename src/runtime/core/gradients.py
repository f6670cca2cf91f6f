"""Gradient clipping by global norm, for the policies' optimizer steps, and ``frozen``:
parameters a loss flows through without reaching.

The same computation as ``torch.nn.utils.clip_grad_norm_`` (total 2-norm over every gradient,
scaled by ``max_norm / (norm + 1e-6)`` when above ``max_norm``) on a parameter list made once:
torch's version walks the module's parameters and groups the tensors by device on every call,
which took longer than the Adam step itself for the small networks RL policies use.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager

import torch

from runtime.core import torch_private


@torch.no_grad()
def clip_grad_norm(params: Sequence[torch.Tensor], max_norm: float) -> torch.Tensor:
    """Scale the gradients of ``params`` so that their global 2-norm is at most ``max_norm``;
    returns the norm before clipping."""
    grads = [p.grad for p in params if p.grad is not None]
    if not grads:
        return torch.zeros(())
    total: torch.Tensor = torch.linalg.vector_norm(torch.stack(torch_private.foreach_norm(grads)))
    scale = (max_norm / (total + 1e-6)).clamp(max=1.0)
    torch_private.foreach_mul_(grads, scale)
    return total


@contextmanager
def frozen(params: Iterable[torch.Tensor]) -> Iterator[None]:
    """Parameters that need no gradient inside the block: a loss computed there flows through
    them (to the inputs) without reaching them."""
    changed = [p for p in params if p.requires_grad]
    for p in changed:
        p.requires_grad_(False)
    try:
        yield
    finally:
        for p in changed:
            p.requires_grad_(True)
