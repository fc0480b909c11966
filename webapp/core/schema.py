"""How the OpenAPI schema describes what drf-spectacular cannot guess on its own."""

from __future__ import annotations

from functools import cache

from drf_spectacular.extensions import OpenApiAuthenticationExtension


class ApiKeyScheme(OpenApiAuthenticationExtension):
    target_class = "webapp.accounts.authentication.ApiKeyAuthentication"
    name = "apiKey"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer", "description": "`Authorization: Bearer <key>`"}


READER_ERROR = {
    "type": "object",
    "description": "Every error of Folio's own API, in Jina Reader's shape",
    "required": ["data", "code", "name", "status", "message", "readableMessage"],
    "properties": {
        "data": {"nullable": True},
        "code": {"type": "integer", "description": "the HTTP status"},
        "name": {"type": "string"},
        "status": {"type": "integer", "description": "the HTTP status and two digits of detail"},
        "message": {"type": "string"},
        "readableMessage": {"type": "string"},
    },
}
OPENAI_ERROR = {
    "type": "object",
    "description": "Errors of the OpenAI-compatible endpoints, in OpenAI's shape",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["message", "type"],
            "properties": {
                "message": {"type": "string"},
                "type": {"type": "string"},
                "param": {"type": "string", "nullable": True},
                "code": {"type": "string", "nullable": True},
            },
        }
    },
}
OPENAI_PATHS = ("/v1/chat/", "/v1/models")


def document_errors(result, generator, request, public):
    """drf-spectacular postprocessing hook: every operation answers errors in one documented
    shape (a `default` response), so clients and schema checkers know what a 4xx looks like."""
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    schemas["Error"] = READER_ERROR
    schemas["OpenAIError"] = OPENAI_ERROR
    for path, operations in result.get("paths", {}).items():
        name = "OpenAIError" if path.startswith(OPENAI_PATHS) else "Error"
        for operation in operations.values():
            operation.setdefault("responses", {}).setdefault(
                "default",
                {
                    "description": "an error",
                    "content": {
                        "application/json": {"schema": {"$ref": f"#/components/schemas/{name}"}}
                    },
                },
            )
    return result


@cache  # one component per serializer: two look-alikes of one name would clash (W001)
def results_of(serializer_class, *, paginated: bool = False):
    """The schema of a ``{"results": [...]}`` answer (with page links when ``paginated``)."""
    from drf_spectacular.utils import inline_serializer
    from rest_framework import serializers

    fields = {"results": serializer_class(many=True)}
    if paginated:
        fields |= {
            "count": serializers.IntegerField(),
            "page": serializers.IntegerField(),
            "page_size": serializers.IntegerField(),
            "next": serializers.URLField(allow_null=True),
            "previous": serializers.URLField(allow_null=True),
        }
    name = serializer_class.__name__.removesuffix("Serializer")
    return inline_serializer(name=f"{name}{'Page' if paginated else 'List'}", fields=fields)
