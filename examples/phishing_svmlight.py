"""Write river's bundled Phishing data set as svmlight lines on standard output.

Run: .venv/bin/python examples/phishing_svmlight.py | .venv/bin/streamlearn learn --model m.ckpt
"""

from __future__ import annotations

import sys

from river import datasets


def main() -> None:
    rows = list(datasets.Phishing())
    keys = sorted(rows[0][0])
    out = sys.stdout
    for features, label in rows:
        pairs = " ".join(f"{i + 1}:{features[k]!r}" for i, k in enumerate(keys) if features[k] != 0)
        out.write(f"{'+1' if label else '-1'} {pairs}\n")


if __name__ == "__main__":
    main()
