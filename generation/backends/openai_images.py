"""OpenAI's Images API (`POST {api_base}/v1/images/generations`), spoken directly with httpx.

One request per image (`n: 1`, which DALL-E 3 requires). A 429 honours `Retry-After` and a 5xx or
timeout is retried a few times here; when that is not enough the error goes up as a
`TransientError` and the Celery task retries later with backoff. A refusal (400 with
`error.code == "content_policy_violation"`) fails that image only, with the API's message.
"""
from __future__ import annotations

import base64
import os
import time
from collections.abc import Mapping, Sequence
from typing import Any

import httpx

from . import GenerationItem, GenerationOutput, PermanentError, TransientError

DEFAULT_API_BASE = "https://api.openai.com"
IN_PROCESS_ATTEMPTS = 3     # per image, before handing the retry to Celery
MAX_IN_PROCESS_WAIT_S = 30  # a longer Retry-After is left to the task's countdown
TIMEOUT_S = 120


def _retry_after(response: httpx.Response) -> float | None:
    raw = response.headers.get("retry-after")
    try:
        return max(0.0, float(raw)) if raw is not None else None
    except ValueError:
        return None


def _error_of(response: httpx.Response) -> tuple[str, str]:
    try:
        error = response.json().get("error") or {}
    except ValueError:
        return "", response.text[:500]
    return str(error.get("code") or ""), str(error.get("message") or response.text[:500])


class OpenAIBackend:
    name = "openai"

    def batch_size(self, params: Mapping[str, Any]) -> int:
        return 1

    def generate(self, items: Sequence[GenerationItem], params: Mapping[str, Any]) -> list[GenerationOutput]:
        key = os.environ.get("OPENAI_API_KEY", "")
        if not key:
            raise PermanentError("OPENAI_API_KEY is not set on the worker")
        base = (params.get("api_base") or os.environ.get("OPENAI_API_BASE") or DEFAULT_API_BASE).rstrip("/")
        url = f"{base}/v1/images/generations"
        with httpx.Client(timeout=TIMEOUT_S, headers={"Authorization": f"Bearer {key}"}) as client:
            return [self._one(client, url, item, params) for item in items]

    def _one(self, client: httpx.Client, url: str, item: GenerationItem, params: Mapping[str, Any]) -> GenerationOutput:
        body: dict[str, Any] = {"model": params.get("model") or "dall-e-3", "prompt": item.prompt, "n": 1,
                                "size": params.get("size") or "1024x1024", "quality": params.get("quality") or "standard",
                                "response_format": "b64_json"}
        if params.get("style"):
            body["style"] = params["style"]
        recorded = {k: v for k, v in body.items() if k not in ("prompt", "n", "response_format")}
        last: TransientError | None = None
        for attempt in range(IN_PROCESS_ATTEMPTS):
            started = time.perf_counter()
            try:
                response = client.post(url, json=body)
            except httpx.TimeoutException as exc:
                last = TransientError(f"timeout: {exc}")
            except httpx.TransportError as exc:
                last = TransientError(f"connection error: {exc}")
            else:
                wall = time.perf_counter() - started
                if response.status_code == 200:
                    data = (response.json().get("data") or [{}])[0]
                    if not data.get("b64_json"):
                        raise TransientError("response without image data")
                    return GenerationOutput(status="done", data=base64.b64decode(data["b64_json"]),
                                            wall_time_s=round(wall, 4), revised_prompt=data.get("revised_prompt") or "",
                                            model=body["model"], params=recorded)
                code, message = _error_of(response)
                if response.status_code == 429 or response.status_code >= 500:
                    last = TransientError(f"HTTP {response.status_code}: {message}", retry_after=_retry_after(response))
                elif code == "content_policy_violation" or response.status_code == 400 and "safety" in message.lower():
                    return GenerationOutput(status="failed", error=f"refused ({code or 'content policy'}): {message}",
                                            wall_time_s=round(wall, 4), model=body["model"], params=recorded)
                elif response.status_code in (401, 403):
                    raise PermanentError(f"HTTP {response.status_code}: {message} (check OPENAI_API_KEY)")
                else:
                    # Other 4xx: bad parameters for this model; retrying the same request cannot help.
                    return GenerationOutput(status="failed", error=f"HTTP {response.status_code} {code}: {message}",
                                            wall_time_s=round(wall, 4), model=body["model"], params=recorded)
            wait = last.retry_after if last.retry_after is not None else 2.0 ** attempt
            if attempt + 1 >= IN_PROCESS_ATTEMPTS or wait > MAX_IN_PROCESS_WAIT_S:
                break
            time.sleep(wait)
        assert last is not None
        raise last


BACKEND = OpenAIBackend()
