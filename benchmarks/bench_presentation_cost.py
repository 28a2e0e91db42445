"""What a presentation costs on Adult (a9a.train), and how much of PDM's time the work explains.

All timings come from one run, interleaved, on the kernel that cycles the active-set
levels (where PDM makes 99% of its presentations), over a compact copy of the whole
buffer presented 20 times a call:

- **never**: the converged PDM model. Every presentation computes a . y and the
  threshold, and none updates (checked).
- **always**: a PAM learner whose margin tau is so large that every presentation
  updates, once (checked).
- **coin**: a PAUM learner that updates every positive example and no negative one
  (tau_pos = 1e300, tau_neg = -1e300), on Adult with labels drawn at random with
  probability ``share`` of +1 (PDM's share of presentations that update, below). Its
  update decisions are coin flips, as unpredictable as PDM's, and cost no arithmetic
  beyond the comparison.
- **pdm**: ``PDM(eps=0.01, delta=1, rho=1).fit``, divided by its presentations.

If a presentation cost only its work, PDM's would lie between the first two, at its
share of presentations that update: ``never + share x (always - never)``. The rest is
what the branch on the update condition costs when it cannot be predicted (the
processor discards the work it started on the wrong side), together with PDM's
multiplicity arithmetic. The coin separates the two: what it costs beyond the work is
the unpredictable decision alone; what PDM costs beyond the coin, its multiplicity
arithmetic and rule.

Run: .venv/bin/python benchmarks/bench_presentation_cost.py [--repeats N]
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import numpy as np
from _common import adult, interleaved, median

from streamlearn import PAM, PAUM, PDM
from streamlearn._kernels.engine import STAT_UPDATE_EVENTS, _cycle_set, gather
from streamlearn.learn.base import LinearLearner, _level_workspaces

EPS, DELTA, RHO = 0.01, 1.0, 1.0
CYCLES = 20


def cycler(learner: LinearLearner) -> Callable[[], int]:
    """A call that presents a compact copy of ``learner``'s buffer ``CYCLES`` times with
    its rule and state; returns the update events it made."""
    buf = learner.state.buffer
    slots = buf.live_slots()
    rule = learner._kernel_rule(learner._multiple_updates(), learner._buffer_values_all_one(slots))
    stats = np.zeros_like(learner.state.stats)
    every, empty, _ = _level_workspaces(slots.shape[0], buf.nnz)
    gather(slots, buf.arrays(), every, rule[5])
    n = slots.shape[0]

    def present_all() -> int:
        before = int(stats[STAT_UPDATE_EVENTS])
        for _ in range(CYCLES):
            _cycle_set(
                every, n, False, empty, False, 1.0, buf.slot_alpha, learner.state.weights,
                learner.state.scalars, rule, stats,
            )  # fmt: skip
        return int(stats[STAT_UPDATE_EVENTS]) - before

    return present_all


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()

    X, y = adult()
    n = X.shape[0]
    PDM(eps=0.5, delta=DELTA).fit(X[:100], y[:100])  # compile the kernels before timing

    converged = PDM(eps=EPS, delta=DELTA, rho=RHO).fit(X, y)
    summary = converged.summary()
    presentations = summary["presentations"]
    share = summary["update_events"] / presentations
    coin_labels = np.where(np.random.default_rng(0).random(n) < share, 1.0, -1.0)
    coin = PAUM(tau_neg=-1e300, tau_pos=1e300, delta=DELTA, rho=RHO).learn(X, coin_labels)
    runs = {
        "never": cycler(converged),
        "always": cycler(PAM(tau=1e300, delta=DELTA, rho=RHO).learn(X, y)),
        "coin": cycler(coin),
        "pdm": lambda: PDM(eps=EPS, delta=DELTA, rho=RHO).fit(X, y),
    }
    results = interleaved(runs, args.repeats)
    if results["never"][1] != 0:
        raise SystemExit("the converged model updated: no 'never' anchor")
    if results["always"][1] != CYCLES * n:
        raise SystemExit(f"PAM updated {results['always'][1]} of {CYCLES * n} presentations")
    coin_share = results["coin"][1] / (CYCLES * n)
    if results["coin"][1] != CYCLES * int(np.sum(coin_labels > 0)):
        raise SystemExit("the coin's updates are not its positive examples")

    never = median(results["never"][0]) / (CYCLES * n) * 1e9
    always = median(results["always"][0]) / (CYCLES * n) * 1e9
    coin_ns = median(results["coin"][0]) / (CYCLES * n) * 1e9
    pdm = median(results["pdm"][0]) / presentations * 1e9
    work = never + share * (always - never)
    coin_work = never + coin_share * (always - never)

    print(f"a9a.train: {n} examples; repeats: {args.repeats} (interleaved), medians")
    print(f"never (no presentation updates):     {never:6.1f} ns a presentation")
    print(f"always (every presentation updates): {always:6.1f} ns a presentation")
    print(
        f"pdm eps={EPS}: {presentations:,} presentations, {share:.1%} of them update: "
        f"{pdm:.1f} ns a presentation"
    )
    print(f"  the work alone, at that share:     {work:6.1f} ns")
    print(
        f"  the rest: {pdm - work:.1f} ns ({(pdm - work) / pdm:.0%} of PDM's time): "
        "unpredictable update decisions and PDM's multiplicity arithmetic"
    )
    print(
        f"coin ({coin_share:.1%} of presentations update, at random): {coin_ns:.1f} ns a "
        f"presentation, {coin_ns - coin_work:.1f} ns beyond its work"
    )
    print(
        f"  PDM beyond the coin: {pdm - coin_ns:+.1f} ns a presentation (its multiplicity "
        "arithmetic and rule; the rest of PDM's time is the work and the coin's cost)"
    )


if __name__ == "__main__":
    main()
