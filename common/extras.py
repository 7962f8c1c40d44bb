"""Optional install sets. The light install (requirements/lock.txt) runs the web app, the statistics
and the placeholder / import / OpenAI backends; the `[gpu]` extra (requirements/gpu-lock.txt: torch,
diffusers, transformers) is needed only by the diffusers backend and the CLIP / BLIP-VQA labellers,
which import it lazily. A worker without it refuses their jobs with `gpu_extra_message`."""
from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterable

GPU_INSTALL = ("pip install --no-deps -r requirements/lock.txt -r requirements/gpu-lock.txt "
               "(or pip install '.[gpu]')")


def module_available(name: str) -> bool:
    """Importable here, without importing it (a None in sys.modules marks a blocked module)."""
    if name in sys.modules:
        return sys.modules[name] is not None
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def gpu_extra_missing(modules: Iterable[str]) -> list[str]:
    return [m for m in modules if not module_available(m)]


def gpu_extra_message(*, what: str, missing: list[str]) -> str:
    return (f"{what} needs the [gpu] extra, which this worker does not have (missing: {', '.join(missing)}). "
            f"Run it on a GPU worker, or install the extra here: {GPU_INSTALL}.")
