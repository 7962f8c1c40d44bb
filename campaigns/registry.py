"""Extension points through which later apps (generation, annotation) add to a campaign without
the campaigns app importing them: progress counters and `campaign` CLI subcommands."""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import argparse

    from .models import Campaign

ProgressProvider = Callable[["Campaign"], dict[str, Any]]
_progress: list[ProgressProvider] = []


def register_progress(provider: ProgressProvider) -> None:
    if provider not in _progress:
        _progress.append(provider)


def progress_providers() -> list[ProgressProvider]:
    return list(_progress)


# CLI: name -> (add_arguments(parser), handle(options, stdout) -> None)
CliAdd = Callable[["argparse.ArgumentParser"], None]
CliHandle = Callable[[dict[str, Any], Any], None]
_cli: dict[str, tuple[str, CliAdd, CliHandle]] = {}


def register_cli(name: str, help_text: str, add: CliAdd, handle: CliHandle) -> None:
    _cli[name] = (help_text, add, handle)


def cli_commands() -> dict[str, tuple[str, CliAdd, CliHandle]]:
    return dict(_cli)


# Archivers: called with a campaign before it is soft-deleted; each returns the storage key of
# what it saved (annotation registers the full campaign archive).
Archiver = Callable[["Campaign"], str]
_archivers: list[Archiver] = []


def register_archiver(archiver: Archiver) -> None:
    if archiver not in _archivers:
        _archivers.append(archiver)


def archivers() -> list[Archiver]:
    return list(_archivers)


# Question gates: annotation calls each with the campaign and the ids of the images it is about to
# create questions for; a gate returns the subset open to human annotation, or None (all of them).
# Questions of the other images are created with required = 0: they exist (machine labels attach
# to them) but no HIT ever offers them. The autolabel app registers the spec's `human_sample`.
QuestionGate = Callable[["Campaign", list[int]], "set[int] | None"]
_gates: list[QuestionGate] = []


def register_question_gate(gate: QuestionGate) -> None:
    if gate not in _gates:
        _gates.append(gate)


def question_gates() -> list[QuestionGate]:
    return list(_gates)
