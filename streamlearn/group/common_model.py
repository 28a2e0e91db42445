"""The common model of a learning group, as each member computes it from the records it
holds (:class:`GroupTable`) and its own share: the shares summed in the members' order,
the group's Delta, its calibration and the upper bound on the union of the windows'
margin. Members that hold the same records compute the same bits.
"""

from __future__ import annotations

import math

import numpy as np

from streamlearn.group.records import MemberRecord
from streamlearn.group.table import GroupTable
from streamlearn.learn.calibration import Platt
from streamlearn.learn.contribution import Contribution, summed


def share_distance(a: Contribution, b: Contribution) -> float:
    """||a - b|| over (w, beta), in ``a``'s units."""
    b = b.at_exponent(a.exponent)
    n = max(a.n_features, b.n_features)
    diff = np.zeros(n)
    a.add_to(diff)
    diff[b.indices] -= b.values
    return math.sqrt(float(diff @ diff) + (a.beta - b.beta) ** 2)


def shares_in_model(table: GroupTable, own: Contribution) -> tuple[list[Contribution], int]:
    """The shares of the members in the model, in their order, with ``own`` as the local
    member's; and where the local member's stands among them."""
    members = table.in_model()
    shares = [own if m == table.me else table.records[m].share for m in members]
    return shares, members.index(table.me)


def group_delta(table: GroupTable, own_last: MemberRecord | None, own_delta: float) -> float:
    """The group's Delta: the largest of the records in the model (the local member's
    last record, ``own_last``, as it published it), which members holding the same
    records agree on; the local learner's own (``own_delta``) before any record has one.
    With ``--delta auto`` (or ``first``) each member settles Delta from its own first
    examples: the largest is R/10 over the first examples of them all."""
    deltas = [table.records[member].delta for member in table.in_model()
              if member != table.me and member in table.records]  # fmt: skip
    if own_last is not None:
        deltas.append(own_last.delta)
    return max(deltas, default=0.0) or own_delta


def group_calibration(table: GroupTable, own_last: MemberRecord | None) -> Platt:
    """The group's Platt scaling: the members' slopes, each fitted on its window when
    it last published (a fit at every fold of a record read cost milliseconds),
    averaged by the examples their windows then held, in the members' order: members
    that hold the same records hold the same calibration."""
    last = own_last
    own_examples, own_slope = (last.window.examples, last.window.slope) if last else (0, 1.0)
    total = weight = 0.0
    for member in table.in_model():
        if member == table.me:
            slope, examples = own_slope, own_examples
        else:
            window = table.records[member].window
            slope, examples = window.slope, window.examples
        total += slope * examples
        weight += examples
    return Platt(total / weight) if weight else Platt()


def union_upper_bound(
    table: GroupTable,
    own_bound: float,
    published: list[Contribution],
    scale_exponent: int,
    delta: float,
) -> float:
    """An upper bound on the maximum margin of the union of the windows in the common
    model: the smallest of the members' bounds on their own windows (``own_bound``: the
    local member's; the union has all of their examples), and ||h|| / s of the common
    model's dual combination (h = sum of the ``published`` shares, s = sum of their t,
    ``delta``: the group's Delta) while every share is a combination of its window alone
    (none holds evicted examples)."""
    bounds = [own_bound] if math.isfinite(own_bound) else []
    for member in table.in_model():
        if member != table.me and member in table.records:
            window = table.records[member].window
            if window.examples and window.bound > 0:
                bounds.append(window.bound)
    weights, (beta, updates, slack) = summed(published, scale_exponent)
    if updates > 0 and not any(share.evicted for share in published):
        delta_sq = delta**2
        hull = math.sqrt(float(weights @ weights) + beta * beta + delta_sq * slack)
        bounds.append(hull / updates)
    return min(bounds) if bounds else math.nan
