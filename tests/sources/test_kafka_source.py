"""KafkaSource and KafkaSink against a real broker (Tansu), and the security options."""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import msgpack
import pytest
from services import Tansu, wait_for

from streamlearn.errors import InputError, InvalidParameterError
from streamlearn.parse.messages import MessageDecoder
from streamlearn.sources.base import Message
from streamlearn.sources.kafka import KafkaSource, security_from_env
from streamlearn.sources.kafka_sink import KafkaSink

pytestmark = pytest.mark.kafka

#: a new group member gets its first message after about 2 s: Tansu holds a JoinGroup for
#: half the session timeout (4 s here; 5 s with the default 10 s), 2 s at the least
JOIN_TIMEOUT = 60.0


def consume(source: KafkaSource, count: int, *, timeout: float = JOIN_TIMEOUT) -> list[Message]:
    """Poll until ``count`` messages came (failing after ``timeout`` seconds)."""
    messages: list[Message] = []

    def enough() -> bool:
        messages.extend(source.poll(0.2, 500))
        return len(messages) >= count

    wait_for(enough, timeout=timeout, interval=0.0, what=f"{count} messages")
    return messages


def quiet(source: KafkaSource, *, seconds: float = 1.0) -> list[Message]:
    """What comes within ``seconds`` (to check that nothing more does)."""
    extra: list[Message] = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        extra += source.poll(0.1, 500)
    return extra


@pytest.fixture
def sources() -> Iterator[list[KafkaSource]]:
    """Sources a test opens, closed at its end."""
    opened: list[KafkaSource] = []
    yield opened
    for source in opened:
        source.close()


def open_source(
    tansu: Tansu, opened: list[KafkaSource], topic: str, group: str, **options: object
) -> KafkaSource:
    source = KafkaSource(
        tansu.bootstrap,
        topic,
        group,
        session_timeout_ms=4000,
        heartbeat_interval_ms=1000,
        **options,  # type: ignore[arg-type]
    )
    opened.append(source)
    return source


def svmlight_values(n: int, start: int = 0) -> list[bytes]:
    return [b"%d %d:1.5 %d:2\n" % (1 if i % 2 else -1, i + 1, i + 2) for i in range(start, n)]


def msgpack_value(i: int) -> bytes:
    example = {"indices": [i, i + 3], "values": [0.5, 1.0], "label": 1}
    return bytes(msgpack.packb({"examples": [example, example]}))


@pytest.mark.parametrize("partitions", [1, 3])
def test_consumes_everything_and_resumes_from_commit(
    tansu: Tansu, sources: list[KafkaSource], topic_name: str, partitions: int
) -> None:
    tansu.create_topic(topic_name, partitions)
    expected: dict[int, int] = {}
    for p in range(partitions):
        sent = tansu.produce(topic_name, svmlight_values(5 + p), partition=p, key=b"k%d" % p)
        sent += tansu.produce(
            topic_name,
            [msgpack_value(i) for i in range(3)],
            partition=p,
            headers={"content-type": b"application/msgpack"},
        )
        assert [offset for _, offset in sent] == list(range(8 + p))
        expected[p] = 8 + p
    total = sum(expected.values())

    source = open_source(tansu, sources, topic_name, "group-a")
    assert not source.ready() and source.position() == {}
    messages = consume(source, total)
    assert len(messages) == total
    assert source.ready()
    assert source.position() == expected
    assert not source.exhausted()
    by_partition: dict[int, list[Message]] = {}
    for m in messages:
        by_partition.setdefault(m.partition, []).append(m)
    decoder = MessageDecoder()
    for p, got in by_partition.items():
        assert [m.offset for m in got] == list(range(expected[p]))
        assert [m.key for m in got[: 5 + p]] == [b"k%d" % p] * (5 + p)
        assert all(m.headers == {} for m in got[: 5 + p])
        assert all(m.headers == {"content-type": b"application/msgpack"} for m in got[5 + p :])
        rows = [decoder.decode(m.value, m.headers) for m in got]
        assert [r.n_rows for r in rows] == [1] * (5 + p) + [2] * 3
        assert all(r.rejected == [] for r in rows)
    assert wait_for(lambda: source.lag() == dict.fromkeys(expected, 0), timeout=10.0, what="lag")

    source.commit(source.position())
    assert tansu.committed(topic_name, "group-a", partitions) == expected
    source.close()

    tansu.produce(topic_name, svmlight_values(2), partition=0)
    again = open_source(tansu, sources, topic_name, "group-a")
    resumed = consume(again, 2)
    assert [(m.partition, m.offset) for m in resumed] == [(0, expected[0]), (0, expected[0] + 1)]
    assert quiet(again) == []
    assert again.position() == {0: expected[0] + 2}


def test_seek_overrides_the_committed_offsets(
    tansu: Tansu, sources: list[KafkaSource], topic_name: str
) -> None:
    tansu.create_topic(topic_name, 2)
    for p in range(2):
        tansu.produce(topic_name, svmlight_values(10), partition=p)
    first = open_source(tansu, sources, topic_name, "group-s")
    consume(first, 20)
    first.commit({0: 8, 1: 9})
    assert tansu.committed(topic_name, "group-s", 2) == {0: 8, 1: 9}
    first.close()

    source = open_source(tansu, sources, topic_name, "group-s")
    source.seek({0: 3})  # from a checkpoint: partition 1 has no position there
    messages = consume(source, 7 + 1)
    assert sorted((m.partition, m.offset) for m in messages) == [(0, o) for o in range(3, 10)] + [
        (1, 9)
    ]
    assert quiet(source, seconds=0.5) == []
    assert source.position() == {0: 10, 1: 10}

    source.seek({0: 6})  # while assigned: takes effect at once
    again = consume(source, 4)
    assert [(m.partition, m.offset) for m in again] == [(0, o) for o in range(6, 10)]


def test_commits_cover_only_the_partitions_the_member_owns(
    tansu: Tansu, sources: list[KafkaSource], topic_name: str
) -> None:
    """Two members of one group: the first read both partitions before the second
    joined; its stale position of the partition it lost must not overwrite what the
    second commits (committed offsets went backwards)."""
    tansu.create_topic(topic_name, 2)
    for p in range(2):
        tansu.produce(topic_name, svmlight_values(10), partition=p)
    first = open_source(tansu, sources, topic_name, "group-o")
    consume(first, 20)
    second = open_source(tansu, sources, topic_name, "group-o")

    def split() -> bool:
        first.poll(0.1, 100)
        second.poll(0.1, 100)
        return len(first.assigned()) == 1 and len(second.assigned()) == 1

    wait_for(split, timeout=JOIN_TIMEOUT, interval=0.0, what="one partition each")
    (kept,), (lost,) = first.assigned(), second.assigned()
    wait_for(lambda: second.poll(0.1, 100) is not None and second.position() == {lost: 10},
             timeout=JOIN_TIMEOUT, interval=0.0, what="the second member's messages")  # fmt: skip
    second.commit(second.position())
    first.commit({kept: 3, lost: 3})  # what the first member held for both
    assert tansu.committed(topic_name, "group-o", 2) == {kept: 3, lost: 10}


def test_a_member_that_polls_without_waiting_still_gets_its_partition(
    tansu: Tansu, sources: list[KafkaSource], topic_name: str
) -> None:
    """The daemon polls without waiting while it replays in idle time, and a rebalance
    looks idle (no partition, no lag): the group join that finishes between two of its
    polls must be applied, not dropped and sent again (kafka-python 3.0 drops it)."""
    tansu.create_topic(topic_name, 2)
    first = open_source(tansu, sources, topic_name, "group-r")
    wait_for(lambda: first.poll(0.1, 100) is not None and len(first.assigned()) == 2,
             timeout=JOIN_TIMEOUT, interval=0.0, what="both partitions")  # fmt: skip
    second = open_source(tansu, sources, topic_name, "group-r")

    def split() -> bool:
        first.poll(0.0, 100)
        time.sleep(0.25)  # a replay slice
        second.poll(0.1, 100)
        return len(first.assigned()) == 1 and len(second.assigned()) == 1

    wait_for(split, timeout=JOIN_TIMEOUT, interval=0.0, what="one partition each")


def test_lag_counts_messages_not_yet_returned(
    tansu: Tansu, sources: list[KafkaSource], topic_name: str
) -> None:
    tansu.create_topic(topic_name, 1)
    tansu.produce(topic_name, svmlight_values(50), partition=0)
    source = open_source(tansu, sources, topic_name, "group-l", max_partition_fetch_bytes=1 << 20)
    messages: list[Message] = []

    def ten() -> bool:  # a fetch may bring the first record batch alone
        messages.extend(source.poll(0.2, 10 - len(messages)))
        return len(messages) == 10

    wait_for(ten, timeout=JOIN_TIMEOUT, interval=0.0, what="10 messages")
    assert source.position() == {0: 10}
    assert wait_for(lambda: source.lag(), timeout=10.0, what="lag") == {0: 40}


def test_sink_round_trip(tansu: Tansu, sources: list[KafkaSource], topic_name: str) -> None:
    tansu.create_topic(topic_name, 1)
    sink = KafkaSink(tansu.bootstrap, topic_name)
    for i in range(20):
        sink.send(b"key-%d" % i if i % 2 else None, b"prediction %d" % i, origin=(0, i))
    assert sink.flush(30.0) == 0
    assert sink.undelivered() == []
    sink.close()
    source = open_source(tansu, sources, topic_name, "group-k")
    messages = consume(source, 20)
    assert [m.value for m in messages] == [b"prediction %d" % i for i in range(20)]
    assert [m.key for m in messages] == [b"key-%d" % i if i % 2 else None for i in range(20)]


def test_sink_reports_a_message_it_cannot_send_and_goes_on(tansu: Tansu, topic_name: str) -> None:
    tansu.create_topic(topic_name, 1)
    sink = KafkaSink(tansu.bootstrap, topic_name, max_request_size=1000)
    try:
        sink.send(b"big", b"x" * 2000, origin=(3, 41))  # refused by the producer itself
        sink.send(None, b"small", origin=(3, 42))
        assert sink.flush(30.0) == 0
        (failed,) = sink.undelivered()
        assert (failed.partition, failed.offset) == (3, 41)
        assert "MessageSizeTooLargeError" in failed.reason
        assert sink.undelivered() == []  # reported once
    finally:
        sink.close()
    assert tansu.end_offsets(topic_name) == {0: 1}


@pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning")
def test_sink_flush_and_close_do_not_wait_for_a_paused_broker(
    tansu: Tansu, topic_name: str
) -> None:
    tansu.create_topic(topic_name, 1)
    sink = KafkaSink(tansu.bootstrap, topic_name, close_timeout=2.0)
    tansu.pause()
    try:
        started = time.monotonic()
        sink.send(b"k", b"answer", origin=(0, 7))
        assert sink.flush(0.5) == 1  # still on its way: said, not raised
        sink.close()  # no wait for a broker that does not answer, no error
        assert time.monotonic() - started < 5.0
        del sink
        gc.collect()  # kafka-python's finalizer finds it closed: no error at collection
    finally:
        tansu.resume()


def test_broker_pause_is_survived_without_loss_or_duplicates(
    tansu: Tansu, sources: list[KafkaSource], topic_name: str
) -> None:
    tansu.create_topic(topic_name, 1)
    tansu.produce(topic_name, svmlight_values(5), partition=0)
    source = open_source(tansu, sources, topic_name, "group-p", request_timeout_ms=2000)
    seen = consume(source, 5)
    assert source.ready()

    tansu.pause()
    try:
        started = time.monotonic()

        def not_ready() -> bool:
            assert len(source.poll(0.2, 100)) == 0  # never raises, nothing comes
            return not source.ready()

        wait_for(not_ready, timeout=20.0, interval=0.0, what="ready() to turn false")
        assert time.monotonic() - started < 15.0
        assert len(source.poll(0.2, 100)) == 0
    finally:
        tansu.resume()

    tansu.produce(topic_name, svmlight_values(8, start=5), partition=0)
    seen += consume(source, 3)
    seen += quiet(source, seconds=1.0)
    assert [m.offset for m in seen] == list(range(8))
    assert source.ready()
    assert source.position() == {0: 8}


@pytest.mark.parametrize("option", [{"fetch_max_wait_ms": 40_000}, {"auto_offset_reset": "none"}])
def test_options_the_consumer_refuses_end_the_poll_instead_of_retries(
    tansu: Tansu, sources: list[KafkaSource], topic_name: str, option: dict[str, object]
) -> None:
    """A consumer that cannot be made with its options (a fetch wait beyond the request
    timeout), or that has no offset to start from and may not pick one: no retry would
    help, unlike a broker away."""
    tansu.create_topic(topic_name, 1)
    tansu.produce(topic_name, svmlight_values(1))
    source = open_source(tansu, sources, topic_name, f"group-{topic_name}", **option)
    with pytest.raises(InvalidParameterError, match=r"cannot work with its options|is none"):
        wait_for(lambda: len(source.poll(0.2, 10)), timeout=JOIN_TIMEOUT, what="an error")


def test_unreachable_broker_does_not_raise_from_poll(sources: list[KafkaSource]) -> None:
    from services import free_port

    source = KafkaSource(
        f"127.0.0.1:{free_port()}",
        "nowhere",
        "group-x",
        request_timeout_ms=1000,
        bootstrap_timeout_ms=300,
    )
    sources.append(source)
    threads = threading.active_count()
    started = time.monotonic()
    for _ in range(3):
        assert len(source.poll(0.1, 10)) == 0
        assert not source.ready()
    assert time.monotonic() - started < 5.0
    assert threading.active_count() <= threads  # no client thread left behind
    source.commit({0: 1})  # logged, not raised
    assert source.lag() == {}
    source.seek({0: 4})
    assert source.position() == {0: 4}


def test_security_from_env(tmp_path: Path) -> None:
    password = tmp_path / "password"
    password.write_text("s3cret\n")
    env = {
        "STREAMLEARN_KAFKA_SECURITY_PROTOCOL": "SASL_SSL",
        "STREAMLEARN_KAFKA_SASL_MECHANISM": "SCRAM-SHA-512",
        "STREAMLEARN_KAFKA_SASL_USERNAME": "learner",
        "STREAMLEARN_KAFKA_SASL_PASSWORD_FILE": str(password),
        "STREAMLEARN_KAFKA_SSL_CAFILE": "/etc/ca.pem",
        "STREAMLEARN_KAFKA_SSL_CERTFILE": "/etc/cert.pem",
        "STREAMLEARN_KAFKA_SSL_KEYFILE": "/etc/key.pem",
        "KAFKA_OTHER": "ignored",
    }
    assert security_from_env(env) == {
        "security_protocol": "SASL_SSL",
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": "learner",
        "sasl_plain_password": "s3cret",
        "ssl_cafile": "/etc/ca.pem",
        "ssl_certfile": "/etc/cert.pem",
        "ssl_keyfile": "/etc/key.pem",
    }
    direct = {"STREAMLEARN_KAFKA_SASL_PASSWORD": "pw", "STREAMLEARN_KAFKA_SSL_CAFILE": ""}
    assert security_from_env(direct) == {"sasl_plain_password": "pw"}
    assert security_from_env({}) == {}
    with pytest.raises(InvalidParameterError):
        security_from_env({**env, "STREAMLEARN_KAFKA_SASL_PASSWORD": "pw"})
    with pytest.raises(InputError):
        security_from_env({"STREAMLEARN_KAFKA_SASL_PASSWORD_FILE": str(tmp_path / "none")})


def test_unknown_security_option_is_refused() -> None:
    with pytest.raises(InvalidParameterError, match="sasl_password"):
        KafkaSource("127.0.0.1:1", "t", "g", security={"sasl_password": "x"})
