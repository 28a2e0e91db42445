"""Bearer-token authentication of the HTTP API.

The token comes from the environment, never from a flag (flags show in ``ps``):
``STREAMLEARN_HTTP_TOKEN``, or the first line of the file ``STREAMLEARN_HTTP_TOKEN_FILE``
names. With a token every request but ``GET /openapi.json`` must carry
``Authorization: Bearer <token>``, and so must every request on the operations address
that changes something (``POST /checkpoint``, see :mod:`streamlearn.http.ops`); without
one the API answers anyone, which is allowed only on a loopback address.

>>> token_from_env({"STREAMLEARN_HTTP_TOKEN": " s3cret "})
's3cret'
>>> token_from_env({}) is None
True
>>> is_loopback("127.0.0.1"), is_loopback("::1"), is_loopback("localhost"), is_loopback("0.0.0.0")
(True, True, True, False)
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Mapping

from streamlearn.errors import InvalidParameterError
from streamlearn.secrets import secret_from_variables

TOKEN_VARIABLE = "STREAMLEARN_HTTP_TOKEN"
TOKEN_FILE_VARIABLE = "STREAMLEARN_HTTP_TOKEN_FILE"


def token_from_env(environ: Mapping[str, str]) -> str | None:
    """The API's token (None: none set). Refuses both variables at once, an empty token
    and a file that cannot be read."""
    return secret_from_variables(
        environ, TOKEN_VARIABLE, TOKEN_FILE_VARIABLE, what="the HTTP API's token"
    )


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address (``localhost`` included)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_exposure(host: str, token: str | None, option: str) -> None:
    """Refuse to serve the API without a token on an address other machines reach."""
    if token is None and not is_loopback(host):
        raise InvalidParameterError(
            f"{option} {host} is not a loopback address: set {TOKEN_VARIABLE} or "
            f"{TOKEN_FILE_VARIABLE} so that the API asks for a bearer token"
        )


def authorized(header: str | None, token: str) -> bool:
    """Whether an ``Authorization`` header carries ``token`` (compared in constant time).

    >>> authorized("Bearer abc", "abc"), authorized("bearer abc", "abc"), authorized(None, "abc")
    (True, True, False)
    """
    if header is None:
        return False
    scheme, _, given = header.partition(" ")
    if scheme.lower() != "bearer":
        return False
    return hmac.compare_digest(given.strip().encode(), token.encode())
