"""The systemd notification: sent to the socket systemd names, never an error."""

from __future__ import annotations

import socket
import uuid
from pathlib import Path

from streamlearn.jobs.systemd import notify


def test_ready_goes_to_the_notify_socket(tmp_path: Path) -> None:
    path = tmp_path / "notify"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as listener:
        listener.bind(str(path))
        listener.settimeout(5)
        assert notify("READY=1", {"NOTIFY_SOCKET": str(path)})
        assert listener.recv(100) == b"READY=1"


def test_an_abstract_socket_is_named_with_an_at_sign() -> None:
    name = f"streamlearn-test-{uuid.uuid4().hex}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as listener:
        listener.bind("\0" + name)
        listener.settimeout(5)
        assert notify("STOPPING=1", {"NOTIFY_SOCKET": "@" + name})
        assert listener.recv(100) == b"STOPPING=1"


def test_no_socket_or_a_dead_one_is_not_an_error(tmp_path: Path) -> None:
    assert not notify("READY=1", {})
    assert not notify("READY=1", {"NOTIFY_SOCKET": str(tmp_path / "gone")})
