from django.contrib import admin

from webapp.jobs.models import Document, Job, Page


@admin.register(Document)
class DocumentAdmin(admin.ModelAdmin):
    list_display = ["original_name", "owner", "mime_type", "page_count", "size", "created_at"]
    search_fields = ["original_name", "sha256", "owner__username"]


class PageInline(admin.TabularInline):
    model = Page
    extra = 0
    readonly_fields = fields = (
        "number",
        "status",
        "attempts",
        "method",
        "output_tokens",
        "engine_seconds",
        "error",
    )
    can_delete = False


@admin.register(Job)
class JobAdmin(admin.ModelAdmin):
    list_display = [
        "id",
        "owner",
        "engine",
        "status",
        "pages_done",
        "pages_failed",
        "pages_total",
        "created_at",
    ]
    list_filter = ["status", "engine"]
    search_fields = ["id", "owner__username", "document__original_name"]
    inlines = [PageInline]
