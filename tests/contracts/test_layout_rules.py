"""Layout rules the codebase keeps (docs/architecture.md): no Python file over 500 lines outside
migrations and benchmarks, and no import circle between the modules of one app. A circle counts
whether its imports sit at module level or inside functions (a deferred import is still a circle),
and importing `pkg.sub.mod` counts as importing `pkg.sub` too (its `__init__` runs first): that is
how `annotation.services.quality -> annotation.hits.leases -> annotation.hits -> ... -> quality`
would break at import time even though no two modules name each other."""
from __future__ import annotations

import ast
import subprocess
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAX_LINES = 500
# Known, named exceptions, each with the reason it is allowed to stay for now.
LONG_FILES: dict[str, str] = {}
APPS = ("annotation", "autolabel", "campaigns", "common", "config", "console", "crowd", "generation", "metrics")
# Known circles, by the one deferred import that closes each (left out of the graph; any other circle
# through these modules still fails). None left: services enqueue their app's tasks by name
# (common.tasks.task_send) instead of importing the tasks module that imports them.
KNOWN_CIRCLE_EDGES: set[tuple[str, str]] = set()


def _tracked_python() -> list[str]:
    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "*.py"], cwd=ROOT,
                         check=True, capture_output=True, text=True).stdout
    return [p for p in out.split() if (ROOT / p).exists()]


def test_no_python_file_is_over_500_lines() -> None:
    too_long = {}
    for path in _tracked_python():
        parts = Path(path).parts
        if "migrations" in parts or parts[0] == "bench":
            continue
        lines = len((ROOT / path).read_text(encoding="utf-8").splitlines())
        if lines > MAX_LINES:
            too_long[path] = lines
    assert set(too_long) <= set(LONG_FILES), {p: n for p, n in too_long.items() if p not in LONG_FILES}
    assert set(LONG_FILES) <= set(_tracked_python()), "a listed exception no longer exists: drop it from LONG_FILES"


def _module_name(path: Path) -> str:
    parts = list(path.with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(tree: ast.Module, module: str, is_package: bool, known: set[str]) -> Iterator[str]:
    """Every module this one imports (module level and inside functions), `if TYPE_CHECKING:` aside."""
    package = module if is_package else module.rpartition(".")[0]

    def walk(node: ast.AST) -> Iterator[ast.AST]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                yield from (n for stmt in child.orelse for n in walk(stmt))
                continue
            yield child
            yield from walk(child)

    for node in walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)] if node.level > 1 else base
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                yield sub if sub in known else target


def _graph(app: str) -> dict[str, set[str]]:
    files = [Path(p) for p in _tracked_python() if Path(p).parts[0] == app and "migrations" not in Path(p).parts]
    known = {_module_name(f) for f in files}
    graph: dict[str, set[str]] = {m: set() for m in known}
    for file in files:
        module = _module_name(file)
        tree = ast.parse((ROOT / file).read_text(encoding="utf-8"))
        own_ancestors = {".".join(module.split(".")[:i]) for i in range(1, module.count(".") + 1)}
        for target in _imports(tree, module, file.name == "__init__.py", known):
            while target and target not in known:  # `import pkg.mod.attr`: the module part
                target = target.rpartition(".")[0]
            if not target or target == module:
                continue
            graph[module].add(target)
            parts = target.split(".")
            for i in range(1, len(parts)):  # its packages' __init__ run first (unless already ours)
                ancestor = ".".join(parts[:i])
                if ancestor in known and ancestor not in own_ancestors and ancestor != module:
                    graph[module].add(ancestor)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return out


def test_no_import_circle_within_an_app() -> None:
    found = {}
    for app in APPS:
        graph = _graph(app)
        for source, target in KNOWN_CIRCLE_EDGES:
            if source in graph:
                assert target in graph[source], f"{source} no longer imports {target}: drop the known circle"
                graph[source].discard(target)
        found[app] = _cycles(graph)
    assert not any(found.values()), {app: c for app, c in found.items() if c}


def test_the_cycle_check_sees_circles_through_a_package_init() -> None:
    """The checker itself: a circle through a package's `__init__` is found, a package importing its
    own submodules is not one."""
    graph = {"a.q": {"a.h.leases", "a.h"}, "a.h": {"a.h.orm"}, "a.h.orm": {"a.q"}, "a.h.leases": set()}
    assert _cycles(graph) == [["a.h", "a.h.orm", "a.q"]]
    assert _cycles({"a.s": {"a.s.x"}, "a.s.x": {"a.s.y"}, "a.s.y": set()}) == []
    tree = ast.parse("from ..hits.leases import x\nfrom .annotators import y\ndef f():\n    from ..labels import z\n")
    known = {"a", "a.hits", "a.hits.leases", "a.services", "a.services.annotators", "a.labels"}
    assert set(_imports(tree, "a.services.quality", False, known)) == {"a.hits.leases", "a.services.annotators",
                                                                      "a.labels"}


# Test helpers live in one home (tests/builders/); a test module never imports another test module.
TEST_HELPER_HOMES = ("tests.builders", "tests.browser", "tests.conftest")
# Named exceptions: test module -> the test module it still takes helpers from, with the reason.
TEST_IMPORT_EXCEPTIONS: dict[str, str] = {
    # The security suite's contract tables, each walked by a second test of the same suite.
    "tests.security.test_csp_browser": "tests.security.test_csp",  # page_urls: every kind of HTML page
    "tests.security.test_data_safety": "tests.security.test_access_matrix",  # endpoints: the access matrix
}


def test_test_modules_take_helpers_only_from_builders() -> None:
    bad = []
    for rel in _tracked_python():
        if not rel.startswith("tests/") or rel.startswith("tests/builders/"):
            continue
        module = rel[:-3].replace("/", ".")
        tree = ast.parse((ROOT / rel).read_text(), rel)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                target = node.module
            elif isinstance(node, ast.ImportFrom) and node.level > 0:
                if node.module in ("conftest", None):
                    continue  # fixtures of the own package's conftest
                target = ".".join(module.split(".")[:-node.level] + [node.module])
            else:
                continue
            if not target.startswith("tests.") or target.startswith(TEST_HELPER_HOMES):
                continue
            if TEST_IMPORT_EXCEPTIONS.get(module) == target:
                continue
            bad.append(f"{rel} imports {target}")
    assert not bad, bad


# metrics/ by tier (docs/architecture.md "metrics/ by tier"): the top level keeps the app's Django
# modules; everything else lives in the folder of its tier.
METRICS_TOP_LEVEL = {"__init__.py", "admin.py", "apis.py", "apps.py", "models.py", "options.py", "tasks.py", "urls.py"}
METRICS_TIERS = {"core", "extract", "sections", "render", "snapshots", "compare", "package", "management",
                 "migrations"}


def test_metrics_top_level_holds_only_the_app_modules_and_its_tiers() -> None:
    paths = [Path(p) for p in _tracked_python() if Path(p).parts[0] == "metrics"]
    top = {p.name for p in paths if len(p.parts) == 2}
    folders = {p.parts[1] for p in paths if len(p.parts) > 2}
    assert top <= METRICS_TOP_LEVEL, sorted(top - METRICS_TOP_LEVEL)
    assert folders <= METRICS_TIERS, sorted(folders - METRICS_TIERS)
    # No module of a tier is shadowed by a top-level one of the same name (as significance.py was).
    core = {p.stem for p in paths if p.parts[1] == "core"}
    assert not ({Path(n).stem for n in top} - {"__init__"}) & core


def test_make_test_holds_the_documented_layer_order_between_apps() -> None:
    """`make test` runs import-linter after ruff; its layers contract (pyproject.toml) is the documented
    app order, and the current code keeps it (a deliberate `campaigns -> metrics` import breaks it)."""
    import tomllib

    recipe = (ROOT / "Makefile").read_text().split("\ntest:", 1)[1].split("\n\n", 1)[0]
    assert "ruff check" in recipe and "lint-imports" in recipe
    assert recipe.index("ruff check") < recipe.index("lint-imports")
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    layers = next(c["layers"] for c in contracts if c["type"] == "layers")
    assert layers == ["console", "metrics | crowd", "autolabel", "annotation", "generation", "campaigns", "common"]
    core = next(c for c in contracts if c["type"] == "forbidden" and c["source_modules"] == ["metrics.core"])
    assert "django" in core["forbidden_modules"]
    tiers = next(c for c in contracts if c["id"] == "metrics-tiers")  # the tiers inside metrics
    assert tiers["layers"] == ["metrics.snapshots : metrics.compare : metrics.package", "metrics.render",
                               "metrics.sections", "metrics.extract", "metrics.core"]
    lint = subprocess.run([str(ROOT / ".venv" / "bin" / "lint-imports")], cwd=ROOT, capture_output=True, text=True)
    assert lint.returncode == 0, lint.stdout[-3000:]
