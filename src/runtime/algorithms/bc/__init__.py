"""BC: MARWIL's algorithm, module, learner and loss with ``BCConfig`` (``beta=0.0``)."""

from runtime.algorithms.bc.bc import BC

__all__ = ["BC"]
