"""Sync records signed with a secret the members share: a producer without it cannot
speak for the group, not even by copying a member's record under another key.

The secret comes from the environment, ``STREAMLEARN_GROUP_SECRET``, or the first line
of the file ``STREAMLEARN_GROUP_SECRET_FILE``. A signed record is the record's bytes
followed by HMAC-SHA256(secret, key, 0, bytes): 32 bytes that bind it to the key it is
written under.

>>> secret = secret_from_env({"STREAMLEARN_GROUP_SECRET": "s3cret"})
>>> value = signed(b"record", "a", secret)
>>> verified(value, "a", secret)
b'record'
>>> verified(value, "b", secret)
Traceback (most recent call last):
...
streamlearn.errors.StateError: sync record: not signed with the group's secret
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping

from streamlearn.errors import StateError
from streamlearn.secrets import secret_from_variables

SECRET_VARIABLE = "STREAMLEARN_GROUP_SECRET"
SECRET_FILE_VARIABLE = "STREAMLEARN_GROUP_SECRET_FILE"
#: bytes of the signature at a signed record's end
MAC_BYTES = hashlib.sha256().digest_size


def secret_from_env(environ: Mapping[str, str]) -> bytes | None:
    """The group's secret (None: records are not signed). Refuses both variables at
    once, an empty secret and a file that cannot be read."""
    secret = secret_from_variables(
        environ, SECRET_VARIABLE, SECRET_FILE_VARIABLE, what="the group's secret"
    )
    return None if secret is None else secret.encode("utf-8")


def _mac(value: bytes, key: str, secret: bytes) -> bytes:
    return hmac.new(secret, key.encode("utf-8") + b"\0" + value, hashlib.sha256).digest()


def signed(value: bytes, key: str, secret: bytes) -> bytes:
    """``value`` written under ``key``, signed."""
    return value + _mac(value, key, secret)


def verified(value: bytes, key: str, secret: bytes) -> bytes:
    """The record of a signed ``value`` read under ``key``; :class:`StateError` when it
    is not signed with ``secret`` for that key."""
    record, mac = value[:-MAC_BYTES], value[-MAC_BYTES:]
    if len(value) <= MAC_BYTES or not hmac.compare_digest(mac, _mac(record, key, secret)):
        raise StateError("sync record: not signed with the group's secret")
    return record
