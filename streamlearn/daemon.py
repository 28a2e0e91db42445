"""``streamlearn serve``: the long-running loop that learns from a stream of messages.

Each turn polls the source for a :class:`MessageBatch` (the messages as columns),
decodes it at once (one parser call for each run of svmlight messages), and takes its
examples in stream order: an unlabelled example is predicted (to the sink, keyed like its
message) by the model that has learned every labelled example before it, a labelled one
is learned. Python objects per message are made only for the rare paths: predictions,
rejected messages, msgpack ones.

**Ingestion first** (the default, ``replay=None``): every arriving example is learned
before any replay. While messages keep arriving, replay passes take at most
``replay_share`` of the wall time, and none while the lag grows
(:class:`~streamlearn.replay.policy.ReplayPolicy`); once the daemon has caught up, its idle time
is replay time (``idle_replay``), until the window's replay converges: while replay is
due the daemon polls without waiting, and replays whenever nothing has arrived. Its lag
thus stays bounded whenever examples arrive more slowly than it learns them without
replay.
A count-based ``replay`` schedule (replay after every ``every`` examples, as ``learn``
does) makes the model a function of the input alone, for reproducible runs; with
``idle_replay`` off too, it does not depend on arrival timing at all.

Every ``checkpoint_interval`` seconds while the model changes (new examples, or a
replay that went on once they stopped coming; and after
``checkpoint_every`` new examples when that is set, but then not sooner than
``checkpoint_min_interval`` after the last one; on request at once) it writes a
checkpoint holding the learner, its buffer and the source positions, and only then
commits those positions to the source. Time, not the example count, paces checkpoints
by default, so the disk traffic is bounded at any rate of examples. On start it restores the newest
readable checkpoint and seeks the source to its positions, so a crash loses nothing and
learns nothing twice; it refuses to start when checkpoints exist but none can be read,
or when they hold positions in another stream (another topic).

**Decoding ahead** (``decode_ahead``, on by default): a poll's messages are decoded on a
worker thread while the main thread learns the poll before, so parsing and learning
(both compiled, both releasing the GIL) run on two cores. Only the decoding moves: the
source, the learner, the sink and the checkpoints stay on the main thread, batches are
learned in the order they were polled, and a checkpoint holds the positions of what
was learned (a batch still being decoded is fetched again after a restart). The model is
the same, bit for bit, with or without it.

**The model** is whatever the :class:`~streamlearn.config.ModelSpec` builds: one binary
learner, or with ``one_vs_rest`` a :class:`~streamlearn.learn.ModelBank`. The daemon
only calls the :class:`~streamlearn.learn.Model` interface: the model decides which rows
it can learn (:meth:`~streamlearn.learn.Model.admit`: a binary learner wants one label
of +1 or -1, a bank takes label sets within its bounds), writes each prediction
(:meth:`~streamlearn.learn.Model.answers`: ``"score label"``, or a bank's JSON object)
and counts progressive accuracy (for a bank, the argmax label just before learning an
example against its label set). An example with no label is a prediction request. A
checkpoint holds either kind of model; the daemon refuses to restore one of the other
kind than it was started for (:class:`~streamlearn.errors.StateError`).

**What a source skips** (:class:`~streamlearn.sources.base.SkipsUnreadable`: a Kafka
batch with a bad CRC, a codec that fails, a decompression bomb...) is counted by reason,
logged once per reason and minute, and sent raw to the dead-letter topic; the positions
move past it. Messages without an example (null or empty values) are counted. A
partition whose messages wait and whose position does not move for ``stall_timeout``
turns :meth:`Daemon.ready` false.

**A stop** (:meth:`Daemon.request_stop`) ends the loop at the turn's end (a replay pass
between two rounds), then writes the last checkpoint within ``stop_timeout`` seconds:
every wait on a broker takes the time the shared :class:`StopBudget` leaves. A
checkpoint that would pass predictions or dead letters still on their way is then not
written, and the one before stands (nothing is lost).

**What it learns** is a mode (:mod:`streamlearn.modes`): one model, a learning group's
member (``group``, :mod:`streamlearn.group`), or one model per message key (``keyed``,
:mod:`streamlearn.keyed`). The loop hands each poll and post to its mode, which learns
and answers; the loop reports, sends and rejects what the mode returns, and never asks
which mode it runs.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from streamlearn.checkpoint.codec import DAEMON_KIND
from streamlearn.checkpoint.pacing import CheckpointPacing
from streamlearn.checkpoint.store import CheckpointStore
from streamlearn.config import (
    DEFAULT_MAX_LABELS,
    DEFAULT_MAX_WEIGHTS,
    MAX_LABELS_OPTION,
    MAX_WEIGHTS_OPTION,
    LearnerSpec,
    ModelSpec,
    check_max_labels,
    check_max_weights,
)
from streamlearn.delayed_labels import DelayedLabels, warn_if_dropped
from streamlearn.drift import DEFAULT_DELTA, DEFAULT_THRESHOLD, DriftWatch, PageHinkley
from streamlearn.errors import (
    CheckpointError,
    InvalidInputError,
    InvalidParameterError,
    StateError,
    UndeliveredError,
    UnknownKeyError,
)
from streamlearn.group.member import GroupMember
from streamlearn.http.live import Learned, LiveModel, Posted, settle
from streamlearn.http.pending import SharedPending
from streamlearn.keyed.models import KeyedModels
from streamlearn.learn import Model, ModelLimits
from streamlearn.learn.bank import state_to_write
from streamlearn.modes import (
    DecodedPoll,
    FirstLines,
    GroupMode,
    Intake,
    KeyedMode,
    Mode,
    Outcome,
    Poll,
    SingleModel,
)
from streamlearn.options import CHECKPOINTS, HTTP, INPUT, KAFKA, ON_OFF, REPLAY, command_line
from streamlearn.parse import ParsedRows, Rejected
from streamlearn.publishing import Readers
from streamlearn.replay import ReplaySchedule
from streamlearn.replay.policy import ReplayPolicy, Turn
from streamlearn.replay.runner import ReplayRunner
from streamlearn.sources.base import (
    GuardsPositions,
    MessageBatch,
    Positions,
    Sink,
    SkipsUnreadable,
    Source,
)
from streamlearn.sources.outputs import Outputs
from streamlearn.sources.progress import StallWatch
from streamlearn.sources.stopping import StopBudget

__all__ = ["Daemon", "DaemonSettings", "FirstLines", "Observer"]

log = logging.getLogger("streamlearn.daemon")
#: learning a batch without replay (the daemon paces replay itself)
NO_REPLAY = ReplaySchedule(every=0)
#: examples a poll is learned in pieces of when the drift test watches the error: its
#: resolution within a poll of standard input (up to a million lines)
DRIFT_PIECE = 512


class Observer(Protocol):
    """What the daemon reports as it goes (:class:`streamlearn.metrics.DaemonMetrics`)."""

    def count_examples(self, outcome: str, n: int) -> None: ...
    def count_rejected(self, reason: str, n: int) -> None: ...
    def count_progressive(self, correct: int, mistakes: int) -> None: ...
    def observe_learn_batch(self, seconds: float) -> None: ...
    def observe_replay(self, seconds: float) -> None: ...
    def observe_checkpoint(self, seconds: float, size_bytes: int, when: float) -> None: ...
    def count_undelivered(self, sink: str, n: int) -> None: ...
    def count_unreadable(self, reason: str, n: int) -> None: ...
    def count_skipped(self, reason: str, n: int) -> None: ...
    def set_lag(self, lag: Mapping[int, int]) -> None: ...
    def set_ready(self, ready: bool) -> None: ...
    def set_stalled(self, partitions: int) -> None: ...
    def set_held(self, partitions: int) -> None: ...
    def observe_drift(self, statistic: float, detected: bool) -> None: ...


class _Silent:
    """An observer that reports nothing."""

    def count_examples(self, outcome: str, n: int) -> None:
        pass

    def count_rejected(self, reason: str, n: int) -> None:
        pass

    def count_progressive(self, correct: int, mistakes: int) -> None:
        pass

    def observe_learn_batch(self, seconds: float) -> None:
        pass

    def observe_replay(self, seconds: float) -> None:
        pass

    def observe_checkpoint(self, seconds: float, size_bytes: int, when: float) -> None:
        pass

    def count_undelivered(self, sink: str, n: int) -> None:
        pass

    def count_unreadable(self, reason: str, n: int) -> None:
        pass

    def count_skipped(self, reason: str, n: int) -> None:
        pass

    def set_lag(self, lag: Mapping[int, int]) -> None:
        pass

    def set_ready(self, ready: bool) -> None:
        pass

    def set_stalled(self, partitions: int) -> None:
        pass

    def set_held(self, partitions: int) -> None:
        pass

    def observe_drift(self, statistic: float, detected: bool) -> None:
        pass


@dataclass(frozen=True)
class DaemonSettings:
    """How the loop paces itself (the learner and the source are given separately)."""

    #: a count-based replay schedule (deterministic: replays after every ``every``
    #: examples); None (default) replays in the time ingestion leaves: ``replay_share`` of
    #: the time while behind the stream and not falling further behind, all idle time
    #: (with ``idle_replay``) once caught up
    replay: ReplaySchedule | None = None
    replay_share: float = field(
        default=0.2, metadata=command_line("Share of time replaying while behind.", REPLAY, "X")
    )
    #: seconds after which a replay that timing decides (paced or idle) stops between two
    #: level-1 rounds of its pass, so that arriving messages wait little longer than this
    #: and one full epoch over the buffer
    replay_slice: float = 0.25
    #: a checkpoint after this many new examples as well (None: time alone decides)
    checkpoint_every: int | None = field(
        default=None,
        metadata=command_line("Checkpoint after N new examples too.", CHECKPOINTS, "N"),
    )
    checkpoint_interval: float = field(
        default=30.0,
        metadata=command_line(
            "Checkpoint after this long (30s, 5m, 1h).", CHECKPOINTS, "DURATION", duration=True
        ),
    )
    #: seconds between two checkpoints that ``checkpoint_every`` asks for, at the least
    checkpoint_min_interval: float = field(
        default=5.0,
        metadata=command_line(
            "Least time between two by --checkpoint-every.",
            CHECKPOINTS,
            "DURATION",
            duration=True,
        ),
    )
    idle_replay: bool = field(
        default=True,
        metadata=command_line("Replay while the source is idle.", INPUT, "on|off", choices=ON_OFF),
    )
    poll_timeout: float = 0.2
    #: most messages a turn takes from the source (a Kafka record batch that holds more
    #: is split across turns)
    max_messages: int = 1000
    #: seconds between snapshots of the learner's summary for the metrics, at least; and at
    #: least ``1 / summary_share`` times as long as the last snapshot took (a summary is a
    #: pass over the buffer per learner: large one-vs-rest banks take a while)
    summary_interval: float = 1.0
    summary_share: float = 0.05
    #: decode the next poll on a worker thread while the last one is learned
    decode_ahead: bool = True
    #: a one-vs-rest bank learns no more labels than this: a line that would bring more
    #: is rejected (``too many labels``)
    max_labels: int = field(default=DEFAULT_MAX_LABELS, metadata=MAX_LABELS_OPTION)
    #: and holds no more weights (labels times features) than this: a line that would
    #: grow it past them is rejected (``too many weights``)
    max_weights: int = field(default=DEFAULT_MAX_WEIGHTS, metadata=MAX_WEIGHTS_OPTION)
    #: seconds a checkpoint waits for the predictions and dead letters sent before it to
    #: be delivered; while some are still on their way (a broker outage) it is not written
    flush_timeout: float = 10.0
    #: with an HTTP API: seconds between two published copies of a changing model, at
    #: least; and at least ``1 / publish_share`` times as long as the last copy took
    publish_interval: float = 0.05
    publish_share: float = 0.05
    #: seconds a partition with messages waiting may make no progress before the daemon
    #: reports it stalled (``/readyz`` false, ``streamlearn_stalled_partitions``)
    stall_timeout: float = field(
        default=60.0,
        metadata=command_line(
            "No progress this long turns /readyz false.", KAFKA, "DURATION", duration=True
        ),
    )
    #: seconds a stop (SIGTERM, SIGINT) may take, its last checkpoint included: every wait
    #: on a broker after the signal takes the time left
    stop_timeout: float = 3.0
    #: the Page-Hinkley test's alarm level on the progressive error (0: no test) and its
    #: tolerance (see :mod:`streamlearn.drift`)
    drift_threshold: float = field(
        default=DEFAULT_THRESHOLD,
        metadata=command_line("Page-Hinkley alarm level of the error; 0: off.", HTTP, "H"),
    )
    drift_delta: float = field(
        default=DEFAULT_DELTA,
        metadata=command_line("Its tolerance of the error's rise.", HTTP, "D"),
    )

    def __post_init__(self) -> None:
        check_max_labels(self.max_labels)
        check_max_weights(self.max_weights)
        threshold = self.drift_threshold
        if not (math.isfinite(threshold) and threshold >= 0.0):
            raise InvalidParameterError(
                f"--drift-threshold must be >= 0 (0: no test), got {threshold!r}"
            )
        if not (math.isfinite(self.drift_delta) and self.drift_delta >= 0.0):
            raise InvalidParameterError(f"--drift-delta must be >= 0, got {self.drift_delta!r}")
        if not 0.0 <= self.replay_share < 1.0:  # NaN too
            raise InvalidParameterError(
                f"--replay-share must be in [0, 1), got {self.replay_share!r}"
            )
        every = self.checkpoint_every
        if every is not None and (
            isinstance(every, bool) or not (isinstance(every, int) and every >= 1)
        ):
            raise InvalidParameterError(
                f"--checkpoint-every must be an integer >= 1, got {self.checkpoint_every!r}"
            )
        if not self.checkpoint_interval > 0.0:  # NaN too
            raise InvalidParameterError(
                f"--checkpoint-interval must be > 0 seconds, got {self.checkpoint_interval!r}"
            )
        if not self.stall_timeout > 0.0:  # NaN too
            raise InvalidParameterError(
                f"--stall-timeout must be > 0 seconds, got {self.stall_timeout!r}"
            )
        if not self.checkpoint_min_interval >= 0.0:  # NaN too
            raise InvalidParameterError(
                "--checkpoint-min-interval must be >= 0 seconds, got "
                f"{self.checkpoint_min_interval!r}"
            )

    @property
    def limits(self) -> ModelLimits:
        """What the stream may make the model hold."""
        return ModelLimits(max_labels=self.max_labels, max_weights=self.max_weights)


@dataclass(frozen=True)
class _InFlight:
    """A polled batch being decoded on the worker thread, and the source's positions
    just after it (the daemon's positions once it is learned)."""

    messages: MessageBatch
    decoded: Future[DecodedPoll]
    positions: Positions


#: what a failed final checkpoint leaves
_AGAIN = (
    "The next start resumes from the last checkpoint written (if any) and reads the "
    "messages after it again"
)


class Daemon:
    """The serve loop over injected parts: source, sink, decoder, store and observer."""

    def __init__(
        self,
        spec: LearnerSpec | ModelSpec,
        source: Source,
        *,
        decode: Callable[[MessageBatch], tuple[ParsedRows, FirstLines]],
        settings: DaemonSettings,
        store: CheckpointStore | None = None,
        sink: Sink | None = None,
        dead_letters: Sink | None = None,
        observer: Observer | None = None,
        live: LiveModel | None = None,
        group: Callable[[Model], GroupMember] | None = None,
        keyed: KeyedModels | None = None,
        budget: StopBudget | None = None,
        clock: Callable[[], float] = time.monotonic,
        pending: SharedPending | None = None,
        labels: Source | None = None,
    ) -> None:
        self.spec = spec if isinstance(spec, ModelSpec) else ModelSpec(spec)
        self.source = source
        self.decode = decode
        self.settings = settings
        self.store = store
        self.observer: Observer = observer if observer is not None else _Silent()
        self.clock = clock
        learner = self.spec.build()
        #: what the loop learns: one model, a learning group's member, keyed models
        self.mode: Mode = (
            KeyedMode(learner, keyed) if keyed is not None
            else GroupMode(learner, group) if group is not None
            else SingleModel(learner)
        )  # fmt: skip
        self.stream_examples = 0
        self.positions: Positions = {}
        self.restored = False
        self._stop = False
        self._checkpoints = CheckpointPacing(
            settings.checkpoint_interval, settings.checkpoint_every,
            settings.checkpoint_min_interval, last=clock(),
        )  # fmt: skip
        self._mistakes_seen = 0
        self._presented_seen = 0
        self._replay_policy = ReplayPolicy(
            idle_replay=settings.idle_replay, share=settings.replay_share,
            pass_limit=settings.replay_slice, paced=settings.replay is None,
        )  # fmt: skip
        self._replays = ReplayRunner(self._replay_policy, clock, self.observer.observe_replay,
                                     lambda: self._stop)  # fmt: skip
        #: whether the source had nothing waiting at the last look (unknown lag counts as
        #: caught up: then only an empty poll tells)
        self._caught_up = True
        #: the learner's summary as of the last snapshot (read by the metrics thread)
        self.snapshot: dict[str, Any] | None = None
        #: what the HTTP API reads (published copies) and writes (examples to learn)
        self.live = live
        pending = pending if pending is not None or live is None else live.pending
        if labels is not None and pending is None:
            raise InvalidParameterError("a labels topic needs a store of pending examples")
        #: examples predicted with an id, waiting for their label (None: none are kept),
        #: and the labels topic, whose messages label them by key
        self.delayed = None if pending is None else DelayedLabels(pending, labels)
        #: a count of the learned batches and replay passes: the model's version
        self.version = 0
        #: the copies the HTTP API answers with and the summaries, each when due
        self.readers = Readers(settings, live, clock)
        #: a polled batch being decoded ahead (see :meth:`_turn_until_stopped`)
        self._in_flight: _InFlight | None = None
        #: the deadline of a stop, shared with the parts that wait on brokers
        self.budget = budget if budget is not None else StopBudget(clock)
        #: where answers, rejections and unreadable messages go
        self.outputs = Outputs(sink, dead_letters, self.observer, self.budget, clock,
                               source.stream)  # fmt: skip
        #: the test of the progressive error for a rise (concept drift)
        self._drift = None if settings.drift_threshold == 0.0 else DriftWatch(
            PageHinkley(settings.drift_delta, settings.drift_threshold),
            self.observer.observe_drift,
        )  # fmt: skip
        self._intake = Intake(
            settings.limits, settings.replay or NO_REPLAY, answering=sink is not None,
            clock=clock, piece=None if self._drift is None else DRIFT_PIECE,
        )  # fmt: skip
        #: partitions with messages waiting that made no progress for ``stall_timeout``
        self._stalls = StallWatch(settings.stall_timeout, self.observer.set_stalled)
        #: partitions the source holds back (their log went back behind the position)
        self._held = 0
        #: whether the run ended with nothing left unsaved: its last checkpoint written
        #: (or, stopped while deliveries wait on a broker, the one before standing)
        self.settled = False

    # -- control (signal handlers and HTTP call these) -----------------------------------

    def request_stop(self) -> None:
        """Finish the current batch, checkpoint, commit and return from :meth:`run`,
        within ``stop_timeout`` seconds (waits on brokers take the time left)."""
        self._stop = True
        self.budget.begin(self.settings.stop_timeout)

    def request_checkpoint(self) -> None:
        """Write a checkpoint at the end of the current turn."""
        self._checkpoints.requested = True

    def ready(self) -> bool:
        """Restored, connected to the source, and no partition stalled."""
        return self.restored and self.source.ready() and not self._stalls.stalled

    @property
    def learner(self) -> Model:
        """The model (for keyed models: what a new key's model is)."""
        return self.mode.learner

    # -- the loop ----------------------------------------------------------------------------

    def restore(self) -> None:
        """Load the newest readable checkpoint (if any) and seek the source to it.

        Refuses (:class:`CheckpointError`, :class:`StateError`) a directory whose
        checkpoints are all unreadable, and a checkpoint of another stream: either would
        otherwise start from the wrong offsets and leave data out of the model for good.
        """
        latest = None if self.store is None else self.store.latest_to_resume()
        fallback = False
        log_ends: Positions = {}
        if latest is not None:
            path, checkpoint = latest
            payload = checkpoint.payload
            fallback = self.store is not None and path != self.store.paths()[0]
            restored = _resumable(self.spec, payload, path, self.source.stream)
            try:
                positions_stand = self.mode.restored(restored, payload, self.spec.build)
            except StateError as exc:
                raise StateError(f"checkpoint {path}: {exc}") from exc
            try:
                self.stream_examples = int(payload["job"]["stream_examples"])
                self.positions = {int(p): int(o) for p, o in payload["positions"].items()}
                log_ends = {int(p): int(o) for p, o in payload.get("log_ends", {}).items()}
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                raise StateError(f"{path}: malformed daemon checkpoint ({exc})") from exc
            if self.delayed is not None:
                self.delayed.restore(payload, path)
            else:
                warn_if_dropped(payload, path)
            log.info("restored %s: %d examples", path, self.stream_examples)
            if not positions_stand:  # where partitions resume lives elsewhere
                self.positions, log_ends = {}, {}
        if self.mode.join():
            self.version += 1
        self._presented_seen, self._mistakes_seen = self.mode.progressive()
        self._checkpoints.examples = self.stream_examples
        self._checkpoints.version = self._state_version()
        self.source.seek(dict(self.positions))
        if self.delayed is not None:
            self.delayed.seek()
        if isinstance(self.source, GuardsPositions):
            if fallback:  # the committed offsets may come from the checkpoints skipped
                log.warning("fell back to an older checkpoint: partitions it holds no "
                            "position for start at their logs' start")  # fmt: skip
            self.source.expect(log_ends, others_from_earliest=fallback)
        self.restored = True

    # -- a learning group's partitions (the source calls these during its polls) -------

    def partitions_assigned(self, partitions: set[int]) -> Positions:
        """Where to resume partitions the consumer group gave this daemon: where the
        learning group's model ends in them."""
        starts = self.mode.assigned(partitions)
        if starts is None:
            return {}
        self.version += 1
        return starts

    def partitions_revoking(self, partitions: set[int]) -> None:
        """The consumer group takes ``partitions`` away: learn what was polled from
        them, then publish where this daemon stopped (a group member), or write their
        keys' models (keyed models), for their next owner."""
        if not self.mode.hands_over:
            return
        if self._in_flight is not None:
            in_flight, self._in_flight = self._in_flight, None
            self._finish(in_flight)
        self.mode.revoking(partitions, self.positions)

    def run(self) -> None:
        """Turn until stopped or the source is exhausted; then checkpoint and commit."""
        if not self.restored:
            self.restore()
        self._publish()
        try:
            if self.settings.decode_ahead:
                with ThreadPoolExecutor(1, thread_name_prefix="streamlearn-decode") as worker:
                    self._turn_until_stopped(worker)
            else:
                self._turn_until_stopped(None)
            self._learn_posted()
        finally:
            if self.live is not None:
                self.live.close()
            self.outputs.rejected_log.flush()
        if self.source.exhausted():  # the end of the input: delta 'auto' settles from what came
            self.learner.flush()
            self.version += 1
            if self._replays.at_the_end(self.mode.replayed):
                self.version += 1
        self.mode.finishing()
        try:
            self.checkpoint()
        except UndeliveredError as exc:
            if not self._stop:
                raise CheckpointError(f"final checkpoint failed: {exc}. {_AGAIN}") from exc
            # a stop does not wait for a broker that does not answer: nothing is lost
            log.warning("%s: the last checkpoint written stands, and the next start reads "
                        "the messages after it again", exc)  # fmt: skip
            self.settled = True
        except CheckpointError as exc:
            raise CheckpointError(f"final checkpoint failed: {exc}. {_AGAIN}") from exc
        else:
            self.settled = True
        self.take_snapshot()

    def _turn_until_stopped(self, worker: ThreadPoolExecutor | None) -> None:
        """The turns of :meth:`run`; with a ``worker``, each poll is decoded there while
        the poll before it is learned (at most one batch in flight)."""
        self._in_flight = None
        while not self._stop:
            self._learn_posted()  # what came over HTTP before this poll
            self._learn_labels()
            # with a batch in flight, or replay to do while idle, only take what has
            # already arrived: a steady stream slower than the poll timeout still
            # leaves its gaps to replay
            replayed = self.mode.replayed
            waits = self._replay_policy.poll_waits(
                self._in_flight is not None, self._caught_up, len(replayed.buffer),
                replayed.converged,
            )  # fmt: skip
            timeout = self.settings.poll_timeout if waits else 0.0
            # a rebalance during the poll may learn the batch in flight (see
            # partitions_revoking): it is read again after the poll
            messages = self.source.poll(timeout, self.settings.max_messages)
            behind = bool(len(messages))
            in_flight: _InFlight | None = self._in_flight
            if len(messages) and worker is not None:
                self._in_flight = _InFlight(
                    messages,
                    worker.submit(DecodedPoll.of, self.decode, messages),
                    self.source.position(),
                )
                if in_flight is not None:
                    self._finish(in_flight)
            elif len(messages):
                self.process(messages)
            elif in_flight is not None:
                self._in_flight = None
                self._finish(in_flight)
            elif self.source.exhausted():
                break
            self._skip_unreadable()
            self._watch_held()
            lag = self.source.lag()
            now = self.clock()
            self._stalls.look(self.source.position(), lag, now)
            self._caught_up = not any(lag.values())
            turn = Turn(
                now, len(messages), sum(lag.values()) if lag else None, len(replayed.buffer),
                replayed.converged, in_flight=in_flight is not None,
            )  # fmt: skip
            if self._replays.after(turn, self.mode.replay):
                self.version += 1
            if self.mode.turned(idle=not behind and self._caught_up):
                self.version += 1
            self.readers.publish_if_due(self.version, self.mode.predictor)
            self.outputs.report_undelivered()
            self.observer.set_ready(self.ready())
            self.observer.set_lag(lag)
            if self._checkpoint_due():
                self._checkpoint_or_carry_on()
            if self.readers.summary_due():
                self.take_snapshot()
        if self._in_flight is not None:  # stopped: the polled batch is learned before the end
            in_flight, self._in_flight = self._in_flight, None
            self._finish(in_flight)

    def _finish(self, in_flight: _InFlight) -> None:
        self._apply(in_flight.messages, in_flight.decoded.result(), in_flight.positions)

    def process(self, messages: MessageBatch) -> None:
        """Decode a poll's messages together; predict the unlabelled examples and learn
        the labelled ones, in stream order."""
        self._apply(messages, DecodedPoll.of(self.decode, messages), self.source.position())

    def _apply(self, messages: MessageBatch, decoded: DecodedPoll, positions: Positions) -> None:
        """Predict, learn and reject what ``messages`` decoded to; then the daemon is at
        ``positions``."""
        self.outputs.skipped(messages)
        done = self.mode.learn_poll(
            Poll(messages, decoded, positions, self.stream_examples), self._intake
        )
        self._took(done)
        if decoded.unlabelled is not None:
            self.observer.count_examples("predicted", decoded.unlabelled.n_rows)
            if self.delayed is not None:
                self.delayed.keep_keyed(messages, decoded, self.learner)
        self.outputs.answer(messages, done.answers, self.learner.answer_type)
        if done.rejected:
            self.outputs.reject(messages, decoded.first_lines(), done.rejected)
        self.positions = positions

    def _took(self, done: Outcome) -> None:
        """Take the count of stream examples a mode's learning left, and report what it
        learned: the time it took, its examples, and the progressive accuracy's new
        judgements (examples held for delta='auto' are presented, and judged, later,
        all at once; a group's common model judges its member's examples)."""
        self.stream_examples = done.seen
        if done.learned is None:
            return
        self.version += 1
        self.observer.observe_learn_batch(self.clock() - done.started)
        self.observer.count_examples("learned", done.learned)
        presented, mistakes = self.mode.progressive()
        new = (presented - self._presented_seen, mistakes - self._mistakes_seen)
        self._presented_seen, self._mistakes_seen = presented, mistakes
        judged, wrong = done.judged if done.judged is not None else new
        self.observer.count_progressive(judged - wrong, wrong)
        if self._drift is not None:
            pieces = done.pieces if done.judged is None and done.pieces else [(judged, wrong)]
            self._drift.watch(pieces, self.stream_examples)

    def _skip_unreadable(self) -> None:
        """Report what the source skipped as unreadable since the last turn (counted,
        logged once per reason and minute, sent raw to the dead-letter topic); with no
        batch in flight, the daemon then stands where the source does, past it."""
        source = self.source
        if not isinstance(source, SkipsUnreadable):
            return
        skipped = source.unreadable()
        if not skipped:
            return
        self.outputs.unreadable(skipped)
        if self._in_flight is None:  # every message the source returned is applied
            self.positions = self.source.position()
            self.mode.stands_at(self.positions)

    def _watch_held(self) -> None:
        """Count the partitions the source holds back (the source logs why)."""
        if isinstance(self.source, GuardsPositions):
            held = len(self.source.held())
            if held != self._held:
                self.observer.set_held(held)
                self._held = held

    def take_snapshot(self) -> None:
        """Store the learner's summary for readers on other threads."""
        self.readers.summarise(self._summarise)

    def _summarise(self) -> dict[str, Any]:
        snapshot = self.mode.snapshot(self.stream_examples)
        pending = {} if self.delayed is None else {"pending": self.delayed.counts()}
        self.snapshot = {**snapshot, **pending}
        if self.live is not None:
            self.live.describe({**self.mode.description(self.snapshot), **pending})
        return self.snapshot

    # -- the HTTP API --------------------------------------------------------------------

    def _learn_posted(self) -> None:
        """Learn the examples posted to the HTTP API since the last turn, in the order
        they came; then publish a copy that holds them and tell their posters."""
        live = self.live
        if live is None or not live.has_posted():
            return
        done = []
        for posted in live.take_posted():
            try:
                learned, rejected, refused = self._learn_post(posted)
            except (UnknownKeyError, InvalidInputError) as exc:
                settle(posted.done, error=exc)
                continue
            if rejected:
                self.observer.count_examples("rejected", len(rejected))
                for item in rejected:
                    self.observer.count_rejected(item.reason, 1)
            if refused:  # counted by the store, by reason
                rejected = sorted([*rejected, *refused], key=lambda item: item.line)
            done.append((posted, learned, rejected))
        self._publish()
        held = self.learner.held_examples
        for posted, learned, rejected in done:
            settle(posted.done, Learned(learned, rejected, self.readers.version, held))

    def _learn_post(self, posted: Posted) -> tuple[int, list[Rejected], list[Rejected]]:
        """Learn one post by the model it names (examples, or labels of examples kept by
        id); how many examples it learned, those the model refused and the labels that
        found no example. Raises :class:`UnknownKeyError` for a key without a model here,
        and :class:`InvalidInputError` for a post that names no key to keyed models (or
        one to the one model)."""
        refused: list[Rejected] = []
        if posted.joins is None:
            done = self.mode.learn_post(posted, self._intake, self.stream_examples)
        else:
            assert self.delayed is not None
            joined, refused = self.delayed.learn(
                posted.joins,
                lambda rows: self.mode.learn_post(rows, self._intake, self.stream_examples),
            )
            if joined is None:
                return 0, [], refused
            done = joined
        self._took(done)
        return done.learned or 0, done.rejected, refused

    def _learn_labels(self) -> None:
        """Learn the examples that the labels topic's new messages label."""
        delayed, settings = self.delayed, self.settings
        labelled = (
            None if delayed is None else delayed.poll_labels(settings.max_messages, self.observer)
        )
        if labelled is not None:
            for item in self._learn_post(labelled)[1]:
                self.observer.count_rejected(item.reason, 1)

    def _publish(self) -> None:
        """Give the HTTP API a frozen copy of the model as it is now."""
        self.readers.publish(self.version, self.mode.predictor)

    def _state_version(self) -> int:
        """What a checkpoint would hold, as a count of changes: the model's version and
        the changes of the examples waiting for their label."""
        return self.version + (0 if self.delayed is None else self.delayed.changes)

    def _checkpoint_due(self) -> bool:
        return self._checkpoints.due(self.clock(), self.stream_examples, self._state_version())

    def _checkpoint_or_carry_on(self) -> None:
        """A checkpoint during the run: one that fails (a full disk, say) is logged and
        tried again when the next one is due, while the daemon goes on learning; the last
        good checkpoint stays and the source commits nothing meanwhile. Only the final
        checkpoint's failure ends the run."""
        try:
            self.checkpoint()
        except CheckpointError as exc:
            log.error("%s; learning goes on, the next checkpoint is due as if this one "
                      "had been written", exc)  # fmt: skip
            self._checkpoints.mark(self.clock(), self.stream_examples, self._state_version())

    def checkpoint(self) -> None:
        """Write the learner, buffer and positions; then commit the positions (without a
        store, nothing is written or committed: the sinks are flushed).

        Raises :class:`CheckpointError`, writing and committing nothing, when the disk
        fails or when predictions or dead letters sent before are still on their way
        (see :meth:`_deliver_sent`).
        """
        self._checkpoints.requested = False
        self.outputs.deliver_sent(self.settings.flush_timeout)
        if self.store is not None:
            started = self.clock()
            extra = self.mode.checkpoint_extra()
            if extra is None:
                log.warning("checkpoint skipped: this member's record could not be "
                            "published, which the checkpoint must match; the next one is "
                            "due as if it had been written")  # fmt: skip
                self._checkpoints.mark(self.clock(), self.stream_examples, self._state_version())
                return
            path = self.store.write({**self.payload(), **extra})
            seconds = self.clock() - started
            size = path.stat().st_size
            self.observer.observe_checkpoint(seconds, size, time.time())
            log.info("checkpoint %s: %d examples, %d bytes, %.2f s",
                     path, self.stream_examples, size, seconds)  # fmt: skip
            self.mode.commit(self.source, self.positions)
            if self.delayed is not None:
                self.delayed.commit()
        else:  # keyed models' records on the state topic are their checkpoint
            started = self.clock()
            saved = self.mode.save()
            if saved is not None:
                self.observer.observe_checkpoint(self.clock() - started, saved, time.time())
                self.source.commit(dict(self.positions))
        self._checkpoints.mark(self.clock(), self.stream_examples, self._state_version())

    def payload(self) -> dict[str, Any]:
        """What a checkpoint holds."""
        payload = {
            "kind": DAEMON_KIND,
            "learner": state_to_write(self.learner),  # a bank lends its rows: write at once
            "positions": {str(p): o for p, o in self.positions.items()},
            "stream": self.source.stream,
            "job": {"stream_examples": self.stream_examples},
        }
        if isinstance(self.source, GuardsPositions):  # a restart checks the logs against them
            payload["log_ends"] = {str(p): end for p, end in self.source.log_ends().items()}
        if self.delayed is not None:
            payload.update(self.delayed.payload())
        return payload


def _resumable(spec: ModelSpec, payload: Mapping[str, Any], path: Path, stream: str) -> Model:
    """The model a daemon checkpoint holds, refused (:class:`StateError`) when its
    positions are in another stream (a checkpoint of another topic) or its model is not
    the kind (bank or binary) ``spec`` asks for."""
    held_stream = payload.get("stream")
    if held_stream is None:  # written before checkpoints named their stream
        log.info("%s does not name its stream: its positions are taken as %s's",
                 path, stream)  # fmt: skip
    elif held_stream != stream:
        raise StateError(
            f"checkpoint {path} holds positions in {held_stream}, not in {stream}: start "
            "with the same source, or with another --checkpoint-dir to start afresh"
        )
    model = spec.restore(payload["learner"])
    held = spec.kind_problem(model)
    if held is not None:
        start = "without" if spec.one_vs_rest else "with"
        raise StateError(
            f"checkpoint {path} holds {held}: start serve {start} --one-vs-rest, "
            "or with another --checkpoint-dir"
        )
    return model
