"""API keys: create (the key is shown once), list with last use, revoke."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.response import Response
from rest_framework.views import APIView

from webapp.accounts import selectors, services
from webapp.accounts.models import ApiKey
from webapp.core.schema import results_of


class ApiKeySerializer(serializers.ModelSerializer):
    active = serializers.BooleanField(source="is_active", read_only=True)

    class Meta:
        model = ApiKey
        fields = ["id", "name", "prefix", "created_at", "last_used_at", "revoked_at", "active"]


class ApiKeyCreateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=100, required=False, allow_blank=True, default="")


class IssuedKeySerializer(ApiKeySerializer):
    key = serializers.SerializerMethodField(help_text="the whole key; it is not shown again")

    class Meta(ApiKeySerializer.Meta):
        fields = [*ApiKeySerializer.Meta.fields, "key"]

    def get_key(self, api_key: ApiKey) -> str:
        return self.context["secret"]


class ApiKeyListCreateView(APIView):
    @extend_schema(responses={200: results_of(ApiKeySerializer)})
    def get(self, request):
        keys = selectors.api_keys_of(user=request.user)
        return Response({"results": ApiKeySerializer(keys, many=True).data})

    @extend_schema(request=ApiKeyCreateSerializer, responses={201: IssuedKeySerializer})
    def post(self, request):
        serializer = ApiKeyCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        issued = services.api_key_create(user=request.user, name=serializer.validated_data["name"])
        body = IssuedKeySerializer(issued.api_key, context={"secret": issued.secret}).data
        return Response(body, status=status.HTTP_201_CREATED)


class ApiKeyDetailView(APIView):
    @extend_schema(request=None, responses={204: None})
    def delete(self, request, key_id: int):
        if not services.api_key_revoke_owned(user=request.user, key_id=key_id):
            raise NotFound(f"No API key {key_id} here.")
        return Response(status=status.HTTP_204_NO_CONTENT)
