"""A stop always stops: SIGTERM (or SIGINT) ends a real ``serve`` process with exit 0,
its last checkpoint written, within 5 s in every state it can be in: a broker that went
away or does not answer, a batch its codec cannot read, a replay, a rebalance, a group
member publishing, keyed models spilling, an HTTP API under load. A second signal ends it
at once, with 128 + the signal's number. Each test prints the latency it measured."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
from group_process import Member
from kafka_producers import librdkafka, send_all
from serve_process import EXIT_TIMEOUT, LEARN_TIMEOUT, TEST_CONSUMER, Serve, latest, learned
from services import Tansu, free_port, wait_for
from test_serve_kafka import svmlight_messages
from test_serve_keyed import Keyed

pytestmark = pytest.mark.kafka

#: the longest a stop may take (seconds)
STOP_LIMIT = 5.0
LINES = 10


def timed_stop(serve: Serve, sig: int = signal.SIGTERM) -> tuple[int, float]:
    """Send ``sig`` once the daemon handles signals; its exit code and the seconds from
    the signal to its exit."""
    serve.wait_started()
    started = time.monotonic()
    serve.process.send_signal(sig)
    code = serve.process.wait(timeout=EXIT_TIMEOUT)
    took = time.monotonic() - started
    serve._forget()
    return code, took


def stops_cleanly(serve: Serve, state: str, *, checkpoint: bool = True) -> float:
    """SIGTERM: exit 0 within :data:`STOP_LIMIT`, the last checkpoint written (its
    examples are those the daemon learned); the latency, printed."""
    before = learned(serve.directory)
    code, took = timed_stop(serve)
    print(f"stop latency, {state}: {took:.2f} s (exit {code})")
    log = serve.log_path.read_text(errors="replace")
    assert code == 0, log[-3000:]
    assert took <= STOP_LIMIT, log[-3000:]
    assert "Traceback" not in log, log[-3000:]
    assert "took longer than" not in log  # the watchdog did not have to end it
    if checkpoint:  # the last one, written after the signal, holds all it learned
        assert learned(serve.directory) >= before
        assert log.rindex("checkpoint ") > log.rindex("then checkpoint and exit")
    return took


def topic_with(broker: Tansu, messages: int, partitions: int = 1, seed: int = 1) -> str:
    topic = f"t-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, partitions)
    values = svmlight_messages(messages, LINES, seed=seed)
    for partition in range(partitions):
        broker.produce(topic, values[partition::partitions], partition=partition)
    return topic


def serve_command(broker: Tansu, topic: str, directory: Path, *extra: str) -> tuple[list[str], int]:
    """``serve`` as users start it: the daemon's own replay pacing, idle replay on."""
    port = free_port()
    options = [f"--consumer-option={name}={value}" for name, value in TEST_CONSUMER.items()]
    command = [
        sys.executable, "-m", "streamlearn", "serve", "--algo", "pdm", "--eps", "0.1",
        "--delta", "1", "--source", "kafka", "--bootstrap-servers", broker.bootstrap,
        "--topic", topic, "--group", f"g-{uuid.uuid4().hex[:8]}",
        "--checkpoint-dir", str(directory), "--metrics-addr", f"127.0.0.1:{port}",
        *options, *extra,
    ]  # fmt: skip
    return command, port


def started(broker: Tansu, topic: str, directory: Path, *extra: str) -> Serve:
    command, port = serve_command(broker, topic, directory, *extra)
    serve = Serve(broker, topic, directory, command=command)
    serve.metrics_port = port
    return serve


@contextmanager
def own_broker() -> Iterator[Tansu]:
    """A broker of the test's own, which it may kill or freeze."""
    tansu = Tansu()
    try:
        yield tansu
    finally:
        tansu.stop()


# -- the broker ---------------------------------------------------------------------------


def test_a_stop_while_no_broker_ever_answered(tmp_path: Path) -> None:
    port = free_port()  # nothing listens there
    command = [
        sys.executable, "-m", "streamlearn", "serve", "--algo", "pdm", "--eps", "0.1",
        "--source", "kafka", "--bootstrap-servers", f"127.0.0.1:{port}", "--topic", "t",
        "--checkpoint-dir", str(tmp_path / "none"), "--metrics-addr", f"127.0.0.1:{free_port()}",
    ]  # fmt: skip
    serve = Serve(None, "t", tmp_path / "none", command=command)  # type: ignore[arg-type]
    serve.metrics_port = int(command[-1].rsplit(":", 1)[1])
    serve.wait(lambda: "Kafka poll failed" in serve.log_tail(), "a failed poll")
    stops_cleanly(serve, "no broker ever answered")


def test_a_stop_after_the_broker_died(tmp_path: Path) -> None:
    with own_broker() as broker:
        topic = topic_with(broker, 60)
        serve = started(broker, topic, tmp_path / "died", "--checkpoint-interval", "1s")
        serve.wait_learned(600)
        broker.kill()
        serve.wait(lambda: not serve.answers("/readyz"), "not ready")
        stops_cleanly(serve, "the broker killed (connections refused)")
        assert learned(serve.directory) == 600


def test_a_stop_while_the_broker_does_not_answer(tmp_path: Path) -> None:
    """A frozen broker: connections stay open, requests wait for their time-out (the
    commit and leaving the group take the time the stop leaves)."""
    with own_broker() as broker:
        topic = topic_with(broker, 60)
        serve = started(broker, topic, tmp_path / "frozen", "--checkpoint-interval", "1s")
        serve.wait_learned(600)
        broker.pause()
        try:
            time.sleep(1.0)  # polls now wait on the broker
            stops_cleanly(serve, "the broker frozen (requests time out)")
        finally:
            broker.resume()
        assert learned(serve.directory) == 600


def test_a_stop_while_a_codec_is_missing(tmp_path: Path, broker: Tansu) -> None:
    """The reported case: a topic a librdkafka producer wrote with snappy, a daemon
    without snappy's library. Its batches are counted as unreadable; the stop is a stop."""
    topic = f"t-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, 1)
    send_all(librdkafka(broker, **{"compression.type": "snappy"}), topic,
             svmlight_messages(40, LINES, seed=3))  # fmt: skip
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text("import sys\nsys.modules['snappy'] = None\n")
    command, port = serve_command(broker, topic, tmp_path / "nosnappy")
    serve = Serve(broker, topic, tmp_path / "nosnappy", command=command,
                  env={**os.environ, "PYTHONPATH": str(site)})  # fmt: skip
    serve.metrics_port = port
    serve.wait(lambda: "codec missing" in serve.log_tail(), "the snappy batches skipped")
    stops_cleanly(serve, "snappy batches without snappy's library")
    assert "pip install python-snappy" in serve.log_path.read_text()


# -- the daemon at work ---------------------------------------------------------------------


def noisy_messages(n: int, seed: int) -> list[bytes]:
    """Lines whose labels are coin flips: a replay never converges on them."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        rows = [
            f"{rng.choice(['+1', '-1'])} "
            + " ".join(f"{j + 1}:{v:.3f}" for j, v in enumerate(rng.normal(size=8)))
            for _ in range(LINES)
        ]
        out.append(("\n".join(rows) + "\n").encode())
    return out


def test_a_stop_in_the_middle_of_a_replay(broker: Tansu, tmp_path: Path) -> None:
    topic = f"t-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, 1)
    broker.produce(topic, noisy_messages(3000, seed=4))
    serve = started(broker, topic, tmp_path / "replay", "--eps", "0.0001")

    def replaying() -> bool:
        first = serve.metric("streamlearn_replay_seconds_total") or 0.0
        time.sleep(0.3)
        return first > 0 and (serve.metric("streamlearn_replay_seconds_total") or 0.0) > first

    serve.wait(replaying, "idle replay under way")
    stops_cleanly(serve, "in the middle of a replay")
    payload = latest(serve.directory)
    assert payload is not None and payload["job"]["stream_examples"] == 30_000


def test_a_stop_in_the_middle_of_a_rebalance(broker: Tansu, tmp_path: Path) -> None:
    topic = topic_with(broker, 40, partitions=4)
    group = f"g-{uuid.uuid4().hex[:8]}"
    first = started(broker, topic, tmp_path / "first", "--group", group,
                    "--checkpoint-interval", "1s")  # fmt: skip
    first.wait_learned(400)
    second = started(broker, topic, tmp_path / "second", "--group", group)
    # the first gives its partitions up when the second joins: stopped right then
    first.wait(lambda: first.log_tail().count("partitions revoked: [") >= 1
               and "partitions revoked: [0" in first.log_tail(), "the rebalance")  # fmt: skip
    stops_cleanly(first, "in the middle of a rebalance")
    assert second.process.poll() is None


def test_a_stop_while_a_group_member_publishes(broker: Tansu, tmp_path: Path) -> None:
    topic = f"t-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, 2)
    sync, group = f"s-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    member = Member(broker, topic, sync, group, tmp_path, "--sync", "periodic",
                    "--sync-every", "20", "--sync-share", "0.9")  # fmt: skip
    with steady_stream(broker, topic, partitions=2):
        member.wait(lambda: (member.metric("streamlearn_group_sync_records_total",
                                           direction="written") or 0) >= 5,
                    "records published")  # fmt: skip
        stops_cleanly(member, "a group member publishing", checkpoint=False)


def test_a_stop_while_keyed_models_spill(broker: Tansu, tmp_path: Path) -> None:
    topic = f"t-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, 2)
    state, group = f"s-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    keyed = Keyed(broker, topic, group, state, tmp_path, "--max-models", "1")
    with steady_stream(broker, topic, partitions=2, keys=40):
        keyed.wait(lambda: (keyed.metric("streamlearn_keyed_models_total", event="spilled")
                            or 0) >= 20, "models spilled")  # fmt: skip
        stops_cleanly(keyed, "keyed models spilling", checkpoint=False)


def test_a_stop_while_the_http_api_is_under_load(broker: Tansu, tmp_path: Path) -> None:
    topic = topic_with(broker, 60)
    http = free_port()
    serve = started(broker, topic, tmp_path / "http", "--http-addr", f"127.0.0.1:{http}",
                    "--checkpoint-interval", "1s")  # fmt: skip
    serve.wait_learned(600)
    body = b"1:0.5 3:1.2\n2:-1\n" * 50
    answered = [0]
    done = threading.Event()

    def ask() -> None:
        while not done.is_set():
            request = urllib.request.Request(f"http://127.0.0.1:{http}/predict", data=body,
                                             headers={"content-type": "text/plain"})  # fmt: skip
            try:
                with urllib.request.urlopen(request, timeout=5) as answer:
                    json.loads(answer.read())
                    answered[0] += 1
            except OSError:
                return  # the daemon went away

    askers = [threading.Thread(target=ask) for _ in range(8)]
    for asker in askers:
        asker.start()
    try:
        wait_for(lambda: answered[0] >= 200, timeout=LEARN_TIMEOUT, what="requests answered")
        stops_cleanly(serve, "the HTTP API under load (8 clients)")
    finally:
        done.set()
        for asker in askers:
            asker.join(10)


# -- twice ----------------------------------------------------------------------------------


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_second_signal_exits_at_once(tmp_path: Path, sig: int) -> None:
    """A stop that waits on a frozen broker (its commit and leaving the group), cut
    short by a second signal: exit 128 + the signal's number, at once."""
    with own_broker() as broker:
        topic = topic_with(broker, 30)
        serve = started(broker, topic, tmp_path / f"twice-{sig}", "--checkpoint-interval", "1s")
        serve.wait_learned(300)
        broker.pause()
        try:
            time.sleep(1.0)
            serve.process.send_signal(sig)
            serve.wait(lambda: "then checkpoint and exit" in serve.log_tail(), "the first signal")
            time.sleep(0.2)
            started_at = time.monotonic()
            serve.process.send_signal(sig)
            code = serve.process.wait(timeout=EXIT_TIMEOUT)
            took = time.monotonic() - started_at
        finally:
            broker.resume()
        serve._forget()
    print(f"second {signal.Signals(sig).name}: exit {code} after {took:.2f} s")
    assert code == 128 + sig
    assert took < 1.0
    assert "again: exiting now, without a checkpoint" in serve.log_path.read_text()


# -- helpers --------------------------------------------------------------------------------


@contextmanager
def steady_stream(
    broker: Tansu, topic: str, *, partitions: int, keys: int = 0, rate: float = 400.0
) -> Iterator[None]:
    """Messages produced on a thread, ``rate`` a second, over the partitions (keyed by
    ``keys`` keys when given), while the block runs."""
    from kafka import KafkaProducer

    done = threading.Event()
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=5)
    values = svmlight_messages(200, 1, seed=11)

    def produce() -> None:
        i = 0
        while not done.is_set():
            key = None if not keys else b"key-%d" % (i % keys)
            producer.send(topic, values[i % len(values)], key=key, partition=i % partitions)
            i += 1
            time.sleep(1.0 / rate)

    thread = threading.Thread(target=produce)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join(10)
        producer.close(timeout=5)
