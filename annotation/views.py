"""The annotator's pages: sign-up (with the campaign's informed consent), login, and the work page.

The work page is a server-rendered shell; its script (static/annotation/work.js) walks the
annotator through consent, qualification tests and HITs with the public API, using this session
(and its CSRF token). Pages never show the prompt, the gender in it, the model or other
annotators' answers: they only ever call the annotator endpoints, which do not send them.
"""
from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth import get_user_model, login
from django.contrib.auth import views as auth_views
from django.contrib.auth.password_validation import validate_password
from django.contrib.auth.validators import UnicodeUsernameValidator
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views import View

from campaigns.models import Campaign
from common.errors import ApplicationError



# --- calls into the annotation services (the API's own code paths) ----------------------------
# TODO(after merging `ann`): replace these interim bodies by the annotation services.


def _consent_text(*, campaign: Campaign) -> str:
    return str((campaign.spec or {}).get("annotation", {}).get("consent_text") or "")


def _annotator_signup(*, campaign: Campaign, username: str, password: str, consent: bool) -> Any:
    from django.db import transaction
    from django.utils import timezone

    from .models import Annotator, Enrollment

    with transaction.atomic():
        user = get_user_model().objects.create_user(username=username, password=password)
        annotator = Annotator.objects.create(user=user)
        Enrollment.objects.create(campaign=campaign, annotator=annotator, consented_at=timezone.now(),
                                  consent_text=_consent_text(campaign=campaign))
    return user


def _campaign(campaign_id: int) -> Campaign:
    return get_object_or_404(Campaign, pk=campaign_id, deleted_at__isnull=True)


class AnnotatorSignupForm(forms.Form):
    username = forms.CharField(
        max_length=150, validators=[UnicodeUsernameValidator()],
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

    def clean_username(self) -> str:
        username = self.cleaned_data["username"]
        if get_user_model().objects.filter(username__iexact=username).exists():
            raise ValidationError("This username is taken. Choose another, or log in.")
        return username

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        p1, p2 = data.get("password1"), data.get("password2")
        if p1 and p2 and p1 != p2:
            self.add_error("password2", "The two passwords differ.")
        elif p1:
            try:
                validate_password(p1, user=get_user_model()(username=data.get("username", "")))
            except ValidationError as exc:
                self.add_error("password1", exc)
        return data


class WorkSignupView(View):
    """Sign-up with the campaign's consent text and a required consent checkbox."""

    template_name = "annotation/signup.html"

    def _render(self, request: HttpRequest, campaign: Campaign, form: AnnotatorSignupForm, status: int = 200) -> HttpResponse:
        return render(request, self.template_name, {
            "campaign": campaign, "form": form,
            "consent_text": _consent_text(campaign=campaign),
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
            user = _annotator_signup(
                campaign=campaign, username=form.cleaned_data["username"],
                password=form.cleaned_data["password1"], consent=form.cleaned_data["consent"],
            )
        except ApplicationError as exc:
            form.add_error(None, str(exc))
            return self._render(request, campaign, form, status=400)
        login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        return redirect("annotation-pages:work", campaign_id=campaign.pk)


class WorkLoginView(auth_views.LoginView):
    template_name = "annotation/login.html"
    redirect_authenticated_user = True

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
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
