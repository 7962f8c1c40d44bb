"""What leaves the product as files: the replication package (`dataset`, with `build`: the tables and
manifest beside the answers; its spec section `dataset_spec`; built by a worker: `services`) and a
report's exports (`exports`: CSV zip and HTML, the database step before `metrics.render`); `read`
recomputes the report from a package without a database.

`report_from_package(path_or_file, **options)` is the notebook entry point: it sets Django up with the
default settings when nothing did (no database connection is made)."""
from __future__ import annotations

import os
from typing import IO, Any


def _django_ready() -> None:
    from django.apps import apps

    if apps.ready:
        return
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.base")
    import django

    django.setup()


def report_from_package(path_or_file: str | os.PathLike[str] | IO[bytes] | bytes, /,
                        **options: Any) -> dict[str, Any]:
    """The campaign report recomputed from a replication package (see `metrics.package.read`)."""
    _django_ready()
    from .read import report_from_package as build

    return build(path_or_file, **options)


__all__ = ["report_from_package"]
