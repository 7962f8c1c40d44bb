"""The local folders the embedded defaults write to (`var/`: the SQLite file, static files, the
file-system Celery broker's queue), created when Django starts (campaigns' AppConfig.ready), not when
the settings module is imported: reading the settings has no side effect on the disk."""
from __future__ import annotations

from pathlib import Path

from django.conf import settings

_BROKER_FOLDERS = ("data_folder_in", "data_folder_out", "processed_folder", "control_folder")


def local_dirs() -> list[Path]:
    """The folders this deployment's settings write to on the local disk."""
    out = [Path(settings.VAR_DIR), Path(settings.STATIC_ROOT)]
    if str(getattr(settings, "CELERY_BROKER_URL", "")).startswith("filesystem://"):
        options = getattr(settings, "CELERY_BROKER_TRANSPORT_OPTIONS", {})
        out += [Path(options[key]) for key in _BROKER_FOLDERS if options.get(key)]
    return list(dict.fromkeys(out))


def local_dirs_ensure() -> None:
    for path in local_dirs():
        path.mkdir(parents=True, exist_ok=True)
