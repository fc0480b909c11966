"""Anonymous Reader requests: the shared account they belong to (webapp/accounts) and the
client whose quotas they spend (webapp/core/clients.py)."""

from __future__ import annotations

from webapp.accounts.services import ANONYMOUS_USERNAME, anonymous_owner
from webapp.core.clients import client_identity

__all__ = ["ANONYMOUS_USERNAME", "anonymous_owner", "client_identity"]
