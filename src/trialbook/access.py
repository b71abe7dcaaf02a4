"""Who may talk to trialbook's servers (`trialbook serve`, the model gateway): one rule for both.

On a loopback address (127.0.0.1, ::1, localhost) a server is open to this machine's users, as before. On any
other address it refuses to start without a token (`--token env:VAR|file:PATH`, or TRIALBOOK_TOKEN in the
environment), and with a token every request must carry `Authorization: Bearer TOKEN` (compared in constant time).
"""

from __future__ import annotations

import hmac
import os

from trialbook.errors import UserError
from trialbook.redact import register, secret_value

TOKEN_ENV = "TRIALBOOK_TOKEN"
LOOPBACK = ("127.0.0.1", "::1", "localhost")


def is_loopback(host: str) -> bool:
    return host in LOOPBACK or host.startswith("127.")


def server_token(token: str | None, host: str, what: str) -> str | None:
    """The token a server on `host` requires (None: none): from `token` (env:VAR or file:PATH), else TRIALBOOK_TOKEN.
    A non-loopback `host` without one is a UserError (exit 2)."""
    value = secret_value(token, "--token") if token else register(os.environ.get(TOKEN_ENV, "").strip() or None)
    if value is None and not is_loopback(host):
        raise UserError(
            f"{what} --host {host}: a non-loopback address needs a token (--token env:VAR or {TOKEN_ENV}); "
            "every request must then carry it as Authorization: Bearer"
        )
    return value


def bearer_ok(header: str | None, token: str | None) -> bool:
    """Whether a request's Authorization header carries `token` (any request, where there is no token)."""
    if token is None:
        return True
    scheme, _, given = (header or "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode())
