from django.urls import path

from . import apis

app_name = "campaigns"

urlpatterns = [
    path("campaigns/", apis.CampaignListCreateApi.as_view(), name="campaign-list"),
    path("campaigns/<int:campaign_id>/", apis.CampaignDetailApi.as_view(), name="campaign-detail"),
    path("campaigns/<int:campaign_id>/prompts/", apis.CampaignPromptsApi.as_view(), name="campaign-prompts"),
    path("campaigns/<int:campaign_id>/references/", apis.CampaignReferencesApi.as_view(), name="campaign-references"),
    path("campaigns/<int:campaign_id>/imports/", apis.CampaignImportJobApi.as_view(), name="campaign-imports"),
    path("campaigns/<int:campaign_id>/spec/", apis.CampaignSpecApi.as_view(), name="campaign-spec"),
    path("specs/preview/", apis.SpecPreviewApi.as_view(), name="spec-preview"),
    path("presets/", apis.PresetsApi.as_view(), name="presets"),
]
