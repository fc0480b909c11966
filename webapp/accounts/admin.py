from django.contrib import admin

from webapp.accounts.models import AccountLimits, ApiKey


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    list_display = ["prefix", "name", "user", "created_at", "last_used_at", "revoked_at"]
    list_filter = ["revoked_at"]
    search_fields = ["prefix", "name", "user__username"]
    readonly_fields = ["prefix", "digest", "created_at", "last_used_at"]


@admin.register(AccountLimits)
class AccountLimitsAdmin(admin.ModelAdmin):
    list_display = ["user", "pages_per_day", "requests_per_minute"]
    search_fields = ["user__username"]
    autocomplete_fields = ["user"]
