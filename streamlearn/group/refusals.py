"""Refused sync records, logged without flooding the log: anyone who can write to the sync
topic can send thousands of them.

The first refusal of each reason in a minute is logged with its record's key; the others
of that minute are counted and said with the next line logged for that reason.

>>> refusals = RefusalLog(interval=60.0)
>>> refusals.line("not msgpack (unpack failed)", "k1", now=0.0)
"sync record of 'k1' refused: not msgpack (unpack failed)"
>>> refusals.line("not msgpack (extra data)", "k2", now=1.0) is None
True
>>> refusals.line("not msgpack (unpack failed)", "k3", now=61.0)
"sync record of 'k3' refused: not msgpack (unpack failed) (and 1 more like it in the last 61 s)"
"""

from __future__ import annotations

import re

#: what makes two reasons one for the log: their first words, up to a detail in brackets
#: or a number
_KIND = re.compile(r"^[^(0-9'\"]*")


class RefusalLog:
    """Per kind of reason, when it was last logged and how many refusals went unsaid."""

    def __init__(self, interval: float = 60.0) -> None:
        self.interval = interval
        self._logged: dict[str, float] = {}
        self._unsaid: dict[str, int] = {}

    def line(self, reason: str, key: str, now: float) -> str | None:
        """The line to log for a refusal of ``key``'s record for ``reason`` at ``now``,
        or None when one of its kind was logged less than ``interval`` seconds ago."""
        kind = _KIND.match(reason).group(0).strip()  # type: ignore[union-attr]
        logged = self._logged.get(kind)
        if logged is not None and now - logged < self.interval:
            self._unsaid[kind] = self._unsaid.get(kind, 0) + 1
            return None
        line = f"sync record of {key[:80]!r} refused: {reason}"
        unsaid = self._unsaid.pop(kind, 0)
        if unsaid and logged is not None:
            line += f" (and {unsaid} more like it in the last {now - logged:.0f} s)"
        if len(self._logged) > 1000:  # reasons are few; a flood of odd ones is not kept
            self._logged.clear()
        self._logged[kind] = now
        return line
