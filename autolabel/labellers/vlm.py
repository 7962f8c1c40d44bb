"""`vlm`: an OpenAI-compatible vision chat endpoint (`POST {base}/chat/completions`). The endpoint
is named in the spec (`"endpoint": "lab"`) and looked up in the deployment's
AUTOLABEL_VLM_ENDPOINTS ({"lab": {"base": "https://host/v1", "key_env": "LAB_VLM_KEY"}}): a spec
never carries a URL or a key. The request goes through common/outbound.fetch with the base as the
only allowed base. The image is sent inline as a data URL; the prompt template gets {question}
(the question's text) and {choices} ("Feminine, Masculine, Cannot identify"); the first choice of
the reply is parsed (answers.py). No score unless the endpoint returns logprobs (ignored here)."""
from __future__ import annotations

import base64
import os

from django.conf import settings
from django.core.files.storage import default_storage

from annotation.families import ATTRIBUTE, PERSON
from annotation.models import Question
from common.outbound import OutboundError, fetch
from common.templates import template_fill

from .answers import answer_to_choice
from .base import LabelContext, Labeller, LabelResult, register

DEFAULT_PROMPT = ("{question}\nAnswer with exactly one of: {choices}.")


class VlmError(Exception):
    pass


def vlm_ask(*, endpoint: str, model: str, prompt: str, image_bytes: bytes, max_tokens: int = 20,
            temperature: float = 0.0) -> str:
    """One chat completion with one image; returns the reply text. Raises VlmError."""
    conf = settings.AUTOLABEL_VLM_ENDPOINTS.get(endpoint)
    if not conf:
        raise VlmError(f"unknown endpoint {endpoint!r} (AUTOLABEL_VLM_ENDPOINTS)")
    base = conf["base"].rstrip("/")
    headers = {"Content-Type": "application/json"}
    key = os.environ.get(conf.get("key_env", ""), "") if conf.get("key_env") else ""
    if key:
        headers["Authorization"] = f"Bearer {key}"
    data_url = "data:image/png;base64," + base64.b64encode(image_bytes).decode("ascii")
    body = {"model": model, "max_tokens": max_tokens, "temperature": temperature, "messages": [{
        "role": "user", "content": [{"type": "text", "text": prompt},
                                    {"type": "image_url", "image_url": {"url": data_url}}]}]}
    try:
        resp = fetch("POST", f"{base}/chat/completions", headers=headers, json=body, allowed_bases=[base + "/"],
                     timeout=float(settings.AUTOLABEL_VLM_TIMEOUT_S), max_bytes=1024 * 1024)
    except OutboundError as exc:
        raise VlmError(str(exc)) from None
    if resp.status_code != 200:
        raise VlmError(f"the endpoint answered HTTP {resp.status_code}")
    try:
        return str(resp.json()["choices"][0]["message"]["content"] or "")
    except (ValueError, KeyError, IndexError, TypeError):
        raise VlmError("the endpoint's reply is not a chat completion") from None


def vlm_run(ctx: LabelContext, questions: list[Question]) -> list[LabelResult]:
    cfg = ctx.config
    ctx.provenance = {"model": cfg["model"], "revision": "", "params": {
        "endpoint": cfg["endpoint"], "prompt": cfg["prompt"], "max_tokens": cfg["max_tokens"],
        "temperature": cfg["temperature"]}}
    out = []
    for q in questions:
        try:
            with default_storage.open(q.image.file) as handle:
                data = handle.read()
            prompt = template_fill(cfg["prompt"], question=q.text, choices=", ".join(q.choices))
            reply = vlm_ask(endpoint=cfg["endpoint"], model=cfg["model"], prompt=prompt, image_bytes=data,
                            max_tokens=int(cfg["max_tokens"]), temperature=float(cfg["temperature"]))
        except (VlmError, OSError) as exc:
            out.append(LabelResult(q.pk, error=str(exc)[:500]))
            continue
        choice = answer_to_choice(reply, list(q.choices))
        if choice is None:
            out.append(LabelResult(q.pk, error=f"unparseable answer: {reply[:200]!r}", extra={"answer": reply[:200]}))
        else:
            out.append(LabelResult(q.pk, choice, None, extra={"answer": reply[:200]}))
    return out


register(Labeller("vlm", (PERSON, ATTRIBUTE), vlm_run, "OpenAI-compatible vision chat endpoint"))
