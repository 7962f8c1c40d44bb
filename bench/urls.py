"""Benchmark-only URLs: mounted at /bench/ by config/urls.py only when BENCH_TRIVIAL_ENDPOINT=1
(bench/annotation_load.py sets it for the web server it starts). Never enabled in production.

`GET /bench/trivial/` is the ceiling of this stack on a machine: the same web server, middleware, DRF
token authentication and PostgreSQL connection as the annotation API, doing exactly one indexed
query (the token lookup by primary key, joined to its user) and rendering a tiny JSON body.
"""
from __future__ import annotations

from django.urls import path
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView


class TrivialApi(APIView):
    permission_classes = [IsAuthenticated]

    def get(self, request: Request) -> Response:
        return Response({"user": request.user.pk})


urlpatterns = [path("trivial/", TrivialApi.as_view(), name="bench-trivial")]
