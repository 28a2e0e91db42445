"""Write one of river's bundled classification data sets as svmlight lines on standard
output: nothing to download.

Run: .venv/bin/python examples/river_svmlight.py ImageSegments > segments.svm

Features are numbered from 1 in the order of their names, zeros left out. A binary data
set's labels become +1/-1; a multi-class one's classes 1, 2, ... in the order of their
names (listed on standard error), the one-class-per-line form of ``--one-vs-rest``.
"""

from __future__ import annotations

import argparse
import sys

from river import datasets

#: river's bundled classification sets (the others are downloaded on first use)
BUNDLED = ("Phishing", "ImageSegments", "Bananas")


def svmlight_lines(name: str) -> list[str]:
    """The lines of river's data set ``name``; its classes go to standard error."""
    rows = list(getattr(datasets, name)())
    keys = sorted(rows[0][0])
    classes = sorted({label for _, label in rows}, key=str)
    binary = set(classes) <= {True, False}
    if not binary:
        print(", ".join(f"{k} {c}" for k, c in enumerate(classes, 1)), file=sys.stderr)
    number = {label: k for k, label in enumerate(classes, 1)}
    out = []
    for features, label in rows:
        pairs = " ".join(f"{i + 1}:{features[k]!r}" for i, k in enumerate(keys) if features[k])
        out.append(f"{('+1' if label else '-1') if binary else number[label]} {pairs}")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("name", nargs="?", default="Phishing", choices=BUNDLED)
    name = parser.parse_args().name
    sys.stdout.write("".join(line + "\n" for line in svmlight_lines(name)))


if __name__ == "__main__":
    main()
