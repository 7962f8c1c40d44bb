"""The GEP paper's MTurk exports (../shared/data/gep-mturk/) and the image manifest derived from
their URL naming: `<gender>_v1_<model>_gen/<i>_<j>.<ext>`; i < 16: neutral prompt of context i;
otherwise explicit, attribute (i-16)//16, context (i-16)%16; j = sample index (see the data README)."""
from __future__ import annotations

import csv
import io
import os
import re
from pathlib import Path

from campaigns import presets

# The project's shared/ folder lies beside the checkout (CI clones the repo with shared/ beside it);
# SHARED_DIR overrides, and the workplace's own copy is the last resort (e.g. a clone under /tmp).
_CANDIDATES = [os.environ.get("SHARED_DIR"), Path(__file__).resolve().parents[2].parent / "shared", "/work/shared"]
DATA = next((Path(c) / "data" / "gep-mturk" for c in _CANDIDATES if c and (Path(c) / "data" / "gep-mturk").is_dir()),
            Path(__file__).resolve().parents[2].parent / "shared" / "data" / "gep-mturk")
URL_RE = re.compile(r"/(female|male)_v1_(stable|dalle|cogview2)_gen/(\d+)_(\d+)\.(png|jpg)$")
MODEL_FILES = {"stable": "{attr}.csv", "dalle": "{attr}_2.csv", "cogview2": "{attr}_2.csv"}


def batch_files(model: str) -> list[Path]:
    attrs = [a["name"] for a in presets.gep()["attributes"]]
    return [DATA / MODEL_FILES[model].format(attr=a) for a in attrs]


def prompt_key(url: str) -> tuple[str, int] | None:
    m = URL_RE.search(url)
    if not m:
        return None
    gender = "woman" if m.group(1) == "female" else "man"
    i, j = int(m.group(3)), int(m.group(4))
    g = presets.gep()
    contexts = g["contexts"]
    if i < 16:
        return f"neutral:{gender}|{contexts[i]}", j
    attribute = g["attributes"][(i - 16) // 16]["name"]
    return f"explicit:{gender}|{attribute}|{contexts[(i - 16) % 16]}", j


def manifest_for(model: str, files: list[Path] | None = None) -> bytes:
    """CSV manifest (prompt_key, sample_index, url) of every image of `model` the exports judge (all of
    `model`'s export files, or only `files`)."""
    urls: set[str] = set()
    for path in batch_files(model) if files is None else files:
        for row in csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"), newline="")):
            for k in range(10):
                url = (row.get(f"Input.image_url{k}") or "").strip()
                m = URL_RE.search(url)
                if m and m.group(2) == model:
                    urls.add(url)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["prompt_key", "sample_index", "url"])
    for url in sorted(urls):
        key = prompt_key(url)
        assert key is not None
        writer.writerow([key[0], key[1], url])
    return out.getvalue().encode()
