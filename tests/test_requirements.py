"""The install sets agree: pyproject.toml's dependencies and extras list exactly the pins of
requirements/base.in, gpu.in and test.in; each lock file satisfies its pins; the light lock
(`make run`) holds no GPU package; and the web app and the worker's modules import without them."""
from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
REQ = ROOT / "requirements"
GPU_ONLY = {"torch", "diffusers", "transformers", "open-clip-torch", "tokenizers", "safetensors", "huggingface-hub"}


def _key(req: Requirement) -> tuple[str, frozenset[str], str]:
    return canonicalize_name(req.name), frozenset(req.extras), str(req.specifier)


def _in(name: str) -> set[tuple[str, frozenset[str], str]]:
    out = set()
    for line in (REQ / f"{name}.in").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line and not line.startswith("-"):
            out.add(_key(Requirement(line)))
    return out


def _lock(name: str) -> dict[str, str]:
    pins = {}
    for line in (REQ / name).read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            package, version = line.split("==")
            pins[canonicalize_name(package)] = version
    return pins


def test_pyproject_dependencies_agree_with_requirements_in() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = {_key(Requirement(r)) for r in project["dependencies"]}
    assert declared == _in("base"), ("pyproject.toml dependencies differ from requirements/base.in",
                                     declared ^ _in("base"))
    extras = project["optional-dependencies"]
    for extra in ("gpu", "test"):
        got = {_key(Requirement(r)) for r in extras[extra]}
        assert got == _in(extra), (f"pyproject [{extra}] differs from requirements/{extra}.in", got ^ _in(extra))
    assert {"gpu", "test"} == set(extras)


def test_each_lock_satisfies_its_pins_and_no_package_is_locked_twice() -> None:
    locks = {name: _lock(name) for name in ("lock.txt", "gpu-lock.txt", "test-lock.txt")}
    seen: dict[str, str] = {}
    for name, pins in locks.items():
        for package in pins:
            assert package not in seen, f"{package} is in both {seen[package]} and {name}"
            seen[package] = name
    layers = {"base": ["lock.txt"], "gpu": ["lock.txt", "gpu-lock.txt"],
              "test": ["lock.txt", "gpu-lock.txt", "test-lock.txt"]}
    for in_file, lock_names in layers.items():
        available = {k: v for n in lock_names for k, v in locks[n].items()}
        for package, _extras, spec in _in(in_file):
            assert package in available, f"{package} ({in_file}.in) is in none of {lock_names}"
            assert Requirement(f"{package}{spec}").specifier.contains(available[package], prereleases=True), \
                f"{package}: {in_file}.in wants {spec}, the lock has {available[package]}"


def test_the_light_lock_has_no_gpu_package() -> None:
    light = _lock("lock.txt")
    assert not GPU_ONLY & set(light), GPU_ONLY & set(light)
    assert {"torch", "diffusers", "transformers"} <= set(_lock("gpu-lock.txt"))
    assert _lock("gpu-lock.txt")["torch"].startswith("2.13.0"), "torch stays pinned (an unpinned one pulls CUDA)"


BLOCK_GPU = """
import importlib.abc, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("torch", "diffusers", "transformers", "open_clip"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, Block())
import django
django.setup()
import importlib
from django.apps import apps
from django.urls import get_resolver
get_resolver().url_patterns  # every view module
for app in apps.get_app_configs():
    for mod in ("models", "apis", "views", "services", "selectors", "tasks", "admin"):
        try:
            importlib.import_module(f"{app.name}.{mod}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{app.name}.{mod}":
                raise
import config.celery
import generation.backends.diffusers_pipeline, autolabel.hf, autolabel.labellers.clip  # lazy: importable
assert not any(m.split(".")[0] in ("torch", "diffusers", "transformers") for m in sys.modules)
print("ok")
"""


def test_the_web_app_and_worker_modules_import_without_the_gpu_extra() -> None:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings.test"}
    out = subprocess.run([sys.executable, "-c", BLOCK_GPU], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-3000:]
