from django.contrib import admin

from .models import (
    AggregatedLabel,
    Annotator,
    Answer,
    Assignment,
    Enrollment,
    Qualification,
    Question,
)


@admin.register(Annotator)
class AnnotatorAdmin(admin.ModelAdmin):
    list_display = ("id", "user", "mturk_worker_id", "prolific_pid", "created_at")
    search_fields = ("user__username", "mturk_worker_id", "prolific_pid")


@admin.register(Enrollment)
class EnrollmentAdmin(admin.ModelAdmin):
    list_display = ("id", "campaign", "annotator", "status", "status_reason", "consented_at")
    list_filter = ("status",)


@admin.register(Question)
class QuestionAdmin(admin.ModelAdmin):
    list_display = ("id", "campaign", "image", "slot", "setting", "required", "assigned", "completed", "is_gold")
    list_filter = ("setting", "is_gold")
    raw_id_fields = ("image",)


@admin.register(Assignment)
class AssignmentAdmin(admin.ModelAdmin):
    list_display = ("id", "campaign", "annotator", "status", "review", "expires_at", "reward", "bonus")
    list_filter = ("status", "review")


@admin.register(Answer)
class AnswerAdmin(admin.ModelAdmin):
    list_display = ("id", "question", "annotator", "choice", "time_ms", "created_at")
    raw_id_fields = ("question", "annotator", "assignment", "corrects")


admin.site.register(Qualification)
admin.site.register(AggregatedLabel)
