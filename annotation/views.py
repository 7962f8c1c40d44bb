"""The annotator's pages: sign-up (with the campaign's informed consent), login, and the work page.

The work page is a server-rendered shell; its script (the ES modules in static/annotation/work/,
entry main.js) walks the annotator through consent, qualification tests and HITs with the public API, using this session
(and its CSRF token). Pages never show the prompt, the gender in it, the model or other
annotators' answers: they only ever call the annotator endpoints, which do not send them.
"""
from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth import login
from django.contrib.auth import views as auth_views
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views import View

from campaigns.models import Campaign
from common.errors import ApplicationError, NotFoundError

from .selectors import campaign_for_annotator
from .services.annotators import annotator_create, enrollment_consent
from .spec_section import annotation_settings


def _campaign(campaign_id: int) -> Campaign:
    """A campaign annotators may see (open, paused or closed), else 404 (drafts are not revealed)."""
    try:
        return campaign_for_annotator(campaign_id=campaign_id)
    except NotFoundError as exc:
        raise Http404(str(exc)) from exc


class AnnotatorSignupForm(forms.Form):
    username = forms.CharField(
        max_length=150,
        help_text="Letters, digits and @ . + - _ only. Do not use your real name.",
        widget=forms.TextInput(attrs={"autocomplete": "username", "autocapitalize": "none", "spellcheck": "false"}),
    )
    password1 = forms.CharField(
        label="Password", strip=False, help_text="At least 8 characters, not only digits.",
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
    )
    password2 = forms.CharField(
        label="Password again", strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
    )
    consent = forms.BooleanField(
        required=True, label="I have read the information above and agree to take part.",
        error_messages={"required": "You must agree to take part to sign up."},
    )

    def clean(self) -> dict[str, Any]:
        # Username and password rules are the sign-up service's (the same as POST /api/annotators/).
        data = super().clean() or {}
        p1, p2 = data.get("password1"), data.get("password2")
        if p1 and p2 and p1 != p2:
            self.add_error("password2", "The two passwords differ.")
        return data


class WorkSignupView(View):
    """Sign-up with the campaign's consent text and a required consent checkbox."""

    template_name = "annotation/signup.html"

    def _render(self, request: HttpRequest, campaign: Campaign, form: AnnotatorSignupForm,
                status: int = 200) -> HttpResponse:
        return render(request, self.template_name, {
            "campaign": campaign, "form": form,
            "consent_text": annotation_settings(campaign)["consent_text"],
        }, status=status)

    def get(self, request: HttpRequest, campaign_id: int) -> HttpResponse:
        campaign = _campaign(campaign_id)
        return self._render(request, campaign, AnnotatorSignupForm())

    def post(self, request: HttpRequest, campaign_id: int) -> HttpResponse:
        campaign = _campaign(campaign_id)
        form = AnnotatorSignupForm(request.POST)
        if not form.is_valid():
            return self._render(request, campaign, form, status=400)
        try:
            # One account and its consent to this campaign, or neither.
            with transaction.atomic():
                annotator, _token = annotator_create(
                    username=form.cleaned_data["username"], password=form.cleaned_data["password1"], consent=True)
                enrollment_consent(annotator=annotator, campaign=campaign, consent=True)
        except ApplicationError as exc:
            for field, messages in (exc.errors or {"": [exc.message]}).items():
                name = {"password": "password1"}.get(field, field)
                for message in messages:
                    form.add_error(name if name in form.fields else None, message)
            return self._render(request, campaign, form, status=400)
        user = annotator.user
        login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        return redirect("annotation-pages:work", campaign_id=campaign.pk)


class WorkLoginView(auth_views.LoginView):
    template_name = "annotation/login.html"
    redirect_authenticated_user = True

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        self.campaign = _campaign(kwargs["campaign_id"])
        return super().dispatch(request, *args, **kwargs)

    def get_default_redirect_url(self) -> str:
        return reverse("annotation-pages:work", args=[self.campaign.pk])

    def get_success_url(self) -> str:
        # Only this campaign's own pages: a crafted ?next= cannot send an annotator elsewhere.
        return self.get_default_redirect_url()

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        return {**super().get_context_data(**kwargs), "campaign": self.campaign}


class WorkLogoutView(auth_views.LogoutView):
    def get_success_url(self) -> str:
        return reverse("annotation-pages:login", args=[self.kwargs["campaign_id"]])


class WorkPageView(View):
    """The work page shell. Anonymous visitors go to sign-up (which links to login)."""

    def get(self, request: HttpRequest, campaign_id: int) -> HttpResponse:
        campaign = _campaign(campaign_id)
        if not request.user.is_authenticated:
            return redirect("annotation-pages:signup", campaign_id=campaign.pk)
        return render(request, "annotation/work.html", {"campaign": campaign})
