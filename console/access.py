"""Who may see a console page: researchers (their own campaigns; staff: all). Anonymous users are
sent to the login page, logged-in non-researchers (annotators) get 403, and another researcher's
campaign is a 404 (its existence is not revealed), exactly as in the API."""
from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse

from campaigns.models import Campaign
from campaigns.selectors import campaign_get
from common.errors import NotFoundError
from common.permissions import user_is_researcher

View = Callable[..., HttpResponse]


def researcher_required(view: View) -> View:
    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        if not user_is_researcher(request.user):
            raise PermissionDenied("The console is for researchers.")
        return view(request, *args, **kwargs)

    return wrapper


def owned_campaign(request: HttpRequest, campaign_id: int) -> Campaign:
    try:
        return campaign_get(user=request.user, campaign_id=campaign_id)
    except NotFoundError as exc:
        raise Http404(str(exc)) from exc
