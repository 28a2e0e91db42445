"""A poll's rows sorted out by the key of their message, with numpy alone (no Python
object per row).

>>> import numpy as np
>>> from streamlearn.parse.svmlight import SvmlightParser
>>> rows = SvmlightParser().feed(b"+1 1:1\\n-1 2:1\\n+1 3:1\\n-1 4:1\\n")
>>> ids, keys = key_ids([b"a", b"b", None, b"a"])       # one row per message here
>>> ids.tolist(), keys
([0, 1, -1, 0], [b'a', b'b'])
>>> groups = KeyGroups.of(rows, ids, np.arange(4))
>>> a_rows, a_owners = groups.rows_of(0)
>>> a_rows.line_numbers.tolist(), a_owners.tolist()
([1, 4], [0, 3])
>>> groups.keyless.tolist()                                # the lines without a key
[3]
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from streamlearn.parse import ParsedRows

IntArray = npt.NDArray[np.int64]


def key_ids(keys: Sequence[bytes | None]) -> tuple[IntArray, list[bytes]]:
    """Per message, the number of its key among the distinct keys (numbered in the order
    they first come), and those keys; -1 for a message without a key (null or empty)."""
    distinct = [key for key in dict.fromkeys(keys) if key]
    numbers: dict[bytes | None, int] = {key: number for number, key in enumerate(distinct)}
    ids = np.fromiter(map(numbers.get, keys, itertools.repeat(-1)), np.int64, len(keys))
    return ids, distinct


def gathered(rows: ParsedRows, order: IntArray) -> ParsedRows:
    """Rows ``order`` of ``rows``, in that order (no rejections)."""
    indptr, cells = _gathered_offsets(rows.indptr, order)
    label_ptr, label_cells = _gathered_offsets(rows.label_ptr, order)
    return ParsedRows(
        indptr,
        rows.indices[cells],
        rows.values[cells],
        label_ptr,
        rows.labels[label_cells],
        rows.line_numbers[order],
        [],
    )


def _gathered_offsets(offsets: IntArray, order: IntArray) -> tuple[IntArray, IntArray]:
    """The offsets of the CSR rows ``order``, gathered, and the cells they take."""
    starts = offsets[order]
    lengths = offsets[order + 1] - starts
    new = np.zeros(order.shape[0] + 1, dtype=np.int64)
    np.cumsum(lengths, out=new[1:])
    cells = np.repeat(starts - new[:-1], lengths) + np.arange(int(new[-1]), dtype=np.int64)
    return new, cells


@dataclass(frozen=True)
class KeyGroups:
    """Rows grouped by key (stream order kept within a key), the message of each row,
    and the line numbers of the rows whose message has no key."""

    rows: ParsedRows
    owners: IntArray
    #: key number -> (first, last) rows of its run in ``rows``
    runs: dict[int, tuple[int, int]]
    keyless: IntArray
    #: the runs as arrays, in the order of ``runs``: key numbers, first and last rows
    run_keys: IntArray
    run_first: IntArray
    run_last: IntArray

    @staticmethod
    def of(rows: ParsedRows, message_ids: IntArray, owners: IntArray) -> KeyGroups:
        """``rows`` grouped by the key number of their messages (``owners``: the message
        of each row; ``message_ids``: each message's key number, see :func:`key_ids`)."""
        row_ids = message_ids[owners]
        keyed = row_ids >= 0
        keyless = rows.line_numbers[~keyed]
        order = np.flatnonzero(keyed)
        order = order[np.argsort(row_ids[order], kind="stable")]
        sorted_ids = row_ids[order]
        first = np.flatnonzero(np.diff(sorted_ids, prepend=-1)).astype(np.int64)
        last = np.empty_like(first)
        last[:-1] = first[1:]
        last[-1:] = order.shape[0]
        run_keys = sorted_ids[first]
        runs = dict(zip(run_keys.tolist(), zip(first.tolist(), last.tolist(), strict=True),
                        strict=True))  # fmt: skip
        return KeyGroups(gathered(rows, order), owners[order], runs, keyless, run_keys,
                         first, last)  # fmt: skip

    @staticmethod
    def none() -> KeyGroups:
        """No rows."""
        empty = np.empty(0, dtype=np.int64)
        return KeyGroups(ParsedRows.empty(), empty, {}, empty, empty, empty, empty)

    def rows_of(self, key_id: int) -> tuple[ParsedRows, IntArray]:
        """The rows of key number ``key_id`` and their messages (none: empty)."""
        run = self.runs.get(key_id)
        if run is None:
            return _NO_ROWS, _NO_OWNERS
        first, last = run
        return self.rows.slice(first, last), self.owners[first:last]


_NO_ROWS = ParsedRows.empty()
_NO_OWNERS = np.empty(0, dtype=np.int64)
