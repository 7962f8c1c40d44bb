from django.contrib import admin

from .models import Image


@admin.register(Image)
class ImageAdmin(admin.ModelAdmin):
    list_display = ("id", "campaign", "prompt", "sample_index", "status", "excluded", "backend", "wall_time_s")
    list_filter = ("status", "excluded", "backend")
    raw_id_fields = ("campaign", "prompt")
