"""Issue 24: source checks that fail when new product code goes around the guards. Each guard has one
home; anything else must be on an explicit allow-list, with the reason it is not outside input.

- JSON: `json.load(s)` only in common/inputs.py (the bounded parser: depth, size, NUL, lone
  surrogates); YAML loading likewise.
- Numbers: no `Decimal(` / `float(` / `int(` of a non-constant in the modules that read outside
  input (uploads, imports, spec sections, API views): common/numbers.py is the way.
- CSV reads: `csv.reader` / `csv.DictReader` only where a `csv.Error` becomes a 400.
- Uploads: an API or page reads `request.FILES` through common/uploads.py (`upload_read` /
  `upload_check`), never `.read()` of the whole file.
- Templates: no `.format(` / `.format_map(` on a non-literal (common/templates.py's `template_fill`).
"""
from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# json.load(s) of data that does not come from outside, each with its reason.
JSON_ALLOWED = {
    "common/inputs.py": "the bounded parser itself",
    "annotation/hits/pg.py": "PostgreSQL's own json output of a stored row",
    "annotation/labels.py": "PostgreSQL's own json output of a stored row",
    "config/settings/base.py": "the deployment's environment (AUTOLABEL_VLM_ENDPOINTS), not a request",
    "metrics/snapshots/report.py": "a round trip of a report the server built",
    "campaigns/presets.py": "preset files shipped in the repository",
}
# Modules that read outside input: uploads, imports, spec sections, API views and pages, report and
# compare options, commands; besides these, every module whose name says it reads outside input
# (NUMBER_MODULE_NAMES: a new `apis.py`, `views.py`, `options.py`, command, ... is checked unasked).
NUMBER_MODULE_NAMES = re.compile(r"(^|/)(apis[^/]*|views[^/]*|forms|spec_section|spec_backends|options|importer|entry|"
                                 r"inputs|media_views|mturk_batch|uploads)\.py$|/management/commands/[^/]+\.py$")
NUMBER_MODULES = (
    "annotation/demographics.py", "annotation/services/examples.py", "metrics/sections/planning.py", "annotation/people.py",
    "annotation/apis.py", "annotation/archive.py", "annotation/spec_section.py", "autolabel/apis.py",
    "autolabel/importer.py", "campaigns/apis.py", "campaigns/spec/references.py", "campaigns/spec/autolabel.py",
    "common/uploads.py", "common/views.py", "console/views.py", "crowd/apis.py", "crowd/mturk_batch.py",
    "crowd/spec_section.py", "crowd/management/commands/mturk.py", "generation/apis.py", "generation/importer.py",
)
# (module, the call's source) that convert something that is not outside input.
NUMBER_ALLOWED = {
    ("campaigns/spec/references.py", "float(value)"),  # after the isinstance / isfinite / range checks above it
    ("common/uploads.py", "int(limits.get(kind, DEFAULT_UPLOAD_LIMITS[kind]))"),  # a setting
    ("common/uploads.py", "int(parts[1])"),  # the line number the bounded parser put in its error key
    ("common/views.py", "int(limit)"),  # a setting
    ("common/views.py", "int(request.META.get('CONTENT_LENGTH') or 0)"),  # WSGI's header, ValueError -> 0
    ("console/views.py", "int(part)"),  # after part.isdigit() and a length check: see console_ids
    ("generation/importer.py", "int(self.files[name].size)"),  # the upload handler's count of bytes
    ("crowd/management/commands/mturk.py", "int(i)"),  # CLI ids after i.isdigit() (the operator's own input)
    ("console/management/commands/demo.py", "int(LABELLER_FLIP * 100)"),  # module constants
    ("annotation/demographics.py", "int(n)"),  # a count in a release's stored sizes (the server's own)
    ("annotation/people.py", "int(annotator)"),  # an annotator id from the database
    # the spec's values after spec_normalize (annotation.redundancy, design.samples) and computed figures
    ("metrics/sections/planning.py", "int(self.cfg['min'])"),
    ("metrics/sections/planning.py", "int(raw or FIXED_DEFAULT)"),
    ("metrics/sections/planning.py", "int(cfg['min'])"),
    ("metrics/sections/planning.py", "int(cfg['max'])"),
    ("metrics/sections/planning.py", "float(extra['majority'][1])"),
    ("metrics/sections/planning.py", "float(p['assumptions']['label_accuracy'])"),
    ("metrics/sections/planning.py", "float(p['assumptions']['label_tie'])"),
    ("metrics/sections/planning.py", "int(counts['images'] * 2 / n_genders)"),
    ("metrics/sections/planning.py", "int((design.get('samples') or {}).get('single') or 0)"),
}
# (module, the call's source) of `.format` on a template that is not outside input.
TEMPLATE_ALLOWED = {
    ("metrics/core/report_warnings.py", "r.message.format(threshold=r.threshold, **values)"),  # its DOMAIN_RULES
}
CSV_READERS = {"common/uploads.py", "crowd/mturk_batch.py", "campaigns/spec/references.py"}


def _product_files() -> list[str]:
    files = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "*.py"], cwd=ROOT,
                           capture_output=True, text=True, check=True).stdout.split()
    return [f for f in files if not f.startswith(("tests/", "bench/", "scripts/")) and "/migrations/" not in f
            and (ROOT / f).exists()]


def _calls(path: str) -> list[ast.Call]:
    tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
    return [node for node in ast.walk(tree) if isinstance(node, ast.Call)]


def _name(func: ast.expr) -> str:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return f"{_name(func.value)}.{func.attr}"
    return ""


def test_no_json_parse_of_outside_input_outside_the_bounded_parser() -> None:
    offenders = []
    for path in _product_files():
        for call in _calls(path):
            name = _name(call.func)
            if name.split(".")[-1] in ("loads", "load") and name.split(".")[0] in ("json", "_json", "jsonlib", "simplejson",
                                                                                   "orjson", "ujson"):
                if path not in JSON_ALLOWED:
                    offenders.append(f"{path}:{call.lineno}: {ast.unparse(call)[:80]}")
            if name in ("yaml.load", "yaml.safe_load", "yaml.full_load", "yaml.unsafe_load") and path != "common/inputs.py":
                offenders.append(f"{path}:{call.lineno}: {ast.unparse(call)[:80]}")
    assert not offenders, "use common.inputs.json_loads / json_lines / yaml_loads:\n" + "\n".join(offenders)
    for path in JSON_ALLOWED:
        assert (ROOT / path).exists(), f"stale allow-list entry {path}"


def _number_modules() -> list[str]:
    named = [f for f in _product_files() if NUMBER_MODULE_NAMES.search(f) and f != "common/numbers.py"]
    return sorted(set(NUMBER_MODULES) | set(named))


def _a_setting(arg: ast.expr) -> bool:
    """`getattr(settings, NAME, default)`: the deployment's own setting, not outside input."""
    return (isinstance(arg, ast.Call) and _name(arg.func) == "getattr" and bool(arg.args)
            and _name(arg.args[0]) in ("settings", "django_settings"))


def test_the_number_check_covers_every_module_that_reads_outside_input() -> None:
    modules = _number_modules()
    for path in ("metrics/options.py", "metrics/compare/options.py", "metrics/apis.py", "annotation/apis_people.py",
                 "annotation/demographics.py", "metrics/sections/planning.py", "generation/spec_backends.py",
                 "crowd/entry.py", "console/views.py", "crowd/mturk_batch.py"):
        assert path in modules, path
    for path in NUMBER_MODULES:
        assert (ROOT / path).exists(), f"stale module {path}"


def test_no_bare_number_conversion_of_outside_input() -> None:
    offenders = []
    seen_allowed = set()
    for path in _number_modules():
        for call in _calls(path):
            if _name(call.func) not in ("Decimal", "float", "int", "decimal.Decimal"):
                continue
            if all(isinstance(arg, ast.Constant) for arg in call.args):
                continue  # Decimal("0.01"), float("nan"): constants
            if len(call.args) == 1 and _a_setting(call.args[0]):
                continue  # int(getattr(settings, ...)): a setting
            if len(call.args) == 1 and isinstance(call.args[0], ast.Call) and _name(call.args[0].func) == "number":
                continue  # int(number(...)): already parsed and bounded
            source = ast.unparse(call)
            if (path, source) in NUMBER_ALLOWED:
                seen_allowed.add((path, source))
                continue
            offenders.append(f"{path}:{call.lineno}: {source[:100]}")
    assert not offenders, "parse outside numbers with common.numbers.number():\n" + "\n".join(offenders)
    stale = NUMBER_ALLOWED - seen_allowed
    assert not stale, f"stale allow-list entries: {stale}"


def test_csv_is_read_only_where_a_csv_error_is_a_400() -> None:
    offenders = []
    for path in _product_files():
        text = (ROOT / path).read_text(encoding="utf-8")
        readers = [c for c in _calls(path) if _name(c.func) in ("csv.reader", "csv.DictReader")]
        if readers and (path not in CSV_READERS or "except csv.Error" not in text):
            offenders.extend(f"{path}:{c.lineno}" for c in readers)
    assert not offenders, "read CSV through common.uploads (csv.Error -> 400):\n" + "\n".join(offenders)


def test_uploads_are_read_through_the_capped_reader() -> None:
    offenders = []
    for path in _product_files():
        text = (ROOT / path).read_text(encoding="utf-8")
        if not re.search(r"\.FILES\.(get|getlist)\(|\.FILES\[", text):
            continue  # (the middleware only checks file names)
        if "from common.uploads import" not in text:
            offenders.append(f"{path}: reads request.FILES without common.uploads")
        for call in _calls(path):
            if isinstance(call.func, ast.Attribute) and call.func.attr == "read" and not call.args:
                offenders.append(f"{path}:{call.lineno}: {ast.unparse(call)[:80]} (a whole-file read)")
    assert not offenders, "\n".join(offenders)


def test_templates_are_filled_only_by_template_fill() -> None:
    offenders = []
    for path in _product_files():
        if path == "common/templates.py":
            continue
        for call in _calls(path):
            func = call.func
            constant = isinstance(func, ast.Attribute) and (isinstance(func.value, ast.Constant) or (
                isinstance(func.value, ast.Name) and func.value.id.isupper()))  # a literal or a module CONSTANT
            if (path, ast.unparse(call)) in TEMPLATE_ALLOWED:
                continue
            if isinstance(func, ast.Attribute) and func.attr in ("format", "format_map") and not constant:
                offenders.append(f"{path}:{call.lineno}: {ast.unparse(call)[:80]}")
    assert not offenders, "fill outside templates with common.templates.template_fill:\n" + "\n".join(offenders)
