from __future__ import annotations

from rest_framework import serializers

from webapp.webhooks.models import Event, WebhookAttempt, WebhookDelivery, WebhookEndpoint


class EndpointSerializer(serializers.ModelSerializer):
    enabled = serializers.SerializerMethodField()

    class Meta:
        model = WebhookEndpoint
        fields = [
            "id",
            "url",
            "description",
            "events",
            "for_all_jobs",
            "previous_secret_expires_at",
            "enabled",
            "disabled_at",
            "disabled_reason",
            "created_at",
        ]

    def get_enabled(self, endpoint: WebhookEndpoint) -> bool:
        return endpoint.disabled_at is None


class EndpointWithSecretSerializer(EndpointSerializer):
    """The endpoint with its signing secret: only in the answers that create or rotate it."""

    class Meta(EndpointSerializer.Meta):
        fields = [*EndpointSerializer.Meta.fields, "secret"]


class EndpointCreateSerializer(serializers.Serializer):
    url = serializers.CharField(max_length=2000)
    events = serializers.ListField(
        child=serializers.CharField(max_length=40),
        help_text=f"any of: {', '.join(Event.values)}",
    )
    description = serializers.CharField(max_length=200, required=False, default="")
    verify = serializers.BooleanField(
        required=False,
        default=False,
        help_text="send a signed webhook.verification event first; the endpoint is registered "
        "only if it answers 2xx with the event's data.challenge in its body",
    )


class EndpointUpdateSerializer(serializers.Serializer):
    url = serializers.CharField(max_length=2000, required=False)
    events = serializers.ListField(child=serializers.CharField(max_length=40), required=False)
    description = serializers.CharField(max_length=200, required=False, allow_blank=True)
    enabled = serializers.BooleanField(required=False)


class AttemptSerializer(serializers.ModelSerializer):
    class Meta:
        model = WebhookAttempt
        fields = ["number", "started_at", "status_code", "latency_ms", "error", "response_excerpt"]


class DeliverySerializer(serializers.ModelSerializer):
    endpoint = serializers.UUIDField(source="endpoint_id", read_only=True)
    url = serializers.CharField(source="endpoint.url", read_only=True)
    job = serializers.UUIDField(source="job_id", read_only=True)
    attempt_log = AttemptSerializer(many=True, read_only=True)

    class Meta:
        model = WebhookDelivery
        fields = [
            "id",
            "endpoint",
            "url",
            "job",
            "event",
            "message_id",
            "status",
            "attempts",
            "next_attempt_at",
            "last_status_code",
            "last_error",
            "created_at",
            "finished_at",
            "attempt_log",
            "payload",
        ]
