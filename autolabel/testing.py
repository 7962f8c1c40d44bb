"""Tiny CLIP and BLIP-VQA models built from small configs with random weights, saved as a local
model directory that `autolabel.hf.model_load` reads exactly like a downloaded one. For tests and
for the CPU run of bench/autolabel.py; no download."""
from __future__ import annotations

import json
import string
from pathlib import Path


def _byte_chars() -> list[str]:
    # GPT-2 / CLIP byte-to-unicode table: every byte maps to one printable character.
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return [chr(c) for c in cs]


# ViT-L/14 (openai/clip-vit-large-patch14) shapes: random weights with the real model's compute, for
# benchmarks on a host that cannot download the weights.
VIT_L_14 = {"vision": {"hidden_size": 1024, "intermediate_size": 4096, "num_hidden_layers": 24,
                       "num_attention_heads": 16, "image_size": 224, "patch_size": 14},
            "text": {"hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 12, "num_attention_heads": 12},
            "projection_dim": 768}


def tiny_clip_build(path: Path, *, seed: int = 0, image_size: int = 32, projection_dim: int = 16,
                    arch: dict | None = None) -> Path:
    """A character-level CLIP (no BPE merges) with 2-layer 32-wide text and vision towers (or the
    shapes of `arch`, e.g. VIT_L_14)."""
    import torch
    from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel, CLIPProcessor, CLIPTokenizer

    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    chars = _byte_chars()
    vocab: dict[str, int] = {}
    for c in chars:
        vocab[c] = len(vocab)
    for c in chars:
        vocab[c + "</w>"] = len(vocab)
    for t in ("<|startoftext|>", "<|endoftext|>"):
        vocab[t] = len(vocab)
    (path / "vocab.json").write_text(json.dumps(vocab))
    (path / "merges.txt").write_text("#version: 0.2\n")
    tokenizer = CLIPTokenizer(str(path / "vocab.json"), str(path / "merges.txt"))
    bos, eos = vocab["<|startoftext|>"], vocab["<|endoftext|>"]
    text = {"hidden_size": 32, "intermediate_size": 37, "num_hidden_layers": 2, "num_attention_heads": 4}
    vision = {"hidden_size": 32, "intermediate_size": 37, "num_hidden_layers": 2, "num_attention_heads": 4,
              "image_size": image_size, "patch_size": 8}
    if arch:
        text, vision, projection_dim = arch["text"], arch["vision"], arch["projection_dim"]
        image_size = vision["image_size"]
    config = CLIPConfig(
        text_config={**text, "vocab_size": len(vocab), "max_position_embeddings": 77, "bos_token_id": bos,
                     "eos_token_id": eos, "pad_token_id": eos},
        vision_config=vision, projection_dim=projection_dim)
    torch.manual_seed(seed)
    CLIPModel(config).save_pretrained(path)
    processor = CLIPProcessor(image_processor=CLIPImageProcessor(
        size={"shortest_edge": image_size}, crop_size={"height": image_size, "width": image_size}), tokenizer=tokenizer)
    processor.save_pretrained(path)
    return path


def tiny_blip_build(path: Path, *, seed: int = 0) -> Path:
    """A 2-layer BLIP VQA model with a small word-piece vocabulary."""
    import torch
    from transformers import BertTokenizer, BlipConfig, BlipForQuestionAnswering, BlipImageProcessor, BlipProcessor

    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    words = ["what", "gender", "is", "the", "in", "on", "left", "right", "picture", "person", "man", "woman",
             "male", "female", "yes", "no", "do", "you", "see", "a", "?"]
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "[DEC]", *words,
              *string.ascii_lowercase, *(f"##{c}" for c in string.ascii_lowercase)]
    (path / "vocab.txt").write_text("\n".join(dict.fromkeys(tokens)) + "\n")
    tokenizer = BertTokenizer(str(path / "vocab.txt"), bos_token="[DEC]")
    vocab = len(tokenizer)
    config = BlipConfig(
        text_config={"vocab_size": vocab, "hidden_size": 32, "intermediate_size": 37, "num_hidden_layers": 2,
                     "num_attention_heads": 4, "encoder_hidden_size": 32, "max_position_embeddings": 64,
                     "bos_token_id": tokenizer.convert_tokens_to_ids("[DEC]"), "pad_token_id": 0,
                     "sep_token_id": tokenizer.convert_tokens_to_ids("[SEP]")},
        vision_config={"hidden_size": 32, "intermediate_size": 37, "num_hidden_layers": 2, "num_attention_heads": 4,
                       "image_size": 32, "patch_size": 8},
        projection_dim=16)
    torch.manual_seed(seed)
    BlipForQuestionAnswering(config).save_pretrained(path)
    BlipProcessor(image_processor=BlipImageProcessor(size={"height": 32, "width": 32}), tokenizer=tokenizer).save_pretrained(path)
    return path
