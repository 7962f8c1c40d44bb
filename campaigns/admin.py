from django.contrib import admin

from .models import Campaign, Prompt


@admin.register(Campaign)
class CampaignAdmin(admin.ModelAdmin):
    list_display = ("id", "name", "kind", "status", "owner", "prompt_count", "images_planned", "created_at")
    list_filter = ("kind", "status")
    search_fields = ("name",)
    readonly_fields = ("spec", "seed", "kind", "prompt_count", "images_planned", "created_at", "updated_at")

    def get_queryset(self, request):  # type: ignore[no-untyped-def]
        qs = super().get_queryset(request)
        return qs if request.user.is_superuser else qs.filter(owner=request.user)


@admin.register(Prompt)
class PromptAdmin(admin.ModelAdmin):
    list_display = ("id", "campaign", "setting", "key", "samples")
    list_filter = ("setting",)
    search_fields = ("key", "text")
    readonly_fields = ("campaign", "key", "position", "setting", "text", "metadata", "samples", "seeds")
