"""Crowd-platform pages (site root) and API (under api/): mounted with one line in config/urls.py."""
from django.urls import path

from . import apis, views

app_name = "crowd"

urlpatterns = [
    path("mturk/<int:campaign_id>/", views.MTurkTaskView.as_view(), name="mturk"),
    path("prolific/<int:campaign_id>/", views.ProlificStudyView.as_view(), name="prolific"),
    path("prolific/<int:campaign_id>/finish/", views.ProlificFinishView.as_view(), name="prolific-finish"),
    path("api/mturk/<int:campaign_id>/assignment/", apis.MTurkAssignmentApi.as_view(), name="mturk-assignment"),
    path("api/mturk/qualifications/<int:qualification_id>/attempts/", apis.MTurkQualificationAttemptApi.as_view(),
         name="mturk-qualification-attempts"),
    path("api/campaigns/<int:campaign_id>/mturk/import/", apis.MTurkBatchImportApi.as_view(),
         name="mturk-import"),
]
