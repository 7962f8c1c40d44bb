"""System checks for the input gate: every API view must parse request bodies with the site's parser
classes (common.parsers), which apply common.inputs' rules. A view that names DRF's stock parsers
(as DRF's own token view does) would let 5,000-level JSON or NUL bytes through to a 500."""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.core.checks import Error, register


def api_views() -> Iterator[tuple[str, type]]:
    """(route, view class) of every DRF view in the URLconf."""
    from django.urls import URLPattern, URLResolver, get_resolver
    from rest_framework.views import APIView

    def walk(patterns: Any, prefix: str) -> Iterator[tuple[str, type]]:
        for p in patterns:
            if isinstance(p, URLResolver):
                yield from walk(p.url_patterns, prefix + str(p.pattern))
            elif isinstance(p, URLPattern):
                view = getattr(p.callback, "view_class", None) or getattr(p.callback, "cls", None)
                if view is not None and issubclass(view, APIView):
                    yield prefix + str(p.pattern), view

    yield from walk(get_resolver().url_patterns, "")


def unsafe_parsers() -> list[tuple[str, str]]:
    """(route, parser) for every parser class of an API view that is not one of common.parsers'."""
    from . import parsers

    safe = (parsers.JSONParser, parsers.YAMLParser, parsers.FormParser, parsers.MultiPartParser)
    out = []
    for route, view in api_views():
        for parser in getattr(view, "parser_classes", ()):
            if not (isinstance(parser, type) and issubclass(parser, safe)):
                out.append((route, f"{getattr(parser, '__module__', '?')}.{getattr(parser, '__name__', parser)}"))
    return out


@register()
def check_parsers(app_configs: Any = None, **kwargs: Any) -> list[Error]:
    return [Error(f"API view at {route!r} parses bodies with {parser}, which skips the input rules",
                  hint="Use common.parsers (JSONParser, FormParser, MultiPartParser; SPEC_PARSERS for specs).",
                  id="common.E001") for route, parser in unsafe_parsers()]
