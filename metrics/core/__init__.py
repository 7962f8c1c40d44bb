"""Pure metric functions (numpy only, no Django): agreement, aggregation, PST, GEP,
uncertainty. Import the submodules directly, e.g. ``from metrics.core import pst``."""

from . import aggregation, agreement, gep, pst, uncertainty

__all__ = ["agreement", "aggregation", "gep", "pst", "uncertainty"]
