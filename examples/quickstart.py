"""Learn river's bundled Phishing data set with PDM and print what the model reached.

Run: make run   (or .venv/bin/python examples/quickstart.py)

The first 1000 examples are learned as a stream (each presented once, then kept in the
replay buffer); replaying the buffer to convergence certifies the margin; the last 250
examples are held out.
"""

from __future__ import annotations

import numpy as np
from river import datasets

from streamlearn import PAUM, PDM


def phishing() -> tuple[np.ndarray, np.ndarray]:
    """Phishing as a dense array (features in a fixed order) and +1/-1 labels."""
    rows = list(datasets.Phishing())
    keys = sorted(rows[0][0])
    X = np.array([[x[k] for k in keys] for x, _ in rows], dtype=np.float64)
    y = np.array([1 if label else -1 for _, label in rows])
    return X, y


def main() -> None:
    X, y = phishing()
    test = slice(1000, None)
    for model in (PDM(eps=0.01), PAUM(tau_neg=-1.0, tau_pos=1.0)):
        for start in range(0, 1000, 100):  # a stream in batches of 100
            model.learn(X[start : start + 100], y[start : start + 100])
        online_accuracy = float(np.mean(model.predict(X[test]) == y[test]))
        model.replay()
        summary = model.summary()
        accuracy = float(np.mean(model.predict(X[test]) == y[test]))
        print(f"{type(model).__name__}: {summary['examples']} examples learned")
        print(
            f"  held-out accuracy after one pass {online_accuracy:.3f}, after replay {accuracy:.3f}"
        )
        print(
            f"  updates {summary['updates']:.0f}, replay passes {summary['passes']}, "
            f"converged {summary['converged']}"
        )
        print(
            f"  margin {summary['margin_achieved']:.5f} <= maximum <= "
            f"{summary['margin_upper_bound']:.5f}: certified gap {summary['certified_gap']:.4f}"
        )


if __name__ == "__main__":
    main()
