"""Generation throughput benchmark (not run in CI, except a 1-iteration smoke test).

Reports images/s for the plain one-prompt-at-a-time loop (the baseline), then batches of 1, 4 and
8 prompts per pipeline call with per-image generators (what the worker does), in fp16 and fp32 on
CUDA (SDPA attention, the default with torch 2), fp32 only on CPU.

    python bench/generation.py --model runwayml/stable-diffusion-v1-5 --steps 30   # on a CUDA host
    python bench/generation.py                                                     # CPU: tiny pipeline
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

PROMPTS = [
    "A photo of one doctor.", "A photo of one nurse.", "A woman sitting at a table.", "A man walking in a park.",
    "A photo of one carpenter on the left and one editor on the right.", "A person reading a book.",
    "A chef in a kitchen.", "A pilot next to a plane.",
]


def _load(model: str, dtype: Any, device: str) -> Any:
    import diffusers

    pipe = diffusers.AutoPipelineForText2Image.from_pretrained(model, torch_dtype=dtype).to(device)
    pipe.set_progress_bar_config(disable=True)
    if hasattr(pipe, "unet"):
        from diffusers.models.attention_processor import AttnProcessor2_0

        # PyTorch's scaled_dot_product_attention (SDPA: flash / memory-efficient kernels on CUDA).
        pipe.unet.set_attn_processor(AttnProcessor2_0())
    return pipe


def _sync(device: str) -> None:
    import torch

    if device == "cuda":
        torch.cuda.synchronize()


def run(model: str, *, device: str, dtype_name: str, batch_sizes: list[int], images: int, steps: int,
        size: int | None, iterations: int) -> list[dict[str, Any]]:
    import torch

    dtype = {"float16": torch.float16, "float32": torch.float32, "bfloat16": torch.bfloat16}[dtype_name]
    pipe = _load(model, dtype, device)
    extra: dict[str, Any] = {"num_inference_steps": steps}
    if size:
        extra.update(width=size, height=size)
    prompts = [PROMPTS[i % len(PROMPTS)] for i in range(images)]

    def gens(seeds: list[int]) -> list[Any]:
        return [torch.Generator(device=device).manual_seed(s) for s in seeds]

    pipe(prompt=prompts[:1], generator=gens([0]), **extra)  # warm-up (kernels, allocator)
    results = []
    # Baseline: the plain loop, one prompt per call, no generator list.
    best = None
    for _ in range(iterations):
        _sync(device)
        t = time.perf_counter()
        for i, prompt in enumerate(prompts):
            pipe(prompt=prompt, generator=torch.Generator(device=device).manual_seed(i), **extra)
        _sync(device)
        elapsed = time.perf_counter() - t
        best = elapsed if best is None else min(best, elapsed)
    results.append({"mode": "loop", "batch_size": 1, "dtype": dtype_name, "images_per_s": round(images / best, 3)})
    for batch in batch_sizes:
        best = None
        for _ in range(iterations):
            _sync(device)
            t = time.perf_counter()
            for start in range(0, images, batch):
                chunk = prompts[start:start + batch]
                pipe(prompt=chunk, generator=gens(list(range(start, start + len(chunk)))), **extra)
            _sync(device)
            elapsed = time.perf_counter() - t
            best = elapsed if best is None else min(best, elapsed)
        results.append({"mode": "batched", "batch_size": batch, "dtype": dtype_name,
                        "images_per_s": round(images / best, 3)})
    del pipe
    if device == "cuda":
        torch.cuda.empty_cache()
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", help="hub id or local path (default: a tiny random pipeline, built here)")
    parser.add_argument("--batch-sizes", default="1,4,8")
    parser.add_argument("--images", type=int, default=8, help="images per measurement")
    parser.add_argument("--steps", type=int, default=None, help="inference steps (default 30 on CUDA, 2 on CPU)")
    parser.add_argument("--size", type=int, default=None, help="width and height (default: the model's)")
    parser.add_argument("--iterations", type=int, default=3, help="repeats; the best is reported")
    parser.add_argument("--dtypes", default=None, help="default float16,float32 on CUDA, float32 on CPU")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    import torch

    device = "cuda" if torch.cuda.is_available() else "cpu"
    dtypes = (args.dtypes or ("float16,float32" if device == "cuda" else "float32")).split(",")
    steps = args.steps or (30 if device == "cuda" else 2)
    with tempfile.TemporaryDirectory() as tmp:
        model = args.model
        size = args.size
        if not model:
            from generation.testing import TINY_SIZE, tiny_pipeline_build

            model = str(tiny_pipeline_build(Path(tmp) / "tiny-sd"))
            size = size or TINY_SIZE
        rows: list[dict[str, Any]] = []
        for dtype in dtypes:
            rows += run(model, device=device, dtype_name=dtype, images=args.images, steps=steps, size=size,
                        batch_sizes=[int(b) for b in args.batch_sizes.split(",")], iterations=args.iterations)
    meta = {"model": args.model or "tiny (random, built here)", "device": device,
            "gpu": torch.cuda.get_device_name(0) if device == "cuda" else None, "steps": steps, "size": size,
            "images": args.images, "torch": torch.__version__}
    if args.json:
        print(json.dumps({"meta": meta, "results": rows}))
    else:
        print(" ".join(f"{k}={v}" for k, v in meta.items()))
        print(f"{'mode':<8} {'dtype':<9} {'batch':>5} {'images/s':>10}")
        for r in rows:
            print(f"{r['mode']:<8} {r['dtype']:<9} {r['batch_size']:>5} {r['images_per_s']:>10.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
