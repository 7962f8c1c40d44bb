"""The annotator's pages (server-rendered; the task page's JS talks to the public API)."""
from django.urls import path

from . import views

app_name = "annotation-pages"

urlpatterns = [
    path("work/<int:campaign_id>/", views.WorkPageView.as_view(), name="work"),
    path("work/<int:campaign_id>/signup/", views.WorkSignupView.as_view(), name="signup"),
    path("work/<int:campaign_id>/login/", views.WorkLoginView.as_view(), name="login"),
    path("work/<int:campaign_id>/logout/", views.WorkLogoutView.as_view(), name="logout"),
]
