"""One way to enqueue a Celery task (issue 21): `common.tasks.task_send(name, ...)`. No product module
calls `.delay`, `.apply_async` or `send_task` itself, and every task name sent (a string literal or a
module-level string constant) and every beat schedule entry is a registered Celery task, so a renamed
task fails here instead of in a worker's log."""
from __future__ import annotations

import ast
import subprocess
from pathlib import Path

from celery import current_app
from django.conf import settings

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ("annotation", "autolabel", "campaigns", "common", "config", "console", "crowd", "generation", "metrics")
THE_ONE_WAY = "common/tasks.py"


def _product_modules() -> dict[str, ast.Module]:
    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", *PRODUCT],
                         cwd=ROOT, check=True, capture_output=True, text=True).stdout
    return {p: ast.parse((ROOT / p).read_text(encoding="utf-8")) for p in out.split()
            if p.endswith(".py") and (ROOT / p).exists() and "migrations" not in p}


def _constants(tree: ast.Module) -> dict[str, str]:
    return {t.id: node.value.value for node in tree.body if isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
            for t in node.targets if isinstance(t, ast.Name)}


def _sent_names(path: str, tree: ast.Module) -> tuple[list[str], list[str]]:
    """(task names passed to task_send, calls that enqueue some other way or with a name not known here)."""
    names, problems = [], []
    constants = _constants(tree)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in ("delay", "apply_async", "send_task") \
                and path != THE_ONE_WAY:
            problems.append(f"{path}:{node.lineno}: .{func.attr}() (use common.tasks.task_send)")
        if isinstance(func, ast.Name) and func.id == "task_send" and path != THE_ONE_WAY:
            first = node.args[0] if node.args else None
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                names.append(first.value)
            elif isinstance(first, ast.Name) and first.id in constants:
                names.append(constants[first.id])
            else:
                problems.append(f"{path}:{node.lineno}: task_send with a name computed at run time")
    return names, problems


def _registered() -> set[str]:
    current_app.loader.import_default_modules()  # autodiscovery, as common.tasks.task_get does
    return set(current_app.tasks)


def test_tasks_are_enqueued_one_way_by_registered_names() -> None:
    sent, problems = [], []
    for path, tree in _product_modules().items():
        names, found = _sent_names(path, tree)
        sent += names
        problems += found
    assert not problems, "\n".join(problems)
    registered = _registered()
    unknown = sorted(set(sent) - registered)
    assert not unknown, f"task_send names no registered task: {unknown}"
    # Every app that queues work is seen (generation, autolabel, campaigns, metrics).
    assert {n.split(".")[0] for n in sent} >= {"generation", "autolabel", "campaigns", "metrics"}, sent


def test_beat_schedules_registered_tasks() -> None:
    scheduled = {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert scheduled and scheduled <= _registered(), sorted(scheduled - _registered())


def test_the_check_sees_a_direct_call_and_an_unknown_name() -> None:
    tree = ast.parse('NAME = "metrics.report_build"\n'
                     'def f(t):\n    task_send(NAME, args=[1])\n    task_send("metrics.nope")\n'
                     '    t.delay(1)\n    task_send(t.name)\n')
    names, problems = _sent_names("metrics/x.py", tree)
    assert names == ["metrics.report_build", "metrics.nope"]
    assert [p.split(": ", 1)[1] for p in problems] == [".delay() (use common.tasks.task_send)",
                                                       "task_send with a name computed at run time"]
    assert "metrics.nope" not in _registered() and "metrics.report_build" in _registered()
