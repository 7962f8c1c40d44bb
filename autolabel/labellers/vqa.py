"""`vqa`: BLIP visual question answering (PST appendix E). Person questions use the PST paper's
Table 11 prompts: "What gender is the {id} in the picture?" (single) and "What gender is the {id}
on the left/right in the picture?" (paired); GEP attribute questions ask the question's own yes/no
text. The generated answer is mapped to the question's choices (answers.py); an unmappable answer
is a failure with the answer in its error. No score (BLIP's answer is a string)."""
from __future__ import annotations

from annotation.families import ATTRIBUTE, PERSON
from annotation.models import Question

from ..embeddings import image_open
from ..hf import blip_answers, model_load
from .answers import answer_to_choice
from .base import GPU_EXTRA, LabelContext, Labeller, LabelResult, register


def vqa_prompt(question: Question) -> str:
    if question.family == PERSON:
        identity = question.metadata.get("identity", "person")
        if question.slot in ("left", "right"):
            return f"What gender is the {identity} on the {question.slot} in the picture?"
        return f"What gender is the {identity} in the picture?"
    return question.text


def vqa_run(ctx: LabelContext, questions: list[Question]) -> list[LabelResult]:
    cfg = ctx.config
    loaded = model_load("blip_vqa", cfg["model"], cfg.get("revision"))
    ctx.provenance = {"model": loaded.name, "revision": loaded.revision,
                      "params": {"max_new_tokens": cfg["max_new_tokens"], "prompts": "PST Table 11"}}
    out: list[LabelResult] = []
    batch: list[tuple[Question, object]] = []
    for q in questions:
        try:
            batch.append((q, image_open(q.image)))
        except Exception as exc:
            out.append(LabelResult(q.pk, error=f"{type(exc).__name__}: {exc}"[:500]))
    size = max(1, int(cfg.get("batch_size", 16)))
    for i in range(0, len(batch), size):
        part = batch[i:i + size]
        answers = blip_answers(loaded, [img for _, img in part], [vqa_prompt(q) for q, _ in part],
                               max_new_tokens=int(cfg["max_new_tokens"]))
        for (q, _), answer in zip(part, answers, strict=True):
            choice = answer_to_choice(answer, list(q.choices))
            if choice is None:
                out.append(LabelResult(q.pk, error=f"unparseable answer: {answer[:200]!r}", extra={"answer": answer}))
            else:
                out.append(LabelResult(q.pk, choice, None, extra={"answer": answer}))
    return out


register(Labeller("vqa", (PERSON, ATTRIBUTE), vqa_run, "BLIP VQA (PST Table 11 prompts)", requires=GPU_EXTRA))
