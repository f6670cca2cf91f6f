"""``BCConfig``: behaviour cloning, MARWIL with ``beta=0.0``: the log-likelihood of the
recorded actions, unweighted, no value function.

As the reference's ``BCConfig``: MARWIL's keys with ``beta=0.0`` and
``postprocess_inputs=False`` (the returns are not needed), and a ``beta`` other than 0.0
refused when the config is validated (use ``MARWILConfig`` for that).
"""

from __future__ import annotations

from typing import Any, ClassVar

from rlconf.algorithms.marwil import MARWILConfig
from rlconf.errors import FieldIssue
from rlconf.fluent import NOT_SET
from rlconf.generated.bc_fluent import BCConfigFluent


class BCConfig(BCConfigFluent, MARWILConfig):
    """Config of BC: imitation of the actions in ``input`` (MARWIL with ``beta=0.0``)."""

    __slots__ = ()
    algo_name = "BC"
    _algo_defaults: ClassVar[dict[str, Any]] = {
        **MARWILConfig._algo_defaults,
        "beta": 0.0,
        "postprocess_inputs": False,
    }

    def _cross_field_issues(self) -> list[FieldIssue]:
        issues = super()._cross_field_issues()
        beta = self._plain("beta")
        if beta is not NOT_SET and beta != 0.0:
            issues.append(
                FieldIssue(
                    "beta",
                    "must be 0.0 for BC (behaviour cloning weighs every action alike); "
                    "use MARWILConfig for advantage-weighted imitation",
                    beta,
                    allowed="0.0",
                )
            )
        return issues
