"""Parse-only speed: SvmlightParser against scikit-learn's load_svmlight_file, same run.

The input is N copies of adult/a9a.train concatenated in memory (30 copies: 976830
lines, 70 MB, the stream the learners are timed on). The parser is fed in chunks of
``--chunk-mb`` MB, as the daemon's sources hand them over; scikit-learn reads the same
bytes from an in-memory file. Both sides are checked to find the same rows.

Run: .venv/bin/python benchmarks/bench_parse.py [--copies N] [--chunk-mb MB] [--repeats R]
"""

from __future__ import annotations

import argparse
import io

import numpy as np
from _common import data_file, interleaved, median
from sklearn.datasets import load_svmlight_file

from streamlearn.parse import ParsedRows, SvmlightParser

REFERENCE_SKLEARN_ROWS_PER_SECOND = 220e3  # ../shared/data/README.md
REFERENCE_VW_EXAMPLES_PER_SECOND = 880e3  # learning included, for scale


def parse_in_chunks(data: bytes, chunk: int) -> tuple[int, int]:
    """(rows, rejected lines) of one pass of a fresh parser over ``data``."""
    parser = SvmlightParser()
    view = memoryview(data)
    rows = rejected = 0
    for start in range(0, len(data), chunk):
        parsed = parser.feed(view[start : start + chunk])
        rows += parsed.n_rows
        rejected += len(parsed.rejected)
    last = parser.finish()
    return rows + last.n_rows, rejected + len(last.rejected)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--copies", type=int, default=30)
    parser.add_argument("--chunk-mb", type=float, default=4.0)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    one = data_file("adult/a9a.train").read_bytes()
    data = one * args.copies
    chunk = int(args.chunk_mb * (1 << 20))
    lines = data.count(b"\n")

    # compile (or load) the kernels and check both sides agree on one copy
    X, y = load_svmlight_file(io.BytesIO(one), zero_based=False)
    single = SvmlightParser()
    ours = ParsedRows.concatenate([single.feed(one), single.finish()])
    assert np.array_equal(ours.indptr, X.indptr) and np.array_equal(ours.indices, X.indices)
    assert np.array_equal(ours.values, X.data) and np.array_equal(ours.labels, y)

    results = interleaved(
        {
            "streamlearn": lambda: parse_in_chunks(data, chunk),
            "sklearn": lambda: load_svmlight_file(io.BytesIO(data), zero_based=False),
        },
        args.repeats,
    )
    ours_seconds = median(results["streamlearn"][0])
    rows, rejected = results["streamlearn"][1]
    assert rows == lines and rejected == 0, (rows, rejected, lines)
    sklearn_seconds = median(results["sklearn"][0])
    assert results["sklearn"][1][0].shape[0] == lines

    megabytes = len(data) / 1e6
    print(
        f"{args.copies} x a9a.train: {lines} lines, {megabytes:.1f} MB; "
        f"chunks of {args.chunk_mb:g} MB; median of {args.repeats} interleaved runs"
    )
    print()
    print(f"{'parser':<32}{'seconds':>10}{'rows/s':>14}{'MB/s':>10}{'ratio':>8}")
    for name, seconds in (
        ("streamlearn SvmlightParser", ours_seconds),
        ("sklearn load_svmlight_file", sklearn_seconds),
    ):
        print(
            f"{name:<32}{seconds:>10.3f}{lines / seconds:>14,.0f}"
            f"{megabytes / seconds:>10.1f}{sklearn_seconds / seconds:>8.2f}"
        )
    print()
    print(
        f"anchors (../shared/data/README.md): sklearn about "
        f"{REFERENCE_SKLEARN_ROWS_PER_SECOND:,.0f} rows/s; Vowpal Wabbit learns about "
        f"{REFERENCE_VW_EXAMPLES_PER_SECOND:,.0f} examples/s"
    )


if __name__ == "__main__":
    main()
