"""A Content-Security-Policy on every answer (the UI, the account pages, the API docs, the
admin, DRF's browsable API, error pages, and the API's own answers, which a browser may be
led to open): scripts only from this server's own static files, so that even a sanitizer bug
could not run a document's script."""

from __future__ import annotations

POLICY = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        # KaTeX positions glyphs with style attributes.
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self' data:",
        "font-src 'self'",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ]
)


class ContentSecurityPolicyMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if "Content-Security-Policy" not in response:
            response["Content-Security-Policy"] = POLICY
        return response
