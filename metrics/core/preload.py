"""The numerical libraries a report imports on first use, imported once when a process starts.

The report's statistics import their libraries inside the functions that use them (importing
`metrics` stays cheap for migrations, the CLI and the tests). A process that serves reports would pay
those imports (~0.7 s and ~60 MB, statsmodels and scipy.stats most of it) in the first report it builds,
a third of a 1M-answer report. The Celery worker (`config.celery`, in the parent before its pool forks,
so the children share the pages) and the web process (`config.wsgi`) import them at start instead:
every report, the first included, runs on a loaded stack; memory is what the process reaches anyway
after its first report.

`tests/contracts/test_preload.py` keeps the lists whole: every library that `metrics/` imports inside a
function is named in one of them.
"""
from __future__ import annotations

import importlib
import time

#: Imported by a default report (GEP or PST, its intervals, agreement, the annotators section).
REPORT_MODULES: tuple[str, ...] = (
    "pandas", "scipy.sparse", "scipy.stats", "statsmodels.stats.proportion", "krippendorff",
)
#: Imported on first use only: what options that are off by default need (machine labellers, hybrid
#: estimates, crowd-kit aggregation), too heavy to load in every process for a report that may never ask.
#: jsonschema: the report's schema check, on in the tests only (settings.REPORT_SCHEMA_CHECK).
ON_DEMAND_MODULES: tuple[str, ...] = ("sklearn.metrics", "ppi_py", "ppi_py.utils", "crowdkit.aggregation", "jsonschema")


def preload(modules: tuple[str, ...] = REPORT_MODULES) -> float:
    """Import `modules` now; the seconds it took (0 when they were loaded already)."""
    start = time.perf_counter()
    for name in modules:
        importlib.import_module(name)
    return time.perf_counter() - start
