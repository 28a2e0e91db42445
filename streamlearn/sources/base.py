"""What every message source gives the daemon: messages with positions, and commits.

A position is, per partition, the offset of the next message to read. The daemon stores
positions in its checkpoints and hands them back to :meth:`Source.seek` on restart, and
commits them with :meth:`Source.commit` only once the checkpoint holding them is on disk.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

Positions = dict[int, int]


@dataclass(frozen=True)
class Message:
    """One message: its bytes, key and headers, and where it came from."""

    value: bytes
    key: bytes | None = None
    headers: dict[str, bytes] = field(default_factory=dict)
    partition: int = 0
    offset: int = 0


class Source(Protocol):
    """A resumable stream of messages."""

    def poll(self, timeout: float, max_messages: int) -> list[Message]:
        """Up to ``max_messages`` messages, waiting at most ``timeout`` seconds for the first."""
        ...

    def position(self) -> Positions:
        """Per partition, the offset after the last message returned by :meth:`poll`."""
        ...

    def seek(self, positions: Positions) -> None:
        """Resume from these positions (from a checkpoint)."""
        ...

    def commit(self, positions: Positions) -> None:
        """Record these positions as done (after the checkpoint holding them is on disk)."""
        ...

    def ready(self) -> bool:
        """Whether the source is connected and assigned its partitions."""
        ...

    def exhausted(self) -> bool:
        """Whether no message will ever come again (end of standard input)."""
        ...

    def lag(self) -> Positions:
        """Per partition, messages not yet read (empty when unknown)."""
        ...

    def close(self) -> None:
        """Release connections and files."""
        ...


class Sink(Protocol):
    """Where predictions go: a topic, or standard output."""

    def send(self, key: bytes | None, value: bytes) -> None:
        """Queue one prediction message."""
        ...

    def flush(self) -> None:
        """Wait until every queued message is delivered."""
        ...

    def close(self) -> None:
        """Flush and release the connection."""
        ...
