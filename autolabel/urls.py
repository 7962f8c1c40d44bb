from django.urls import path

from . import apis

app_name = "autolabel"

urlpatterns = [
    path("campaigns/<int:campaign_id>/autolabel/", apis.AutolabelStartApi.as_view(), name="autolabel"),
    path("campaigns/<int:campaign_id>/autolabel/cancel/", apis.AutolabelCancelApi.as_view(), name="autolabel-cancel"),
    path("campaigns/<int:campaign_id>/machine-labels/", apis.MachineLabelListApi.as_view(), name="machine-labels"),
    path("campaigns/<int:campaign_id>/machine-labels/import/", apis.MachineLabelImportApi.as_view(),
         name="machine-labels-import"),
]
