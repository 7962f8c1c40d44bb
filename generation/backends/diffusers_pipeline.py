"""Hugging Face diffusers: the real backend for GPU hosts.

The pipeline is loaded once per worker process (a module-level cache keyed by model, revision,
dtype, device and safety checker) and reused by every task. Each image gets its own seeded
`torch.Generator`, so an image can be regenerated alone with the same pixels whatever batch it
was first generated in.
"""
from __future__ import annotations

import io
import logging
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from common.extras import gpu_extra_message, gpu_extra_missing

from . import GenerationItem, GenerationOutput, OutOfMemory, PermanentError, TransientError

REQUIRES = ("torch", "diffusers")  # the [gpu] extra (requirements/gpu.in)

logger = logging.getLogger(__name__)

_PIPELINES: dict[tuple[Any, ...], Any] = {}
_LOCK = threading.Lock()


def torch_device() -> str:
    import torch

    if torch.cuda.is_available():
        return "cuda"
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        return "mps"
    return "cpu"


def dtype_resolve(name: str, device: str) -> Any:
    """`auto` is fp16 on CUDA (and MPS), fp32 on CPU where half precision is slow or unsupported."""
    import torch

    if name == "auto":
        name = "float16" if device in ("cuda", "mps") else "float32"
    return {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}[name]


def pipeline_get(*, model: str, revision: str | None, dtype: str, safety_checker: bool = True) -> Any:
    """The cached pipeline for this model (loaded on first use in this process)."""
    device = torch_device()
    torch_dtype = dtype_resolve(dtype, device)
    key = (model, revision, str(torch_dtype), device, bool(safety_checker))
    with _LOCK:
        pipe = _PIPELINES.get(key)
        if pipe is not None:
            return pipe
        import diffusers

        kwargs: dict[str, Any] = {"torch_dtype": torch_dtype}
        if revision:
            kwargs["revision"] = revision
        if not safety_checker:
            kwargs["safety_checker"] = None
            kwargs["requires_safety_checker"] = False
        started = time.perf_counter()
        try:
            try:
                pipe = diffusers.AutoPipelineForText2Image.from_pretrained(model, **kwargs)
            except ValueError:
                # A pipeline class AutoPipeline does not map (custom or community pipelines).
                pipe = diffusers.DiffusionPipeline.from_pretrained(model, **kwargs)
        except (OSError, ValueError) as exc:
            raise PermanentError(f"cannot load model {model!r} (revision {revision!r}): {exc}") from exc
        pipe = pipe.to(device)
        pipe.set_progress_bar_config(disable=True)
        # Remember the scheduler the model ships with: a campaign may swap it per call.
        pipe._audit_default_scheduler = pipe.scheduler
        _PIPELINES[key] = pipe
        logger.info("loaded %s (revision %s, %s, %s) in %.1fs", model, revision, torch_dtype, device,
                    time.perf_counter() - started)
        return pipe


def scheduler_set(pipe: Any, name: str | None) -> str:
    """Use the scheduler class `name` (e.g. `DPMSolverMultistepScheduler`) built from the model's
    own scheduler config; None keeps the model's default. Returns the class name in use."""
    import diffusers

    default = pipe._audit_default_scheduler
    if not name or name == type(default).__name__:
        pipe.scheduler = default
        return type(default).__name__
    cls = getattr(diffusers, name, None)
    if cls is None or not isinstance(cls, type) or not hasattr(cls, "from_config") or not name.endswith("Scheduler"):
        raise PermanentError(f"unknown scheduler {name!r} (use a diffusers scheduler class name)")
    pipe.scheduler = cls.from_config(default.config)
    return name


def _png(image: Any) -> bytes:
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


class DiffusersBackend:
    name = "diffusers"

    def batch_size(self, params: Mapping[str, Any]) -> int:
        return int(params.get("batch_size") or 4)

    def generate(self, items: Sequence[GenerationItem], params: Mapping[str, Any]) -> list[GenerationOutput]:
        missing = gpu_extra_missing(REQUIRES)
        if missing:  # a light worker: every image of the batch fails with the reason, nothing retries
            raise PermanentError(gpu_extra_message(what="The diffusers backend", missing=missing))
        import torch

        model = params["model"]
        revision = params.get("revision")
        pipe = pipeline_get(model=model, revision=revision, dtype=params.get("dtype") or "auto",
                            safety_checker=params.get("safety_checker", True))
        scheduler = scheduler_set(pipe, params.get("scheduler"))
        device = pipe.device.type if hasattr(pipe, "device") else torch_device()
        # Generators on the CPU for CPU runs, on the GPU otherwise (diffusers' recommendation);
        # either way one per image, so an image does not depend on its neighbours in the batch.
        generators = [torch.Generator(device=device).manual_seed(int(item.seed)) for item in items]
        call: dict[str, Any] = {
            "prompt": [item.prompt for item in items],
            "num_inference_steps": int(params.get("steps") or 50),
            "guidance_scale": float(params["guidance"] if params.get("guidance") is not None else 7.5),
            "generator": generators,
            "output_type": "pil",
        }
        if params.get("negative_prompt"):
            call["negative_prompt"] = [params["negative_prompt"]] * len(items)
        if params.get("width"):
            call["width"] = int(params["width"])
        if params.get("height"):
            call["height"] = int(params["height"])
        started = time.perf_counter()
        try:
            with torch.inference_mode():
                result = pipe(**call)
        except torch.cuda.OutOfMemoryError as exc:
            torch.cuda.empty_cache()
            raise OutOfMemory(f"CUDA out of memory with a batch of {len(items)}") from exc
        except (TypeError, ValueError) as exc:
            raise PermanentError(f"bad parameters for {model!r}: {exc}") from exc
        except RuntimeError as exc:
            if "out of memory" in str(exc).lower():
                raise OutOfMemory(str(exc)) from exc
            raise TransientError(f"pipeline error: {exc}") from exc
        wall = (time.perf_counter() - started) / max(1, len(items))
        nsfw = getattr(result, "nsfw_content_detected", None) or [False] * len(items)
        recorded = {
            "steps": call["num_inference_steps"], "guidance": call["guidance_scale"], "scheduler": scheduler,
            "negative_prompt": params.get("negative_prompt") or "", "width": result.images[0].width,
            "height": result.images[0].height, "dtype": str(pipe.dtype).removeprefix("torch."), "device": device,
            "batch_size": len(items), "safety_checker": bool(params.get("safety_checker", True)),
            "pipeline": type(pipe).__name__, "diffusers": _version("diffusers"), "torch": _version("torch"),
        }
        outputs = []
        for index, image in enumerate(result.images):
            flagged = bool(nsfw[index]) if index < len(nsfw) else False
            outputs.append(GenerationOutput(
                status="filtered" if flagged else "done", data=None if flagged else _png(image),
                error="blanked by the safety checker" if flagged else "", wall_time_s=round(wall, 4),
                model=model, revision=revision or "", params={**recorded, "seed": items[index].seed},
            ))
        return outputs


def _version(package: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package)
    except PackageNotFoundError:
        return ""


BACKEND = DiffusersBackend()
