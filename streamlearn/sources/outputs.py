"""What the serve loop writes besides its model: answers to the predictions sink,
rejected and unreadable messages to the dead-letter sink and the logs, and the account
of what the sinks could not deliver.

A sink's failure never stops learning: an undelivered message is logged (the first
few of each report one by one) and counted, and the stream goes on. What is still on
its way holds a checkpoint back (:meth:`Outputs.deliver_sent`), so that a restart sends
it again rather than losing it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

from streamlearn.errors import UndeliveredError
from streamlearn.parse import Rejected
from streamlearn.parse.messages import VALUE_LENGTH
from streamlearn.sources.base import MessageBatch, Sink, Unreadable
from streamlearn.sources.rejected import RejectedLog, rejected_line
from streamlearn.sources.stopping import StopBudget
from streamlearn.sources.unreadable import UnreadableLog, dead_letter_headers

log = logging.getLogger("streamlearn.daemon")
#: the sinks' names in the logs and the metrics, and what each of their messages is
SINKS = {"predictions": "prediction", "dead_letters": "dead letter"}
#: undelivered messages logged one by one at each report (the rest are only counted)
SHOWN_UNDELIVERED = 5


class OutputCounts(Protocol):
    """The counters :class:`Outputs` moves (the daemon's observer)."""

    def count_examples(self, outcome: str, n: int) -> None: ...
    def count_rejected(self, reason: str, n: int) -> None: ...
    def count_undelivered(self, sink: str, n: int) -> None: ...
    def count_unreadable(self, reason: str, n: int) -> None: ...
    def count_skipped(self, reason: str, n: int) -> None: ...


class Outputs:
    """The predictions and dead-letter sinks (either may be None: nothing is sent there),
    with the logs and counters of what goes to them; ``stream`` names the source in the
    logs of rejected lines."""

    def __init__(
        self,
        sink: Sink | None,
        dead_letters: Sink | None,
        counts: OutputCounts,
        budget: StopBudget,
        clock: Callable[[], float],
        stream: str,
    ) -> None:
        self.sink = sink
        self.dead_letters = dead_letters
        self.counts = counts
        self.budget = budget
        self.clock = clock
        self.stream = stream
        self.rejected_log = RejectedLog(log)
        self._unreadable_log = UnreadableLog(log)

    def skipped(self, messages: MessageBatch) -> None:
        """Count the messages that hold no example: null values (tombstones) and empty
        ones (the decoder finds no line in them)."""
        lengths = messages.spans[VALUE_LENGTH]
        null, empty = int((lengths < 0).sum()), int((lengths == 0).sum())
        if null:
            self.counts.count_skipped("null value", null)
        if empty:
            self.counts.count_skipped("empty value", empty)

    def answer(
        self, messages: MessageBatch, answers: Sequence[tuple[int, bytes]], answer_type: str
    ) -> None:
        """Send each answer, keyed like the message that asked it."""
        if self.sink is None or not answers:
            return
        send = self.sink.send
        headers = [("content-type", answer_type.encode())]
        for owner, answer in answers:
            send(messages.key(owner), answer, origin=origin(messages, owner), headers=headers)

    def reject(
        self, messages: MessageBatch, first_lines: npt.NDArray[np.int64], rejected: list[Rejected]
    ) -> None:
        """Count and log each rejected line; send each message holding one, whole, to
        the dead letters (a null value stays null)."""
        for item in rejected:
            self.counts.count_rejected(item.reason, 1)
        self.counts.count_examples("rejected", len(rejected))
        lines = np.array([r.line for r in rejected], dtype=np.int64)
        owned = owners(first_lines, lines)
        for owner, item in zip(owned.tolist(), rejected, strict=True):
            partition, offset = origin(messages, owner)
            line = item.line - int(first_lines[owner]) + 1
            self.rejected_log.report(
                rejected_line(self.stream, partition, offset, line, item.reason)
            )
        if self.dead_letters is not None:
            for owner in sorted(set(owned.tolist())):
                self.dead_letters.send(
                    messages.key(owner), messages.raw_value(owner),
                    origin=origin(messages, owner), headers=messages.all_headers(owner),
                )  # fmt: skip

    def unreadable(self, skipped: Sequence[Unreadable]) -> None:
        """Report what the source skipped as unreadable: counted, logged once per reason
        and minute, sent raw to the dead letters."""
        for item in skipped:
            self.counts.count_unreadable(item.reason, 1)
            self._unreadable_log.report(item)
            if self.dead_letters is not None and item.raw is not None:
                self.dead_letters.send(
                    item.key, item.raw, origin=(item.partition, item.first_offset),
                    headers=dead_letter_headers(item),
                )  # fmt: skip

    def sinks(self) -> list[tuple[str, Sink]]:
        """The sinks there are, by their name in the logs and the metrics."""
        named = (("predictions", self.sink), ("dead_letters", self.dead_letters))
        return [(name, sink) for name, sink in named if sink is not None]

    def deliver_sent(self, flush_timeout: float) -> None:
        """Wait (``flush_timeout`` at most, less when a stop leaves less) for what was
        sent so far to be delivered or to fail (failures are reported). A checkpoint past
        their input messages while they are still on their way would lose them for good
        if the daemon then stopped: a restart from the checkpoint before sends them
        again. Raises :class:`UndeliveredError` when some are still on their way."""
        timeout = self.budget.cap(flush_timeout)
        deadline = self.clock() + timeout
        waiting = []
        for name, sink in self.sinks():
            on_their_way = sink.flush(max(0.0, deadline - self.clock()))
            if on_their_way:
                plural = "s" if on_their_way > 1 else ""
                waiting.append(f"{on_their_way} {SINKS[name]}{plural}")
        self.report_undelivered()
        if waiting:
            raise UndeliveredError(
                f"checkpoint not written: {' and '.join(waiting)} still on their way "
                f"after {timeout:.3g} s (is the broker reachable?)"
            )

    def report_undelivered(self) -> None:
        """Log and count the messages the sinks could not deliver: each is lost, but the
        stream goes on (a sink's failure must not stop learning)."""
        for name, sink in self.sinks():
            failed = sink.undelivered()
            if not failed:
                continue
            self.counts.count_undelivered(name, len(failed))
            for item in failed[:SHOWN_UNDELIVERED]:
                log.error("%s of partition %d offset %d not delivered (the stream goes on): %s",
                          SINKS[name], item.partition, item.offset, item.reason)  # fmt: skip
            if len(failed) > SHOWN_UNDELIVERED:
                log.error("%d more %ss not delivered", len(failed) - SHOWN_UNDELIVERED,
                          SINKS[name])  # fmt: skip


def origin(messages: MessageBatch, i: int) -> tuple[int, int]:
    """The partition and offset of message ``i``."""
    return int(messages.partitions[i]), int(messages.offsets[i])


def owners(first_lines: np.ndarray, lines: np.ndarray) -> np.ndarray:
    """Index of the message each line number belongs to (messages start at first_lines)."""
    return np.searchsorted(first_lines, lines, side="right") - 1
