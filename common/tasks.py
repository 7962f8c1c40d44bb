"""Enqueue a Celery task by its registered name, so a service never imports its app's `tasks` module
(which imports the service it runs: the circle the layout rule forbids).

The task object is looked up in the app's registry (every `tasks` module is imported by autodiscovery
on first use), so eager mode, routing and the task's own options apply exactly as with
`task.apply_async` on the imported function; a broker failure raises the same errors.
"""
from __future__ import annotations

from typing import Any


def task_get(name: str) -> Any:
    """The registered task `name` (e.g. "generation.images_generate")."""
    from celery import current_app

    tasks = current_app.tasks
    if name not in tasks:
        current_app.loader.import_default_modules()  # autodiscovery: every installed app's tasks module
    try:
        return tasks[name]
    except KeyError:
        raise LookupError(f"No Celery task named {name!r} is registered.") from None


def task_send(name: str, *, args: list[Any] | tuple[Any, ...] = (), queue: str | None = None,
              **options: Any) -> Any:
    """`apply_async` of the task registered as `name`."""
    if queue is not None:
        options["queue"] = queue
    return task_get(name).apply_async(args=list(args), **options)
