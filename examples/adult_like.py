"""Write an Adult-like stream (LIBSVM's a9a) as svmlight lines on standard output.

Run: .venv/bin/python examples/adult_like.py > train.svm
     .venv/bin/python examples/adult_like.py --examples 16281 --seed 1 > test.svm

Like a9a, each example has 14 categorical attributes one-hot coded over 123 binary
features (a few attributes missing now and then) and about 24% positive labels, which
no linear model separates: the best one is right on about 85% of the examples, as on
Adult. The population (which categories are common, how each one weighs on the label)
is fixed; ``--seed`` draws another sample of it, so a train and a test file made with
two seeds come from the same population. Same seed, same lines, on every machine.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

#: a9a's attributes and how many binary features code each (123 in all): age,
#: workclass, fnlwgt, education, education-num, marital status, occupation,
#: relationship, race, sex, capital gain, capital loss, hours per week, native country
GROUPS = (5, 8, 5, 16, 5, 7, 14, 6, 5, 2, 2, 2, 5, 41)
#: fixed: every seed samples the same population
POPULATION_SEED = 1994
POSITIVE_SHARE = 0.24
MISSING_SHARE = 0.01


def population() -> tuple[list[np.ndarray], np.ndarray, float]:
    """Per attribute the probabilities of its categories, the weight of each feature
    on the label's log-odds, and the bias that makes POSITIVE_SHARE of labels positive."""
    rng = np.random.default_rng(POPULATION_SEED)
    shares = [rng.dirichlet(np.full(size, 0.7)) for size in GROUPS]
    weights = rng.normal(0.0, 0.75, size=sum(GROUPS))
    sample = _features(rng, shares, 20_000)
    scores = _scores(sample, weights)
    low, high = -20.0, 20.0  # the bias: mean probability of a positive = POSITIVE_SHARE
    for _ in range(60):
        bias = (low + high) / 2
        if np.mean(1 / (1 + np.exp(-(scores + bias)))) > POSITIVE_SHARE:
            high = bias
        else:
            low = bias
    return shares, weights, (low + high) / 2


def _features(rng: np.random.Generator, shares: list[np.ndarray], n: int) -> np.ndarray:
    """(n, 14) 0-based feature indices, -1 for a missing attribute."""
    columns = []
    start = 0
    for size, p in zip(GROUPS, shares, strict=True):
        chosen = start + rng.choice(size, size=n, p=p)
        chosen[rng.random(n) < MISSING_SHARE] = -1
        columns.append(chosen)
        start += size
    return np.stack(columns, axis=1)


def _scores(features: np.ndarray, weights: np.ndarray) -> np.ndarray:
    return np.where(features >= 0, weights[features], 0.0).sum(axis=1)


def lines(examples: int, seed: int) -> list[str]:
    """``examples`` svmlight lines of the population, drawn with ``seed``."""
    shares, weights, bias = population()
    rng = np.random.default_rng(seed)
    features = _features(rng, shares, examples)
    positive = rng.random(examples) < 1 / (1 + np.exp(-(_scores(features, weights) + bias)))
    out = []
    for row, label in zip(features.tolist(), positive.tolist(), strict=True):
        pairs = " ".join(f"{index + 1}:1" for index in row if index >= 0)
        out.append(f"{'+1' if label else '-1'} {pairs}")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=32_561, help="lines (a9a's 32561)")
    parser.add_argument("--seed", type=int, default=0, help="another seed, another sample")
    options = parser.parse_args()
    sys.stdout.write("".join(line + "\n" for line in lines(options.examples, options.seed)))


if __name__ == "__main__":
    main()
