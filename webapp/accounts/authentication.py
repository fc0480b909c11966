from __future__ import annotations

from rest_framework import authentication, exceptions

from webapp.accounts.services import api_key_authenticate


class ApiKeyAuthentication(authentication.BaseAuthentication):
    """``Authorization: Bearer <key>``."""

    keyword = "bearer"

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).decode("latin-1").strip()
        if not header:
            return None
        scheme, _, secret = header.partition(" ")
        if scheme.lower() != self.keyword:
            return None
        secret = secret.strip()
        if not secret:
            raise exceptions.AuthenticationFailed(
                "The Authorization header has no key after 'Bearer'."
            )
        api_key = api_key_authenticate(secret=secret)
        if api_key is None:
            raise exceptions.AuthenticationFailed("This API key is unknown or has been revoked.")
        return api_key.user, api_key

    def authenticate_header(self, request) -> str:
        return 'Bearer realm="folio"'
