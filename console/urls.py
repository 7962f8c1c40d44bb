from django.urls import path

from . import views

app_name = "console"

C = "campaigns/<int:campaign_id>/"

urlpatterns = [
    path("", views.campaign_list_view, name="campaigns"),
    path("new/", views.campaign_new_view, name="campaign-new"),
    path("compare/", views.compare_view, name="compare"),
    path(C, views.campaign_detail_view, name="campaign"),
    path(C + "action/", views.campaign_action_view, name="campaign-action"),
    path(C + "images/", views.image_grid_view, name="images"),
    path(C + "annotators/", views.annotator_monitor_view, name="annotators"),
    path(C + "labels/", views.labels_view, name="labels"),
    path(C + "annotators/<int:annotator_id>/action/", views.annotator_action_view, name="annotator-action"),
    path(C + "report/", views.report_view, name="report"),
]
