from django.urls import path

from . import apis

urlpatterns = [
    path("campaigns/<int:campaign_id>/report/", apis.CampaignReportApi.as_view(), name="campaign-report"),
    path("campaigns/<int:campaign_id>/export/dataset/", apis.CampaignDatasetApi.as_view(), name="campaign-dataset"),
    path("reports/compare/", apis.ReportCompareApi.as_view(), name="report-compare"),
]
