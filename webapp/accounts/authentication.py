from __future__ import annotations

from rest_framework import authentication, exceptions

from webapp.accounts.services import KEY_PREFIX, api_key_authenticate
from webapp.core.error_body import KEY_HINT


class ApiKeyAuthentication(authentication.BaseAuthentication):
    """``Authorization: Bearer <key>``."""

    keyword = "bearer"

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).decode("latin-1").strip()
        if not header:
            return None
        scheme, _, secret = header.partition(" ")
        if scheme.lower() != self.keyword:
            if header.startswith(KEY_PREFIX):
                # A key sent without its scheme: say how, rather than answer as if no key had
                # been sent. (Other schemes, a proxy's Basic credentials, are not ours.)
                raise exceptions.AuthenticationFailed(
                    f"The Authorization header holds a key without the `Bearer ` prefix: "
                    f"{KEY_HINT}."
                )
            return None
        secret = secret.strip()
        if not secret:
            raise exceptions.AuthenticationFailed(
                f"The Authorization header has no key after 'Bearer': {KEY_HINT}."
            )
        api_key = api_key_authenticate(secret=secret)
        if api_key is None:
            raise exceptions.AuthenticationFailed(
                f"This API key is unknown or has been revoked: {KEY_HINT}."
            )
        return api_key.user, api_key

    def authenticate_header(self, request) -> str:
        return 'Bearer realm="folio"'
