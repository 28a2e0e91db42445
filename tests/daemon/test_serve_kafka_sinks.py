"""``streamlearn serve`` on a real broker (Tansu) when its predictions or dead letters
cannot be delivered: the message is logged and counted, the stream goes on."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from serve_process import EXIT_TIMEOUT, LEARN_TIMEOUT, Serve, learned, read_topic
from services import Tansu, free_port, wait_for
from test_serve_kafka import svmlight_messages

pytestmark = pytest.mark.kafka

UNDELIVERED = "streamlearn_undelivered_messages_total"


def large_message(min_bytes: int) -> tuple[bytes, int]:
    """An svmlight message of at least ``min_bytes`` with one bad line in its middle,
    and the number of its good lines."""
    lines = svmlight_messages(1, 20, seed=9)[0].splitlines()
    size = sum(len(line) + 1 for line in lines)
    count = min_bytes // size + 1
    good = lines * count
    half = len(good) // 2
    value = b"\n".join([*good[:half], b"+1 1:1 bad", *good[half:]])
    return value + b"\n", len(good)


def test_dead_letters_go_whole_and_one_too_large_is_counted(broker: Tansu, tmp_path: Path) -> None:
    """A message over the producer's default 1 MiB with a bad line is forwarded whole
    (the producer takes what the consumer fetches); when it cannot be (a consumer that
    fetches 1 MiB, so a producer refusing more), it is logged and counted and the daemon
    goes on, where it used to die at this message on every start. Dead letters keep
    their headers and a null value (they lost both)."""
    from kafka import KafkaProducer

    topic, dead, dead_small = (f"{n}-{uuid.uuid4().hex[:8]}" for n in ("t", "d", "s"))
    for name in (topic, dead, dead_small):
        broker.create_topic(name, 1)
    big, lines = large_message(1_300_000)
    headered = [("content-type", b"text/svmlight"), ("trace-id", b"abc")]
    msgpack = [("content-type", b"application/msgpack")]
    sent = [(b"big", big, []), (b"ok", b"-1 2:1\n", []), (b"h", b"oops\n", headered),
            (b"t", None, msgpack)]  # fmt: skip
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, max_request_size=1 << 24)
    try:
        for key, value, headers in sent:
            producer.send(topic, value=value, key=key, headers=headers).get(timeout=60)
    finally:
        producer.close()
    options = ("--checkpoint-interval", "1s", "--replay-every", "0")
    forwarding = Serve(broker, topic, tmp_path / "forwarding", "--dead-letter-topic", dead,
                       *options)  # fmt: skip
    refusing = Serve(broker, topic, tmp_path / "refusing", "--dead-letter-topic", dead_small,
                     *options, consumer={"fetch_max_bytes": 1 << 20})  # fmt: skip
    for serve in (forwarding, refusing):
        serve.wait_learned(lines + 1)
    assert refusing.metric(UNDELIVERED, sink="dead_letters") == 1
    assert forwarding.metric(UNDELIVERED, sink="dead_letters") == 0
    for serve in (forwarding, refusing):
        assert serve.stop() == 0, serve.log_tail()
    assert "dead letter of partition 0 offset 0 not delivered" in refusing.log_tail()
    assert "MessageSizeTooLargeError" in refusing.log_tail()
    rejected = [sent[0], sent[2], sent[3]]
    assert [(r.key, r.value, r.headers) for r in read_topic(broker, dead, 3)] == rejected
    small = read_topic(broker, dead_small, 2)
    assert [(r.key, r.value, r.headers) for r in small] == rejected[1:]


def serve_stdin(broker: Tansu, predictions: str, directory: Path) -> subprocess.Popen[bytes]:
    """``serve`` reading standard input (a pipe), its predictions to a Kafka topic."""
    command = [
        sys.executable, "-m", "streamlearn", "serve", "--algo", "pdm", "--eps", "0.1",
        "--bootstrap-servers", broker.bootstrap, "--predictions-topic", predictions,
        "--checkpoint-dir", str(directory), "--checkpoint-interval", "1s",
        "--idle-replay", "off", "--metrics-addr", f"127.0.0.1:{free_port()}",
    ]  # fmt: skip
    log = directory.with_suffix(".log").open("ab")
    try:
        return subprocess.Popen(command, stdin=subprocess.PIPE, stderr=log)
    finally:
        log.close()


def test_an_outage_with_predictions_on_their_way_holds_checkpoints_and_bounds_a_stop(
    broker: Tansu, tmp_path: Path
) -> None:
    """A prediction the broker has not taken keeps checkpoints from moving past its
    request (logged, the daemon goes on); SIGTERM then ends the daemon within 5 s, exit
    0 with a warning and no traceback, the last checkpoint kept (a stop does not wait
    for a broker that does not answer, and loses nothing); the next start answers the
    request again. The daemon used to die at the first checkpoint, or after 94 s with a
    chained traceback on SIGTERM."""
    predictions = f"p-{uuid.uuid4().hex[:8]}"
    broker.create_topic(predictions, 1)
    directory = tmp_path / "ckpt"
    lines = [b"+1 1:1\n", b"1:1 5:1\n", b"-1 2:1\n"]  # learned, predicted, learned
    first = serve_stdin(broker, predictions, directory)
    log_path = directory.with_suffix(".log")
    try:
        assert first.stdin is not None
        first.stdin.write(lines[0])
        first.stdin.flush()
        wait_for(lambda: learned(directory) == 1, timeout=LEARN_TIMEOUT, what="a checkpoint")
        broker.pause()
        try:
            first.stdin.write(b"".join(lines[1:]))
            first.stdin.flush()

            def held_back() -> bool:
                assert first.poll() is None, log_path.read_text()
                return "1 prediction still on their way" in log_path.read_text()

            wait_for(held_back, timeout=LEARN_TIMEOUT, what="a checkpoint held back")
            first.send_signal(signal.SIGTERM)
            stopping = time.monotonic()
            code = first.wait(timeout=EXIT_TIMEOUT)
            took = time.monotonic() - stopping
        finally:
            broker.resume()
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    log = log_path.read_text()
    assert code == 0, log
    assert took < 5.0, log
    assert "checkpoint not written: 1 prediction still on their way" in log
    assert "the last checkpoint written stands" in log
    assert "Traceback" not in log
    assert learned(directory) == 1  # the last checkpoint stays

    again = subprocess.run(
        [*first.args], input=b"".join(lines), stderr=subprocess.PIPE, timeout=EXIT_TIMEOUT
    )  # the same input: the checkpoint's first line is skipped, the request answered
    assert again.returncode == 0, again.stderr.decode()
    assert learned(directory) == 2
    # at least once: the first daemon's answer may have reached the frozen broker too
    answers = read_topic(broker, predictions, 1)
    assert 1 <= len(answers) <= 2
    assert all(answer.value.split()[1] in (b"1", b"-1") for answer in answers)
