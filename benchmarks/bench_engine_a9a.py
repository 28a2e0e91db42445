"""PDM on Adult (a9a.train) against LIBLINEAR's dual coordinate descent, same run.

The PDM paper's setting: eps = 0.01, Delta = 1, rho = 1. LIBLINEAR `-s 1 -c 0.5 -B 1`
solves the same 2-norm soft-margin problem (C = 1 / (2 Delta^2)); at a tight tolerance
it also gives the maximum directional margin the certificate is compared with.

The runs alternate between the solvers, so each PDM run has a LIBLINEAR run just before
it; besides the ratio of the medians the script prints the median and range of these
paired ratios, which a load that drifts during the run moves less, and the same ratios
of the thread's CPU time, which leave out the time another process held the core (both
solvers run single-threaded in this process).

Run: .venv/bin/python benchmarks/bench_engine_a9a.py [--repeats N]
"""

from __future__ import annotations

import argparse
import math

import numpy as np
from _common import adult, interleaved_clocks, median
from liblinear.liblinearutil import parameter, problem, train

from streamlearn import PDM, ActiveSetSchedule, PDMSucc

REFERENCE_MARGIN = 85.21e-4  # ../shared/data/README.md
EPS, DELTA, RHO = 0.01, 1.0, 1.0
SHRINK = ActiveSetSchedule(shrink=True)


def liblinear_margin(model: object, X: object, y: np.ndarray) -> float:
    """Directional margin of LIBLINEAR's solution in the extended space (a lower bound of
    the maximum): a = (w, b, xi / Delta) with xi_k = max(0, 1 - l_k f(x_k))."""
    w, b = model.get_decfun()  # type: ignore[attr-defined]
    w = np.asarray(w)
    scores = y * (X @ w[: X.shape[1]] + b)  # type: ignore[operator]
    xi = np.maximum(0.0, 1.0 - scores)
    norm = math.sqrt(float(w @ w) + (b / RHO) ** 2 + float(xi @ xi) / DELTA**2)
    return float(np.min(scores + xi) / norm)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    X, y = adult()
    prob = problem(y, X, bias=RHO)
    runs = {
        "liblinear": lambda: train(prob, parameter(f"-s 1 -c {1 / (2 * DELTA**2)} -B {RHO} -q")),
        "pdm": lambda: PDM(eps=EPS, delta=DELTA, rho=RHO).fit(X, y),
        "pdm shrink=True": lambda: PDM(eps=EPS, delta=DELTA, rho=RHO, active_sets=SHRINK).fit(X, y),
        "pdm-succ": lambda: PDMSucc(eps=EPS, delta=DELTA, rho=RHO).fit(X, y),
    }
    PDM(eps=0.5, delta=DELTA).fit(X[:100], y[:100])  # compile the kernels before timing
    results = interleaved_clocks(runs, args.repeats)
    tight = train(prob, parameter(f"-s 1 -c {1 / (2 * DELTA**2)} -B {RHO} -e 0.0001 -q"))
    gamma_tight = liblinear_margin(tight, X, y)

    base_times, base_cpu, base_model = results["liblinear"]
    base = median(base_times)
    print(f"a9a.train: {X.shape[0]} examples, {X.shape[1]} features; eps={EPS} delta={DELTA}")
    print(f"repeats: {args.repeats} (interleaved), times are medians")
    print(
        f"maximum margin (LIBLINEAR -e 0.0001): {gamma_tight * 1e4:.2f}e-4 "
        f"(data/README.md: {REFERENCE_MARGIN * 1e4:.2f}e-4); "
        f"target (1 - eps) x 85.21e-4 = {(1 - EPS) * REFERENCE_MARGIN * 1e4:.2f}e-4"
    )
    print()
    print(row("solver", "seconds", "ratio", "updates", "passes", "margin", "bound", "gap"))
    ll_margin = f"{liblinear_margin(base_model, X, y) * 1e4:.2f}e-4"
    print(row("liblinear -s 1 -c 0.5", f"{base:.3f}", "1.00", "", "", ll_margin, "", ""))
    for name in ("pdm", "pdm shrink=True", "pdm-succ"):
        times, _, model = results[name]
        s = model.summary()
        seconds = median(times)
        print(
            row(
                name,
                f"{seconds:.3f}",
                f"{seconds / base:.2f}",
                f"{s['updates']:.4g}",
                str(s["passes"]),
                f"{s['margin_achieved'] * 1e4:.2f}e-4",
                f"{s['margin_upper_bound'] * 1e4:.2f}e-4",
                f"{s['certified_gap']:.4f}",
            )
        )
    print()
    for name in ("pdm", "pdm shrink=True"):
        times, cpu, model = results[name]
        target_met = model.summary()["margin_achieved"] >= (1 - EPS) * REFERENCE_MARGIN
        print(
            f"{name}: margin >= (1 - eps) x reference: {'yes' if target_met else 'NO'}; "
            f"time ratio to LIBLINEAR (target <= 3):\n"
            f"  wall clock: {ratios(times, base_times)}\n"
            f"  CPU time of the thread: {ratios(cpu, base_cpu)}"
        )


def ratios(times: list[float], base_times: list[float]) -> str:
    """The ratio of the medians, of the best runs, and of each run to the LIBLINEAR run
    just before it (median and range)."""
    paired = [t / b for t, b in zip(times, base_times, strict=True)]
    return (
        f"ratio of medians {median(times) / median(base_times):.2f}, best run against "
        f"best run {min(times) / min(base_times):.2f}, paired runs median "
        f"{median(paired):.2f} ({min(paired):.2f} to {max(paired):.2f})"
    )


def row(*cells: str) -> str:
    """One line of the table: the name left-aligned, the figures right-aligned."""
    widths = (22, 9, 7, 11, 7, 11, 11, 8)
    return cells[0].ljust(widths[0]) + "".join(
        c.rjust(w) for c, w in zip(cells[1:], widths[1:], strict=True)
    )


if __name__ == "__main__":
    main()
