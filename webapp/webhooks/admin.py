from django.contrib import admin

from webapp.webhooks.models import WebhookAttempt, WebhookDelivery, WebhookEndpoint


@admin.register(WebhookEndpoint)
class WebhookEndpointAdmin(admin.ModelAdmin):
    list_display = ["url", "owner", "for_all_jobs", "disabled_at", "created_at"]
    list_filter = ["for_all_jobs"]
    search_fields = ["url", "owner__username"]
    exclude = ["secret", "previous_secret"]


class AttemptInline(admin.TabularInline):
    model = WebhookAttempt
    extra = 0
    readonly_fields = fields = ("number", "started_at", "status_code", "latency_ms", "error")
    can_delete = False


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(admin.ModelAdmin):
    list_display = ["event", "endpoint", "job", "status", "attempts", "next_attempt_at"]
    list_filter = ["status", "event"]
    search_fields = ["message_id", "endpoint__url", "job__id"]
    inlines = [AttemptInline]
