"""``Adam``: the optimizer of every policy, on torch's fused Adam kernel.

``torch.optim`` imports ``torch._dynamo`` when it makes its first optimizer and again in every
``step()`` (1.1 s and 73 MB here: more than training the main job takes), though the runtime
never compiles anything. This class calls the kernel ``torch.optim.Adam(fused=True)`` calls,
``torch._fused_adam_`` (through ``runtime.core.torch_private``, which falls back to the same
update in public operations where that kernel is missing), and keeps ``torch.optim.Adam``'s
``state_dict`` layout, so checkpoints of either load into the other. Options it does not
implement (``fused=False``, ``foreach``, ``capturable``, ...) get ``torch.optim.Adam`` itself.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Mapping
from typing import Any

import torch

from rlconf.errors import ConfigError
from runtime.core import torch_private

#: ``config["optimizer"]`` keys this class implements; any other key selects torch.optim.Adam.
_OPTIONS = ("betas", "eps", "weight_decay", "amsgrad", "maximize")


def make_adam(params: Iterable[torch.nn.Parameter], lr: float, options: Mapping[str, Any]) -> Any:
    """Adam over ``params`` with ``config["optimizer"]`` options (torch.optim.Adam's keywords)."""
    options = dict(options)
    allowed = [
        n for n in inspect.signature(torch.optim.Adam).parameters if n not in ("params", "lr")
    ]
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise ConfigError.single(
            "training()",
            "optimizer",
            f"has keys torch.optim.Adam does not take: {', '.join(unknown)}",
            value=options,
            has_value=True,
            allowed=", ".join(allowed),
        )
    if options.pop("fused", True) is True and set(options) <= set(_OPTIONS):
        return Adam(params, lr=lr, **options)
    return torch.optim.Adam(params, lr=lr, **options)


class Adam:
    """Adam with ``torch.optim.Adam``'s interface: ``param_groups``, ``zero_grad()``,
    ``step()``, ``state_dict()``, ``load_state_dict()``."""

    def __init__(
        self,
        params: Iterable[torch.nn.Parameter],
        *,
        lr: float,
        betas: tuple[float, float] | list[float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        amsgrad: bool = False,
        maximize: bool = False,
    ) -> None:
        beta1, beta2 = (float(b) for b in betas)
        checks = {
            "lr": lr >= 0,
            "eps": eps >= 0,
            "betas[0]": 0 <= beta1 < 1,
            "betas[1]": 0 <= beta2 < 1,
            "weight_decay": weight_decay >= 0,
        }
        bad = [name for name, ok in checks.items() if not ok]
        if bad:
            raise ValueError(
                f"Adam: invalid {', '.join(bad)} (lr={lr}, betas={tuple(betas)}, eps={eps}, "
                f"weight_decay={weight_decay}); lr, eps, weight_decay >= 0 and 0 <= betas < 1"
            )
        self.params = [p for p in params if p.requires_grad]
        if not self.params:
            raise ValueError("Adam: the model has no parameters that require gradients")
        self.param_groups: list[dict[str, Any]] = [
            {
                "params": self.params,
                "lr": float(lr),
                "betas": (beta1, beta2),
                "eps": float(eps),
                "weight_decay": float(weight_decay),
                "amsgrad": bool(amsgrad),
                "maximize": bool(maximize),
                "foreach": None,
                "capturable": False,
                "differentiable": False,
                "fused": True,
                "decoupled_weight_decay": False,
            }
        ]
        self.state: dict[int, dict[str, torch.Tensor]] = {}
        # Every parameter's step count is a view into one tensor, so that the usual step (all
        # parameters have gradients) counts them all with one add instead of one per tensor.
        devices = {p.device for p in self.params}
        self._steps = (
            torch.zeros(len(self.params), dtype=torch.float32, device=self.params[0].device)
            if len(devices) == 1
            else None
        )
        #: Per set of parameters with gradients (their indices): 1.0 at each of them, 0.0
        #: elsewhere, the increment of ``_steps`` in one add.
        self._increments: dict[tuple[int, ...], torch.Tensor] = {}

    def _increment_of(self, indices: list[int]) -> torch.Tensor:
        """1.0 at ``indices``, 0.0 elsewhere (made once per set of indices)."""
        key = tuple(indices)
        increment = self._increments.get(key)
        if increment is None:
            assert self._steps is not None
            increment = torch.zeros_like(self._steps)
            increment[list(key)] = 1.0
            self._increments[key] = increment
        return increment

    def zero_grad(self, set_to_none: bool = True) -> None:
        for param in self.params:
            if set_to_none:
                param.grad = None
            elif param.grad is not None:
                param.grad.zero_()

    def _param_state(self, index: int, param: torch.Tensor, amsgrad: bool) -> dict[str, Any]:
        state = self.state.get(index)
        if state is None:
            state = {
                "step": self._step_tensor(index, param),
                "exp_avg": torch.zeros_like(param, memory_format=torch.preserve_format),
                "exp_avg_sq": torch.zeros_like(param, memory_format=torch.preserve_format),
            }
            self.state[index] = state
        if amsgrad and "max_exp_avg_sq" not in state:
            state["max_exp_avg_sq"] = torch.zeros_like(param, memory_format=torch.preserve_format)
        return state

    def _step_tensor(self, index: int, param: torch.Tensor) -> torch.Tensor:
        if self._steps is not None:
            return self._steps[index]
        return torch.zeros((), dtype=torch.float32, device=param.device)

    @torch.no_grad()
    def step(self) -> None:
        group = self.param_groups[0]
        amsgrad = bool(group["amsgrad"])
        params: list[torch.Tensor] = []
        grads: list[torch.Tensor] = []
        states: list[dict[str, Any]] = []
        indices: list[int] = []
        for index, param in enumerate(self.params):
            if param.grad is not None:
                indices.append(index)
                params.append(param)
                grads.append(param.grad)
                states.append(self._param_state(index, param, amsgrad))
        if not params:
            return
        steps = [s["step"] for s in states]
        if self._steps is not None and len(params) == len(self.params):
            self._steps.add_(1)
        elif self._steps is not None:
            # Some parameters have no gradient (a branch no loss reaches): count the others
            # in one add too, rather than one add per tensor.
            self._steps.add_(self._increment_of(indices))
        else:
            torch_private.foreach_add_(steps, 1)
        beta1, beta2 = group["betas"]
        torch_private.fused_adam_(
            params,
            grads,
            [s["exp_avg"] for s in states],
            [s["exp_avg_sq"] for s in states],
            [s["max_exp_avg_sq"] for s in states] if amsgrad else [],
            steps,
            lr=float(group["lr"]),
            beta1=float(beta1),
            beta2=float(beta2),
            weight_decay=float(group["weight_decay"]),
            eps=float(group["eps"]),
            amsgrad=amsgrad,
            maximize=bool(group["maximize"]),
        )

    def state_dict(self) -> dict[str, Any]:
        """``torch.optim.Adam``'s layout: per-parameter state by index, then the group."""
        group = {k: v for k, v in self.param_groups[0].items() if k != "params"}
        group["params"] = list(range(len(self.params)))
        return {"state": {i: dict(s) for i, s in self.state.items()}, "param_groups": [group]}

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        groups = list(state_dict["param_groups"])
        if len(groups) != 1 or len(groups[0]["params"]) != len(self.params):
            raise ValueError(
                f"optimizer state for {[len(g['params']) for g in groups]} parameters can't be "
                f"loaded into an optimizer of {len(self.params)}"
            )
        saved = dict(groups[0])
        for key in ("lr", "betas", "eps", "weight_decay", "amsgrad", "maximize"):
            if key in saved:
                self.param_groups[0][key] = saved[key]
        self.state = {}
        for index, values in dict(state_dict["state"]).items():
            param = self.params[int(index)]
            state = {
                name: value.to(device=param.device, dtype=param.dtype)
                for name, value in dict(values).items()
                if name != "step"
            }
            step = self._step_tensor(int(index), param)
            step.copy_(torch.as_tensor(values["step"], dtype=torch.float32))
            state["step"] = step
            self.state[int(index)] = state
