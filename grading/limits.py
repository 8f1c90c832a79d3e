"""How long and how much a grading may take: the limits, each check's limit from what it cost
the reference, and the strikes that cut them for a submission that ignores them."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass, replace

from grading.request import CHECK_LIMIT, WALL_LIMIT
from grading.results import Check, Result

GRACE = 1.0  # seconds past a check's own limit before the watchdog kills the child
COLLECT_LIMIT = 60.0  # seconds allowed for importing the submission and collecting
# Collecting the stub's checks (trusted code, once per version of the files) may take longer: it
# is the first child of a grading, and on a loaded machine with cold caches it pays for them.
STUB_COLLECT_LIMIT = 180.0
_FLOOR = 3.0  # the least time limit a check is given from its cost (see `bounded`)
_COST_FACTOR = 30.0  # a check's limit, in times what it cost the reference
# After this many checks of a grading were killed for running past their limits without
# stopping (the submission ignores the timeout), the rest run to `AFTER_STRIKES` seconds each:
# a check that does not call the hanging code passes in far less. After this many stopped at
# their limits (the submission hangs), every check runs to `_HANG_FACTOR` times its cost on the
# reference, at least `_HANG_FLOOR` seconds.
_STRIKES, AFTER_STRIKES = 3, 0.5
_HANG_FACTOR, _HANG_FLOOR = 5.0, 1.0


@dataclass(frozen=True)
class Limits:
    """Resource limits for one graded run."""

    wall: float = WALL_LIMIT  # seconds for the whole run, resumes included
    memory: int = 4 << 30  # bytes of address space
    file_size: int = 64 << 20  # bytes any one file (captured output included) may grow to
    open_files: int = 512
    timeout: float = CHECK_LIMIT  # default per-check limit; `@pytest.mark.timeout(s)` overrides
    shards: int = 2  # children that share a grading's checks, running at once
    from_costs: bool = True  # limits from what each check cost the reference (`bounded`)
    collect: float = COLLECT_LIMIT  # seconds for importing the submission and collecting


def bounded(checks: Iterable[Check], limits: Limits) -> list[Check]:
    """`checks`, each with the time limit it runs under: with `limits.from_costs`, a check on
    the default limit whose cost on the reference is stored gets `_COST_FACTOR` times that cost
    (at least `_FLOOR` seconds, at most the default), so that a submission that hangs costs
    seconds, not the default limit, in every check that calls the hanging code. The factor
    leaves room for a correct answer slower than the reference on a loaded machine. A check
    that sets its own limit (the measuring checks, whose wrong answers run to a budget) keeps
    it: its verdict must not turn on the machine's load. (Only for a submission that hangs does
    `Strikes` cut those too.)"""
    if not limits.from_costs:
        return list(checks)
    return [replace(c, timeout=min(c.timeout, _from_cost(c)))
            if c.costed and c.timeout == limits.timeout else c for c in checks]


def _from_cost(check: Check) -> float:
    return max(_FLOOR, _COST_FACTOR * check.cost)


class Strikes:
    """Checks of one grading that ran out of time, counted for the children started next.

    Killed for running past their limits without stopping (`count`): once `_STRIKES` were, the
    submission ignores its limits, and every check runs to `AFTER_STRIKES` seconds. Stopped at
    their limits (`stopped`): once `_STRIKES` were, the submission hangs, and every check whose
    cost on the reference is known runs to `_HANG_FACTOR` times it (at least `_HANG_FLOOR`),
    those with limits of their own (a minute for some thread races) included: a hang costs
    about a second a check, not seconds or minutes. A submission that never runs out of time
    is never cut; where the limits are the user's (`--timeout`), only the first rule applies.

    Where the cut falls can depend on timing (which shard's check is the third to stop), so the
    score of a submission that hangs may move by the checks it passes only slowly (over 5x the
    reference's cost); nothing else does."""

    def __init__(self, *, from_costs: bool = True) -> None:
        self.count = 0
        self.stopped = 0
        self.from_costs = from_costs
        self.dealt_hung = False  # the last shards dealt were cut for a hang
        self._lock = threading.Lock()

    def add(self) -> None:
        """A check was killed for running past its limit."""
        with self._lock:
            self.count += 1

    def add_stopped(self, checks: int) -> None:
        """`checks` checks stopped at their limits."""
        with self._lock:
            self.stopped += checks

    def hangs(self) -> bool:
        """Enough checks stopped at their limits that children started now are cut."""
        return self.from_costs and self.stopped >= _STRIKES

    def restart(self, dealt_hung: bool) -> bool:
        """A child dealt its checks with `dealt_hung` as `dealt_hung` was then should stop now,
        for a new one to run what is left under the cut limits."""
        return not dealt_hung and self.hangs()

    def cut(self, shard: list[Result]) -> None:
        """Cut the limits of `shard`'s checks as the strikes so far say."""
        self.dealt_hung = self.hangs()
        for r in shard:
            if self.count >= _STRIKES:
                r.check = replace(r.check, timeout=min(r.check.timeout, AFTER_STRIKES))
            elif self.dealt_hung and r.check.costed:
                hang = max(_HANG_FLOOR, _HANG_FACTOR * r.check.cost)
                r.check = replace(r.check, timeout=min(r.check.timeout, hang))
