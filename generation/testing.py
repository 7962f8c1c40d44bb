"""A tiny, randomly initialised Stable Diffusion pipeline for tests and the CPU benchmark.

Nothing can be downloaded from a model hub in CI, so the pipeline is built from small configs (a
few hundred KB in all) and saved with `save_pretrained`; the diffusers backend then loads it from
that local path through exactly the same code path as a real model id.
"""
from __future__ import annotations

import json
from pathlib import Path

TINY_SIZE = 32  # pixels: the smallest size the tiny UNet/VAE pair handles comfortably


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2/CLIP's reversible byte -> printable unicode character map (what CLIPTokenizer expects)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, (chr(c) for c in cs), strict=True))


def tiny_tokenizer_files(directory: Path) -> tuple[Path, Path]:
    """A character-level CLIP BPE vocabulary (no merges): every byte, alone and word-final."""
    directory.mkdir(parents=True, exist_ok=True)
    vocab: dict[str, int] = {}
    for char in _bytes_to_unicode().values():
        vocab.setdefault(char, len(vocab))
        vocab.setdefault(char + "</w>", len(vocab))
    vocab["<|startoftext|>"] = len(vocab)
    vocab["<|endoftext|>"] = len(vocab)
    vocab_file = directory / "vocab.json"
    merges_file = directory / "merges.txt"
    vocab_file.write_text(json.dumps(vocab), encoding="utf-8")
    merges_file.write_text("#version: 0.2\n", encoding="utf-8")
    return vocab_file, merges_file


def tiny_pipeline_build(directory: str | Path, *, seed: int = 0) -> Path:
    """Build and save a tiny StableDiffusionPipeline to `directory`; returns the path.

    Randomly initialised (seeded), so images are noise, but every stage runs: tokenizer, CLIP text
    encoder, UNet denoising loop with the scheduler, VAE decoding.
    """
    import torch
    from diffusers import AutoencoderKL, DDIMScheduler, StableDiffusionPipeline, UNet2DConditionModel
    from transformers import CLIPTextConfig, CLIPTextModel, CLIPTokenizer

    directory = Path(directory)
    torch.manual_seed(seed)
    unet = UNet2DConditionModel(
        block_out_channels=(8, 16), layers_per_block=1, sample_size=TINY_SIZE // 2, in_channels=4, out_channels=4,
        down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"), up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"),
        cross_attention_dim=16, attention_head_dim=4, norm_num_groups=4,
    )
    vae = AutoencoderKL(
        block_out_channels=(8, 16), in_channels=3, out_channels=3, latent_channels=4, norm_num_groups=4,
        down_block_types=("DownEncoderBlock2D", "DownEncoderBlock2D"),
        up_block_types=("UpDecoderBlock2D", "UpDecoderBlock2D"), sample_size=TINY_SIZE,
    )
    vocab_file, _merges_file = tiny_tokenizer_files(directory / "_tokenizer_src")
    tokenizer = CLIPTokenizer.from_pretrained(str(vocab_file.parent), model_max_length=77)
    text_encoder = CLIPTextModel(CLIPTextConfig(
        vocab_size=len(tokenizer), hidden_size=16, intermediate_size=32, num_attention_heads=2, num_hidden_layers=2,
        max_position_embeddings=77, bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    ))
    scheduler = DDIMScheduler(beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear", clip_sample=False,
                              set_alpha_to_one=False)
    pipe = StableDiffusionPipeline(vae=vae, text_encoder=text_encoder, tokenizer=tokenizer, unet=unet,
                                   scheduler=scheduler, safety_checker=None, feature_extractor=None,
                                   requires_safety_checker=False)
    pipe.save_pretrained(directory)  # type: ignore[attr-defined]  # diffusers' mixin, unknown to its types
    return directory
