from django.urls import path

from . import apis

app_name = "generation"

urlpatterns = [
    path("campaigns/<int:campaign_id>/generate/", apis.GenerationStartApi.as_view(), name="generate"),
    path("campaigns/<int:campaign_id>/generate/cancel/", apis.GenerationCancelApi.as_view(), name="generate-cancel"),
    path("campaigns/<int:campaign_id>/generate/retry-failed/", apis.GenerationRetryFailedApi.as_view(),
         name="generate-retry-failed"),
    path("campaigns/<int:campaign_id>/images/", apis.CampaignImagesApi.as_view(), name="campaign-images"),
    path("campaigns/<int:campaign_id>/images/import/", apis.ImageImportApi.as_view(), name="images-import"),
    path("images/<int:image_id>/exclude/", apis.ImageExcludeApi.as_view(), name="image-exclude"),
    path("images/<int:image_id>/include/", apis.ImageIncludeApi.as_view(), name="image-include"),
]
