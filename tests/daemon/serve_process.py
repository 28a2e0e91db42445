"""``streamlearn serve`` as a real process for the Kafka tests, and its checkpoints.

Every process started here is recorded in ``Serve.running``; the daemon tests' fixture
kills whatever is still running when a test ends, passed or failed (see conftest.py).
Waits poll a condition until a generous deadline and fail at once, with the end of the
daemon's log, if the daemon exits while it is waited for.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import urllib.request
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from services import Tansu, free_port, wait_for

from streamlearn.checkpoint.store import CheckpointStore, read_checkpoint
from streamlearn.errors import CheckpointError

T = TypeVar("T")

#: each test daemon is the only member of its own group: Tansu holds a new member's
#: JoinGroup for half its session timeout (5 s with the default 10 s, its 2 s floor with
#: 4 s), which every start and restart of a daemon would otherwise wait
TEST_CONSUMER = {"session_timeout_ms": 4000, "heartbeat_interval_ms": 1000}
#: deadlines of waits on a daemon: far above what a quiet machine needs (seconds)
LEARN_TIMEOUT = 240.0
EXIT_TIMEOUT = 120.0


class Serve:
    """One ``streamlearn serve`` process reading ``topic`` in a group of its own.

    ``consumer`` sets more of the consumer's options (``--consumer-option``), e.g. a short
    ``request_timeout_ms`` so that a paused broker is noticed within seconds.
    """

    running: ClassVar[list[Serve]] = []

    def __init__(
        self,
        broker: Tansu,
        topic: str,
        directory: Path,
        *extra: str,
        consumer: dict[str, int] | None = None,
        command: list[str] | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        """``command``: the whole command line, instead of the one made here (which
        sets ``metrics_port`` first); ``env``: the process's environment, if not ours."""
        self.directory = directory
        if command is None:
            command = self._default_command(broker, topic, directory, extra, consumer)
        self.log_path = directory.with_suffix(".log")
        self.log = self.log_path.open("ab")
        try:
            self.process = subprocess.Popen(
                command, stdout=subprocess.DEVNULL, stderr=self.log, env=env
            )
        except BaseException:
            self.log.close()
            raise
        Serve.running.append(self)

    def _default_command(
        self,
        broker: Tansu,
        topic: str,
        directory: Path,
        extra: tuple[str, ...],
        consumer: dict[str, int] | None,
    ) -> list[str]:
        self.metrics_port = free_port()
        options = [f"--consumer-option={name}={value}"
                   for name, value in {**TEST_CONSUMER, **(consumer or {})}.items()]  # fmt: skip
        return [
            sys.executable, "-m", "streamlearn", "serve", "--algo", "pdm", "--eps", "0.1",
            "--source", "kafka", "--bootstrap-servers", broker.bootstrap, "--topic", topic,
            "--group", f"g-{uuid.uuid4().hex[:8]}", "--checkpoint-dir", str(directory),
            "--idle-replay", "off", "--checkpoint-every", "1000", "--checkpoint-interval", "1h",
            "--checkpoint-min-interval", "0",
            "--replay-every", "700", "--metrics-addr", f"127.0.0.1:{self.metrics_port}",
            *options,
            *extra,
        ]  # fmt: skip

    def log_tail(self) -> str:
        """The end of what the daemon printed (to its stderr, this file)."""
        return self.log_path.read_text(errors="replace")[-3000:]

    def wait(self, condition: Callable[[], T], what: str, timeout: float = LEARN_TIMEOUT) -> T:
        """The first truthy value of ``condition()``; fails if the daemon exits first."""

        def alive_and(condition: Callable[[], T] = condition) -> T:
            value = condition()
            if not value and self.process.poll() is not None:
                raise AssertionError(
                    f"the daemon exited with {self.process.returncode} while waiting for "
                    f"{what}:\n{self.log_tail()}"
                )
            return value

        try:
            return wait_for(alive_and, timeout=timeout, what=what)
        except TimeoutError as error:
            raise TimeoutError(f"{error}; the daemon's log:\n{self.log_tail()}") from error

    def wait_learned(self, count: int, timeout: float = LEARN_TIMEOUT) -> None:
        """Until the latest checkpoint holds exactly ``count`` examples."""
        self.wait(lambda: learned(self.directory) == count, f"{count} examples learned", timeout)

    def kill(self) -> None:
        """kill -9."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=EXIT_TIMEOUT)
        self._forget()

    def answers(self, path: str) -> bool:
        """Whether the daemon's HTTP endpoint answers ``path`` with 200 (an error status,
        a refused or a slow connection: False)."""
        url = f"http://127.0.0.1:{self.metrics_port}{path}"
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                return bool(response.status == 200)
        except OSError:  # urllib's URLError and HTTPError included
            return False

    def metric(self, name: str, **labels: str) -> float | None:
        """The value of one sample of the daemon's ``/metrics`` (None: not there, or the
        endpoint does not answer)."""
        from prometheus_client.parser import text_string_to_metric_families

        url = f"http://127.0.0.1:{self.metrics_port}/metrics"
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                text = response.read().decode()
        except OSError:
            return None
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name == name and sample.labels == labels:
                    return float(sample.value)
        return None

    def wait_started(self) -> None:
        """Until the daemon's HTTP endpoint answers: from then on it handles SIGTERM (a
        daemon still importing would die of it, with -15)."""
        self.wait(lambda: self.answers("/metrics"), "the daemon's endpoint")

    def stop(self) -> int:
        """SIGTERM once the daemon handles it, and the exit code once the daemon has
        checkpointed and exited."""
        self.wait_started()
        self.process.send_signal(signal.SIGTERM)
        try:
            code = self.process.wait(timeout=EXIT_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=EXIT_TIMEOUT)
            tail = self.log_tail()
            self._forget()
            raise AssertionError(
                f"the daemon did not exit within {EXIT_TIMEOUT} s of SIGTERM:\n{tail}"
            ) from None
        self._forget()
        return code

    def exit_code(self) -> int:
        """The exit code of a daemon expected to end by itself (an error at start)."""
        try:
            code = self.process.wait(timeout=EXIT_TIMEOUT)
        finally:
            if self.process.poll() is not None:
                self._forget()
        return code

    def _forget(self) -> None:
        self.log.close()
        if self in Serve.running:
            Serve.running.remove(self)

    @classmethod
    def kill_all(cls) -> None:
        """kill -9 every daemon still running (a test's teardown)."""
        for serve in list(cls.running):
            if serve.process.poll() is None:
                serve.process.kill()
            serve.process.wait(timeout=EXIT_TIMEOUT)
            serve._forget()


def latest(directory: Path) -> dict[str, Any] | None:
    """The payload of the latest checkpoint in ``directory`` (None: none yet)."""
    found = CheckpointStore(directory).latest() if directory.exists() else None
    return found[1].payload if found is not None else None


#: examples learned by checkpoint file (path, mtime, size): a checkpoint file is written
#: once, so the waits that poll ``learned`` decode each one once, not every 50 ms
_LEARNED: dict[tuple[Path, int, int], int] = {}


def learned(directory: Path) -> int:
    """The examples the latest readable checkpoint in ``directory`` has learned (0: none)."""
    for path in CheckpointStore(directory).paths() if directory.exists() else []:
        try:
            stat = path.stat()
        except FileNotFoundError:  # rotated away since it was listed
            continue
        key = (path, stat.st_mtime_ns, stat.st_size)
        if key not in _LEARNED:
            try:
                payload = read_checkpoint(path).payload
            except CheckpointError:
                continue
            _LEARNED[key] = int(payload["job"]["stream_examples"])
        return _LEARNED[key]
    return 0


def read_topic(broker: Tansu, name: str, count: int, *, quiet: float = 1.0) -> list[Any]:
    """The records of partition 0 of ``name`` from its beginning: polled until ``count``
    came (within a generous deadline), then ``quiet`` seconds more for any extra one."""
    import time

    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False)
    records: list[Any] = []

    def fetch(timeout_ms: int) -> None:
        for batch in consumer.poll(timeout_ms=timeout_ms).values():
            records.extend(batch)

    try:
        consumer.assign([TopicPartition(name, 0)])
        consumer.seek_to_beginning()
        wait_for(
            lambda: fetch(200) or len(records) >= count,
            timeout=LEARN_TIMEOUT,
            interval=0.0,
            what=f"{count} records on {name}",
        )
        deadline = time.monotonic() + quiet
        while time.monotonic() < deadline:
            fetch(100)
    finally:
        consumer.close()
    return records
