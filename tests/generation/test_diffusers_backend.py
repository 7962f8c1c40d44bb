"""The diffusers backend in-process (the worker test covers the full path): scheduler by class
name, safety-checker output stored as filtered, bad parameters permanent; and the bench smoke."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from generation.backends import GenerationItem, PermanentError
from generation.backends import diffusers_pipeline as dp
from generation.testing import tiny_pipeline_build

ROOT = Path(__file__).resolve().parent.parent.parent


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tiny_pipeline_build(tmp_path_factory.mktemp("tiny") / "sd"))


def _params(model: str, **extra: Any) -> dict[str, Any]:
    return {"name": "diffusers", "model": model, "revision": None, "steps": 2, "guidance": 5.0, "scheduler": None,
            "negative_prompt": "blurry", "width": 32, "height": 32, "batch_size": 2, "dtype": "auto",
            "safety_checker": True, **extra}


def test_scheduler_by_name_and_pipeline_cached(tiny: str) -> None:
    backend = dp.DiffusersBackend()
    items = [GenerationItem(1, "a doctor", 1), GenerationItem(2, "a nurse", 2)]
    default = backend.generate(items, _params(tiny))
    euler = backend.generate(items, _params(tiny, scheduler="EulerDiscreteScheduler"))
    assert euler[0].params["scheduler"] == "EulerDiscreteScheduler" and default[0].params["scheduler"] == "DDIMScheduler"
    assert euler[0].data != default[0].data and euler[0].params["negative_prompt"] == "blurry"
    again = backend.generate(items, _params(tiny))  # back to the model's own scheduler
    assert again[0].data == default[0].data
    assert len([k for k in dp._PIPELINES if k[0] == tiny]) == 1
    with pytest.raises(PermanentError, match="unknown scheduler"):
        backend.generate(items, _params(tiny, scheduler="NoSuchScheduler"))
    with pytest.raises(PermanentError, match="cannot load model"):
        backend.generate(items, _params(str(Path(tiny).parent / "missing")))


def test_safety_checker_hits_are_filtered(tiny: str, monkeypatch: pytest.MonkeyPatch) -> None:
    pipe = dp.pipeline_get(model=tiny, revision=None, dtype="auto")
    real_call = type(pipe).__call__

    def flagged(self: Any, **kwargs: Any) -> Any:
        out = real_call(self, **kwargs)
        out.nsfw_content_detected = [True, False]
        return out

    monkeypatch.setattr(type(pipe), "__call__", flagged)
    blanked, kept = dp.DiffusersBackend().generate([GenerationItem(1, "a", 1), GenerationItem(2, "b", 2)], _params(tiny))
    assert blanked.status == "filtered" and blanked.data is None and "safety checker" in blanked.error
    assert kept.status == "done" and kept.data


def test_bench_smoke_on_the_tiny_pipeline() -> None:
    result = subprocess.run([sys.executable, "bench/generation.py", "--iterations", "1", "--images", "2",
                             "--batch-sizes", "1,2", "--json"], cwd=ROOT, capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stderr[-2000:]
    import json

    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert [(r["mode"], r["batch_size"]) for r in report["results"]] == [("loop", 1), ("batched", 1), ("batched", 2)]
    assert all(r["images_per_s"] > 0 for r in report["results"])


def test_a_worker_without_the_gpu_extra_refuses_with_a_clear_message(monkeypatch: pytest.MonkeyPatch) -> None:
    """The light install (requirements/lock.txt) has no torch: the job fails permanently, saying why."""
    monkeypatch.setitem(sys.modules, "torch", None)  # what `import torch` sees on a light worker
    with pytest.raises(PermanentError, match=r"diffusers backend needs the \[gpu\] extra.*missing: torch.*gpu-lock"):
        dp.DiffusersBackend().generate([GenerationItem(1, "a doctor", 1)], _params("any/model"))
