from django.urls import path

from . import apis, apis_people

app_name = "annotation"

C = "campaigns/<int:campaign_id>/"

# Django tries the patterns in order, one regular expression each: the HIT cycle's routes (most of the
# API's traffic) come first. No two patterns here match the same path, so the order changes nothing else.
urlpatterns = [
    path(C + "assignments/", apis.AssignmentNextApi.as_view(), name="assignment-next"),
    path("assignments/<int:assignment_id>/submit/", apis.AssignmentSubmitApi.as_view(), name="assignment-submit"),
    path("assignments/<int:assignment_id>/heartbeat/", apis.AssignmentHeartbeatApi.as_view(),
         name="assignment-heartbeat"),
    path("annotators/", apis.AnnotatorSignupApi.as_view(), name="annotator-signup"),
    path("auth/token/rotate/", apis_people.TokenRotateApi.as_view(), name="token-rotate"),
    path("auth/logout/", apis_people.LogoutApi.as_view(), name="logout"),
    path("annotators/me/", apis.AnnotatorMeApi.as_view(), name="annotator-me"),
    path("annotators/me/demographics/", apis_people.DemographicsApi.as_view(), name="annotator-demographics"),
    path("annotators/me/demographics/withdraw/", apis_people.DemographicsWithdrawApi.as_view(),
         name="annotator-demographics-withdraw"),
    path(C + "demographics/", apis_people.CampaignDemographicsApi.as_view(), name="campaign-demographics"),
    path(C + "demographics/releases/", apis_people.DemographicsReleasesApi.as_view(),
         name="campaign-demographics-releases"),
    path(C + "pay/", apis_people.CampaignPayApi.as_view(), name="campaign-pay"),
    path(C + "open/", apis.CampaignOpenApi.as_view(), name="campaign-open"),
    path(C + "pause/", apis.CampaignTransitionApi.as_view(action="pause"), name="campaign-pause"),
    path(C + "resume/", apis.CampaignTransitionApi.as_view(action="resume"), name="campaign-resume"),
    path(C + "close/", apis.CampaignTransitionApi.as_view(action="close"), name="campaign-close"),
    path(C + "questions/", apis.CampaignQuestionsApi.as_view(), name="campaign-questions"),
    path(C + "questions/redundancy/", apis.QuestionsRedundancyApi.as_view(), name="questions-redundancy"),
    path(C + "questions/gold/", apis.QuestionsGoldApi.as_view(), name="questions-gold"),
    path(C + "examples/", apis.CampaignExamplesApi.as_view(), name="campaign-examples"),
    path(C + "examples/<int:example_id>/", apis.CampaignExampleDetailApi.as_view(), name="campaign-example"),
    path(C + "consent/", apis.CampaignConsentApi.as_view(), name="campaign-consent"),
    path(C + "task/", apis.CampaignTaskApi.as_view(), name="campaign-task"),
    path(C + "qualifications/", apis.CampaignQualificationsApi.as_view(), name="campaign-qualifications"),
    path("qualifications/<int:qualification_id>/attempts/", apis.QualificationAttemptApi.as_view(),
         name="qualification-attempts"),
    path("assignments/<int:assignment_id>/return/", apis.AssignmentReturnApi.as_view(), name="assignment-return"),
    path("assignments/<int:assignment_id>/review/", apis.AssignmentReviewApi.as_view(), name="assignment-review"),
    path(C + "annotators/", apis.CampaignAnnotatorsApi.as_view(), name="campaign-annotators"),
    path(C + "annotators/<int:annotator_id>/", apis.CampaignAnnotatorActionApi.as_view(),
         name="campaign-annotator-action"),
    path(C + "export/", apis.CampaignExportApi.as_view(), name="campaign-export"),
    path("campaigns/import/", apis.CampaignImportApi.as_view(), name="campaign-import"),
    path(C + "payments.csv", apis.CampaignPaymentsCsvApi.as_view(), name="campaign-payments"),
]
