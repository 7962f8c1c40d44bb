"""The project's URLs plus media files, for the live server in browser tests (Django serves media
only with DEBUG, which tests run without): the review grid's thumbnails must load."""
from django.conf import settings
from django.urls import re_path
from django.views.static import serve

from config.urls import urlpatterns as project_urlpatterns

urlpatterns = [
    *project_urlpatterns,
    re_path(r"^media/(?P<path>.*)$", serve, {"document_root": settings.MEDIA_ROOT}),
]
