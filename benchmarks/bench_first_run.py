"""What the first run after installing costs: numba compiles the kernels a job uses once,
then loads them from its cache.

Each scenario runs in a fresh Python process twice with the same empty cache directory
(``NUMBA_CACHE_DIR``): first with nothing compiled, then with everything cached. Both
report the CPU seconds of the whole job, imports included, so the second figure is
the anchor: what every later run costs.

Run: .venv/bin/python benchmarks/bench_first_run.py [--repeats N]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import median

REPOSITORY = Path(__file__).resolve().parents[1]

#: each scenario prints its CPU seconds on the last line of its output
SCENARIOS = {
    "PDM fit": """
import numpy as np
from streamlearn import PDM
X = np.abs(np.random.default_rng(0).normal(size=(100, 5)))
PDM(eps=0.5, delta=1.0).fit(X, np.where(X[:, 0] > 0.8, 1, -1))
""",
    "river PDMClassifier": """
from streamlearn.river import PDMClassifier
model = PDMClassifier(eps=0.1)
for i in range(20):
    x = {"a": float(i % 3), "b": 1.0}
    model.predict_one(x)
    model.learn_one(x, i % 2 == 0)
""",
    "one-vs-rest bank fit": """
import numpy as np
from streamlearn import PDM, ModelBank
rng = np.random.default_rng(0)
X = rng.normal(size=(200, 6)) * (rng.random((200, 6)) < 0.6)
ModelBank(PDM(eps=0.1, delta=0.5)).fit(X, [[1] if v > 0 else [2, 3] for v in X[:, 1]])
""",
    "streamlearn learn (svmlight)": """
import sys
from pathlib import Path
from streamlearn.cli import app
data = Path(MODEL).with_suffix(".svm")
rows = (f"{1 if i % 2 else -1} 1:{i % 7} 3:0.5 {4 + i % 5}:1\\n" for i in range(200))
data.write_text("".join(rows))
sys.argv = ["streamlearn", "learn", "--eps", "0.1", "--model", MODEL, str(data)]
try:
    app()
except SystemExit:
    pass
""",
}

TIMED = """
import time
started = time.process_time()
{body}
print(f"{{time.process_time() - started:.3f}}")
"""


def cpu_seconds(body: str, cache: str, model: str) -> float:
    """CPU seconds of ``body`` in a fresh interpreter with numba's cache in ``cache``."""
    code = TIMED.format(body=body.replace("MODEL", repr(model)))
    env = {**os.environ, "NUMBA_CACHE_DIR": cache}
    result = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=REPOSITORY, capture_output=True,
        text=True, check=True,
    )  # fmt: skip
    return float(result.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    print(f"CPU seconds, imports included; repeats: {args.repeats}, medians")
    print(f"{'scenario':30} {'first run':>10} {'later runs':>11}")
    for name, body in SCENARIOS.items():
        first, later = [], []
        for _ in range(args.repeats):
            with tempfile.TemporaryDirectory() as cache:
                model = str(Path(cache) / "model.ckpt")
                first.append(cpu_seconds(body, cache, model))
                later.append(cpu_seconds(body, cache, model))
        print(f"{name:30} {median(first):10.1f} {median(later):11.1f}")


if __name__ == "__main__":
    main()
