"""A Content-Security-Policy on the browser pages: scripts only from this server's own
static files, so that even a sanitizer bug could not run a document's script."""

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
# Pages this app and the account pages render; the API docs and the admin set their own.
UI_PREFIXES = ("/jobs/", "/account/")


class ContentSecurityPolicyMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        is_html = response.get("Content-Type", "").startswith("text/html")
        is_ui = request.path == "/" or request.path.startswith(UI_PREFIXES)
        if is_html and is_ui and "Content-Security-Policy" not in response:
            response["Content-Security-Policy"] = POLICY
        return response
