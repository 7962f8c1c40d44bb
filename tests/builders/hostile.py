"""Hostile files for the input-guard tests and the fuzzer (issue 24): deep JSON, JSON Lines with a
deep line, CSV cells over the csv module's 128 KB field limit, zip bombs, numeric overflows, PNGs
carrying text chunks and trailing bytes."""
from __future__ import annotations

import io
import json
import struct
import zipfile
import zlib

from PIL import Image


def deep_json(levels: int = 5000) -> bytes:
    return b"[" * levels + b"]" * levels


def deep_jsonl(good: dict | None = None, levels: int = 5000) -> bytes:
    first = json.dumps(good).encode() + b"\n" if good is not None else b""
    return first + deep_json(levels) + b"\n"


def huge_cell_csv(header: list[str], size: int = 200 * 1024) -> bytes:
    """A CSV whose second row's first cell is `size` bytes (a quoted cell, so one field)."""
    cells = ['"' + "x" * size + '"'] + ["1"] * (len(header) - 1)
    return (",".join(header) + "\n" + ",".join(cells) + "\n").encode()


def zip_bomb(name: str = "prompts.jsonl", size: int = 64 * 1024 * 1024, *, manifest: bytes | None = None) -> bytes:
    """A small zip whose member `name` expands to `size` bytes of one repeated byte (~1000:1)."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        if manifest is not None:
            zf.writestr("manifest.json", manifest)
        with zf.open(name, "w", force_zip64=True) as member:
            block = b" " * (1024 * 1024)
            for _ in range(size // len(block)):
                member.write(block)
    return out.getvalue()


def zip_of(members: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return out.getvalue()


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


SECRET_TEXT = b"prompt: a secret prompt; model: secret-model"
TRAILER = b"<html><script>alert(1)</script></html>PK\x03\x04"


def tainted_png(size: int = 16, colour: tuple[int, int, int] = (200, 30, 30), *, text: bool = False) -> bytes:
    """A valid PNG with an eXIf chunk naming a secret (and, with `text`, a tEXt chunk) and HTML/ZIP
    bytes after IEND: what a PNG upload kept before issue 24 (only text chunks were looked at)."""
    out = io.BytesIO()
    Image.new("RGB", (size, size), colour).save(out, format="PNG")
    png = out.getvalue()
    after_ihdr = 8 + 25  # signature, then IHDR (length, type, 13 bytes, CRC)
    extra = _chunk(b"eXIf", b"MM\x00*\x00\x00\x00\x08" + SECRET_TEXT)
    if text:
        extra += _chunk(b"tEXt", b"parameters\x00" + SECRET_TEXT)
    return png[:after_ihdr] + extra + png[after_ihdr:] + TRAILER


OVERFLOWS = ("1e200000000", "1e999999999999", "inf", "-inf", "nan", "$1e999999", "9" * 5000)
