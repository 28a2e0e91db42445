"""The systemd notification protocol (``sd_notify``), for a ``Type=notify`` unit.

systemd holds a ``systemctl reload`` (SIGHUP) or ``stop`` that comes while a
``Type=notify`` service is starting until the service says ``READY=1``. A ``Type=exec``
service counts as started at once, so a reload right after a start sent SIGHUP to a
process still importing its modules, whose default action killed it.

>>> notify("READY=1", {})  # not started by systemd: nothing to tell
False
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Mapping

log = logging.getLogger("streamlearn.serve")


def notify(state: str, environ: Mapping[str, str] = os.environ) -> bool:
    """Send ``state`` (``READY=1``...) to the socket in ``NOTIFY_SOCKET``, if there is
    one; whether it was sent. A failure is logged, never raised."""
    address = environ.get("NOTIFY_SOCKET")
    if not address:
        return False
    if address.startswith("@"):  # an abstract socket
        address = "\0" + address[1:]
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
            sock.connect(address)
            sock.sendall(state.encode())
    except OSError as exc:
        log.warning("cannot notify systemd (%s) at %s: %s", state, address, exc)
        return False
    return True
