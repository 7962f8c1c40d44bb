"""Free-text answers (BLIP, a VLM) mapped to a question's choices."""
from __future__ import annotations

import re

FEMININE = ("feminine", "female", "woman", "women", "girl", "lady", "she")
MASCULINE = ("masculine", "male", "man", "men", "boy", "gentleman", "he")
UNSURE = ("cannot identify", "cannot", "can't", "unsure", "unknown", "not sure", "unclear", "neither")


def answer_to_choice(answer: str, choices: list[str]) -> str | None:
    """The choice an answer names, or None. An exact choice (case-insensitive) wins; then person
    questions map gender words (female/woman/girl -> Feminine, male/man/boy -> Masculine, unsure
    words -> Cannot identify) and yes/no questions map yes/no; anything else is unparseable."""
    text = answer.strip().lower().strip(" .!\"'")
    for c in choices:
        if text == c.lower():
            return c
    words = set(re.findall(r"[a-z']+", text))
    lowered = {c.lower(): c for c in choices}
    if "feminine" in lowered or "masculine" in lowered:
        if any(u in text for u in UNSURE if " " in u) or words & {w for w in UNSURE if " " not in w}:
            return lowered.get("cannot identify")
        fem, mas = bool(words & set(FEMININE)), bool(words & set(MASCULINE))
        if fem != mas:
            return lowered.get("feminine" if fem else "masculine")
        return None
    if "yes" in lowered and "no" in lowered:
        yes, no = "yes" in words, "no" in words or "not" in words
        if yes != no:
            return lowered["yes" if yes else "no"]
    # A choice named (as whole words) inside a longer answer, when only one is.
    hits = [c for c in choices if re.search(rf"\b{re.escape(c.lower())}\b", text)]
    return hits[0] if len(hits) == 1 else None
