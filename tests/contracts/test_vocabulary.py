"""One vocabulary (docs/architecture.md "Rules"): the PST/GEP kinds and setting names come from
`campaigns.spec` (KINDS, PST_SETTINGS, GEP_SETTINGS and their named members), statuses from the models'
TextChoices, question families from `annotation.families`. Product code does not compare against, or
list, those words as string literals; the report's and the spec's own keys (dict keys, JSON Schema,
presets) are the public shape and stay words.

Held by an AST walk over product code: a comparison (`==`, `!=`, `in`, `not in`) with a vocabulary
literal, or a tuple/list/set literal made only of setting names, fails outside the one place that
defines them. `metrics/core/` is pure statistics and imports no app (its own contract), so its
parameters name settings as plain words."""
from __future__ import annotations

import ast
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
APPS = ("annotation", "autolabel", "campaigns", "common", "console", "crowd", "generation", "metrics")
# The one place each word is defined, and the pure tier that may not import it.
DEFINING = {"campaigns/spec/base.py", "annotation/families.py"}
PURE = ("metrics/core/",)
SETTINGS = {"single", "paired", "intervention", "neutral", "explicit"}
KINDS = {"pst", "gep"}
STATUSES = {"draft", "generating", "generated", "open", "paused", "closed", "pending", "running", "done", "failed",
            "filtered", "cancelled", "active", "blocked", "submitted", "expired", "returned", "leased", "answered",
            "released", "building", "ready", "imported"}
FAMILIES = {"person", "attribute:"}
# Names whose comparison with a status literal is a status check.
STATUS_NAMES = {"status"}


def _product_files() -> list[str]:
    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "*.py"], cwd=ROOT,
                         check=True, capture_output=True, text=True).stdout
    return [p for p in out.split() if p.split("/")[0] in APPS and "/migrations/" not in p
            and p not in DEFINING and not p.startswith(PURE) and (ROOT / p).exists()]


def _words(node: ast.AST) -> list[str]:
    """The string literals of a constant or a tuple/list/set of constants."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return []


def _name(node: ast.AST) -> str:
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def _offences(tree: ast.AST) -> list[tuple[int, str]]:
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            words = {w for side in sides for w in _words(side)}
            names = {_name(side) for side in sides}
            if words & (SETTINGS | KINDS | FAMILIES):
                out.append((node.lineno, ast.unparse(node)))
            elif words & STATUSES and names & STATUS_NAMES:
                out.append((node.lineno, ast.unparse(node)))
        elif isinstance(node, (ast.Tuple, ast.List, ast.Set)) and len(node.elts) >= 2:
            words = _words(node)
            if len(words) == len(node.elts) and set(words) <= SETTINGS | KINDS:
                out.append((node.lineno, ast.unparse(node)))
        elif isinstance(node, ast.JoinedStr) and node.values:
            first = node.values[0]
            if isinstance(first, ast.Constant) and first.value in FAMILIES:
                out.append((node.lineno, ast.unparse(node)))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr in ("startswith", "endswith") and set(_words(node.args[0]) if node.args else ())
              & FAMILIES):
            out.append((node.lineno, ast.unparse(node)))
    return out


def test_vocabulary_words_are_not_literals_in_product_code() -> None:
    found = {}
    for path in _product_files():
        tree = ast.parse((ROOT / path).read_text(encoding="utf-8"), filename=path)
        for line, text in _offences(tree):
            found[f"{path}:{line}"] = text
    assert not found, found


def test_the_walk_catches_each_form() -> None:
    source = ("a = kind == 'pst'\nb = setting in ('single', 'paired')\nc = x.status != 'done'\n"
              "d = f'attribute:{name}'\ne = family.startswith('attribute:')\nf = ['neutral', 'explicit']\n"
              "ok = {'single': 1}\nok2 = status == STATUS\n")
    lines = sorted({line for line, _ in _offences(ast.parse(source))})
    assert lines == [1, 2, 3, 4, 5, 6]


def test_the_defining_module_holds_the_words() -> None:
    from annotation import families
    from campaigns import spec
    from campaigns.models import Campaign

    assert set(spec.PST_SETTINGS) | set(spec.GEP_SETTINGS) == SETTINGS
    assert (spec.SINGLE, spec.PAIRED, spec.INTERVENTION) == spec.PST_SETTINGS
    assert (spec.NEUTRAL, spec.EXPLICIT) == spec.GEP_SETTINGS
    assert {spec.PST, spec.GEP} == set(spec.KINDS) == set(Campaign.Kind.values) == KINDS
    assert families.attribute_family("dress") == "attribute:dress"
    assert families.family_attribute("attribute:dress") == "dress"
    assert families.family_attribute(families.PERSON) is None
