"""CLIP image-embedding throughput for the autolabel labellers (not run in CI, except a smoke test).

Images/s of `autolabel.hf.clip_image_embeddings` (what every CLIP labeller's cache miss runs: the
processor's resize / crop / normalise plus the vision tower) at batch sizes 1 / 8 / 32 / 64, in fp32,
and in fp16 too on CUDA. Without --model it builds the tiny random CLIP of autolabel/testing.py (CPU
figures measure the plumbing, not a real model).

    python bench/autolabel.py --model openai/clip-vit-large-patch14 --images 512   # on a CUDA host
    python bench/autolabel.py --arch vit-l-14 --images 512   # CUDA host without the weights: random ViT-L/14
    python bench/autolabel.py                                # CPU: tiny model
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


def _images(n: int, size: int) -> list[Any]:
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(0)
    return [Image.fromarray(rng.integers(0, 255, size=(size, size, 3), dtype=np.uint8)) for _ in range(n)]


def run(model: str, *, device: str, fp16: bool, batch_sizes: list[int], images: int, size: int) -> list[dict[str, Any]]:
    import torch
    from django.conf import settings

    if not settings.configured:
        settings.configure()
    settings.AUTOLABEL_DEVICE, settings.AUTOLABEL_FP16 = device, fp16
    from autolabel import hf

    hf._load.cache_clear()
    loaded = hf.model_load("clip", model)
    pics = _images(images, size)
    out = []
    for batch in batch_sizes:
        hf.clip_image_embeddings(loaded, pics[:batch])   # warm-up (kernels, allocator)
        if device == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        for i in range(0, len(pics), batch):
            vectors = hf.clip_image_embeddings(loaded, pics[i:i + batch])
        if device == "cuda":
            torch.cuda.synchronize()
        seconds = time.perf_counter() - start
        out.append({"model": model, "device": device, "dtype": "float16" if fp16 and device == "cuda" else "float32",
                    "batch": batch, "images": len(pics), "seconds": round(seconds, 3),
                    "images_per_s": round(len(pics) / seconds, 1), "dim": int(vectors.shape[1])})
        print(f"{out[-1]['dtype']:8s} batch {batch:3d}: {out[-1]['images_per_s']:8.1f} images/s "
              f"({len(pics)} images in {seconds:.2f} s)", flush=True)
    return out


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    import torch

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", help="hub id or local path of a CLIP model (default: a tiny random one)")
    parser.add_argument("--arch", choices=["tiny", "vit-l-14"], default="tiny",
                        help="without --model: the random model's shapes (vit-l-14: the real model's compute)")
    parser.add_argument("--images", type=int, default=256)
    parser.add_argument("--size", type=int, default=512, help="side of the random test images (pixels)")
    parser.add_argument("--batch-sizes", default="1,8,32,64")
    args = parser.parse_args(argv)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = args.model
    if model is None:
        from autolabel.testing import VIT_L_14, tiny_clip_build

        model = str(tiny_clip_build(Path(tempfile.mkdtemp()) / f"random-clip-{args.arch}",
                                    arch=VIT_L_14 if args.arch == "vit-l-14" else None))
    sizes = [int(b) for b in args.batch_sizes.split(",")]
    rows = run(model, device=device, fp16=False, batch_sizes=sizes, images=args.images, size=args.size)
    if device == "cuda":
        rows += run(model, device=device, fp16=True, batch_sizes=sizes, images=args.images, size=args.size)
        rows[-1]["gpu"] = torch.cuda.get_device_name(0)
    print(json.dumps(rows))
    return rows


if __name__ == "__main__":
    main()
