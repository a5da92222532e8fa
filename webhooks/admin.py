from django.contrib import admin

from projects.admin import ProjectScopedAdmin
from webhooks.models import Delivery, Subscription


@admin.register(Subscription)
class SubscriptionAdmin(ProjectScopedAdmin, admin.ModelAdmin):
    list_display = ("url", "project", "is_active", "created_at")
    list_filter = ("is_active",)
    readonly_fields = ("secret", "created_by", "created_at", "updated_at")


@admin.register(Delivery)
class DeliveryAdmin(ProjectScopedAdmin, admin.ModelAdmin):
    project_path = "subscription__project"
    list_display = ("event", "subscription", "status", "attempts", "created_at")
    list_filter = ("status", "event")
    readonly_fields = [f.name for f in Delivery._meta.fields]

    def has_add_permission(self, request):
        return False
