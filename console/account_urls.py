"""Researcher login / logout (`/accounts/`); annotators have their own pages under /work/<id>/."""
from typing import Any

from django.contrib.auth import views as auth_views
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import path


class LogoutView(auth_views.LogoutView):
    """POST logs out (Django's view, CSRF-protected). A GET (the URL typed or bookmarked) used to be a
    blank 405: it now shows a page with the log-out button, so logging out stays a POST."""

    http_method_names = ["get", "post", "options"]

    def get(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        return render(request, "console/logout.html", {"signed_in": request.user.is_authenticated})


urlpatterns = [
    path("login/", auth_views.LoginView.as_view(template_name="console/login.html", redirect_authenticated_user=True),
         name="login"),
    path("logout/", LogoutView.as_view(), name="logout"),
]
