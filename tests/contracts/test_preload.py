"""The report's libraries are loaded when a serving process starts (metrics/core/preload.py).

- Source check: every third-party library that `metrics/` imports inside a function is named in
  `REPORT_MODULES` (loaded at start) or `ON_DEMAND_MODULES` (loaded on first use, on purpose): a new
  deferred import of a heavy library cannot silently move its import time into the first report.
- The Celery worker's start signal and the WSGI module load `REPORT_MODULES`, each in a fresh process
  where nothing loaded them before (checked first).
"""
from __future__ import annotations

import ast
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

from metrics.core.preload import ON_DEMAND_MODULES, REPORT_MODULES

ROOT = Path(__file__).resolve().parents[2]
FIRST_PARTY = {"annotation", "autolabel", "campaigns", "common", "config", "console", "crowd", "generation",
               "metrics"}
# Loaded by every Django process before any report: importing them in a function costs nothing.
ALWAYS_LOADED = {"django", "rest_framework", "celery", "numpy"}


def _deferred_imports() -> dict[str, set[str]]:
    """Module name -> files, for each import statement inside a function body under metrics/."""
    found: dict[str, set[str]] = {}
    for path in sorted((ROOT / "metrics").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for fn in ast.walk(tree):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(fn):
                names: list[str] = []
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    # `from scipy import stats` imports the submodule scipy.stats
                    names = [f"{node.module}.{a.name}" if importlib.util.find_spec(node.module) is not None
                             and _is_module(f"{node.module}.{a.name}") else node.module for a in node.names]
                for name in names:
                    found.setdefault(name, set()).add(str(path.relative_to(ROOT)))
    return found


def _is_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _covered(name: str, listed: tuple[str, ...]) -> bool:
    return any(name == m or name.startswith(m + ".") for m in listed)


def test_every_deferred_library_import_in_metrics_is_preloaded_or_named_on_demand() -> None:
    found = _deferred_imports()
    assert "statsmodels.stats.proportion" in found and "scipy.stats" in found  # the walk sees them
    third_party = {name: files for name, files in found.items()
                   if name.split(".")[0] not in FIRST_PARTY | ALWAYS_LOADED | set(sys.stdlib_module_names)}
    missing = {name: sorted(files) for name, files in third_party.items()
               if not _covered(name, REPORT_MODULES + ON_DEMAND_MODULES)}
    assert not missing, f"name these in metrics/core/preload.py (REPORT_MODULES or ON_DEMAND_MODULES): {missing}"
    assert not set(REPORT_MODULES) & set(ON_DEMAND_MODULES)
    for name in REPORT_MODULES + ON_DEMAND_MODULES:  # a listed name that does not exist would fail at start
        assert _is_module(name), name


def _fresh(code: str) -> list[str]:
    env = {**os.environ, "SECRET_KEY": "s" * 60, "ALLOWED_HOSTS": "audit.example"}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    probe = ("import sys; names = " + repr(REPORT_MODULES) + "; before = [n for n in names if n in sys.modules]\n"
             + code + "\nprint(before, [n for n in names if n not in sys.modules])")
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.strip().splitlines()


def test_the_worker_loads_the_report_libraries_when_it_starts() -> None:
    last = _fresh("import django, config.celery\ndjango.setup()\n"
                  "import sys; loaded = [n for n in names if n in sys.modules]\n"
                  "from celery.signals import worker_init\nworker_init.send(sender=None)\nprint(loaded)")
    # Not loaded by the app and its tasks alone (scipy is: some app imports it at module level).
    assert "krippendorff" not in last[-2] and "statsmodels" not in last[-2], last
    assert last[-1] == "[] []", last  # loaded by the start signal


def test_the_web_process_loads_the_report_libraries_when_it_starts() -> None:
    assert _fresh("import config.wsgi")[-1] == "[] []"
