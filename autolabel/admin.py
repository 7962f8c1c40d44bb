from django.contrib import admin

from .models import AutolabelJob, MachineLabel


@admin.register(MachineLabel)
class MachineLabelAdmin(admin.ModelAdmin):
    list_display = ("question", "labeller", "choice", "score", "model")
    list_filter = ("labeller",)


@admin.register(AutolabelJob)
class AutolabelJobAdmin(admin.ModelAdmin):
    list_display = ("campaign", "labeller", "status", "done", "total", "failed")
