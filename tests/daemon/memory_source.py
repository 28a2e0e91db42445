"""An in-memory message source and sink for unit tests of the daemon's logic."""

from __future__ import annotations

from collections.abc import Sequence

from streamlearn.sources.base import Message, MessageBatch, Positions, Undelivered
from streamlearn.sources.headers import Header


class MemorySource:
    """Messages of one or more partitions, polled in round-robin batches."""

    def __init__(self, partitions: dict[int, list[bytes]], per_poll: int = 3) -> None:
        self.partitions = partitions
        self.per_poll = per_poll
        self.stream = "memory"
        self.next: Positions = dict.fromkeys(partitions, 0)
        self.committed: Positions = {}

    def poll(self, timeout: float, max_messages: int) -> MessageBatch:
        out = []
        for partition, values in self.partitions.items():
            start = self.next[partition]
            for offset in range(start, min(start + self.per_poll, len(values))):
                out.append(Message(values[offset], b"k%d" % offset, {}, partition, offset))
            self.next[partition] = (
                start + len(out) - sum(1 for m in out if m.partition != partition)
            )
        return MessageBatch.from_messages(out[:max_messages] if len(out) <= max_messages else out)

    def position(self) -> Positions:
        return dict(self.next)

    def seek(self, positions: Positions) -> None:
        self.next.update(positions)

    def commit(self, positions: Positions) -> None:
        self.committed = dict(positions)

    def ready(self) -> bool:
        return True

    def exhausted(self) -> bool:
        return all(self.next[p] >= len(v) for p, v in self.partitions.items())

    def lag(self) -> Positions:
        return {p: len(v) - self.next[p] for p, v in self.partitions.items()}

    def close(self) -> None:
        pass


class ListSink:
    """Keeps what is sent (and where each answer's input came from)."""

    def __init__(self) -> None:
        self.sent: list[tuple[bytes | None, bytes]] = []
        self.origins: list[tuple[int, int]] = []
        self.headers: list[list[Header]] = []

    def send(
        self,
        key: bytes | None,
        value: bytes | None,
        *,
        origin: tuple[int, int],
        headers: Sequence[Header] = (),
    ) -> None:
        self.sent.append((key, value))
        self.origins.append(origin)
        self.headers.append(list(headers))

    def undelivered(self) -> list[Undelivered]:
        return []

    def flush(self, timeout: float) -> int:
        return 0

    def close(self) -> None:
        pass
