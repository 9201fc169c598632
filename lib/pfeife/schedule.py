"""Pipeline schedules: per rank, the ordered list of (stage, micro-batch, "F" | "B") events.

Sec. 3-4 of the paper (as the chapter's note reads the official ``scheduler.py``): node ``j`` of
``S = L D`` nodes runs on rank ``j mod D``. Forwards are issued loop by loop in rounds of
``loop_batch`` micro-batches; after a warm-up of
``W_r = ((S - delta) // D) loop_batch + delta + min(delta - 1, prefetch_fwd) - 1`` forwards
(``delta = S - `` the rank's last node index) forwards and backwards alternate (1F1B) and the
remaining backwards drain at the end. GPipe runs all forwards, then all backwards.
"""

from __future__ import annotations

from icml25.checks import check_int

__all__ = [
    "make_schedule",
    "gpipe_schedule",
    "one_f_one_b_schedule",
    "check_schedule",
    "schedule_candidates",
    "in_flight",
]

Event = tuple[int, int, str]


def _check_sched_args(
    D: int, M: int, S: int, loop_batch: int, prefetch_fwd: int
) -> tuple[int, int, int, int, int]:
    D = check_int(D, "D", low=1)
    M = check_int(M, "M", low=1)
    S = check_int(S, "S", low=1)
    if S % D:
        raise ValueError(
            f"S must be a multiple of D = {D} (each rank holds S / D stages), got S = {S}"
        )
    loop_batch = check_int(loop_batch, "loop_batch", low=1, high=M)
    if M % loop_batch:
        raise ValueError(
            f"M = {M} must be a multiple of loop_batch, got loop_batch = {loop_batch}"
        )
    if S > D and loop_batch < D:
        raise ValueError(
            f"loop_batch must be >= D = {D} for a looped schedule (S > D), got {loop_batch}"
        )
    prefetch_fwd = check_int(prefetch_fwd, "prefetch_fwd", low=0)
    if prefetch_fwd >= D:
        raise ValueError(f"prefetch_fwd must be < D = {D}, got {prefetch_fwd}")
    return D, M, S, loop_batch, prefetch_fwd


def make_schedule(
    D: int, M: int, S: int, loop_batch: int, prefetch_fwd: int = 0
) -> list[list[Event]]:
    """Pfeife's looped 1F1B schedule (Sec. 3, "schedules"; reconstruction of ``scheduler.py``).

    Args:
        D: ranks. M: micro-batches. S: stages, a multiple of D (L = S / D loops).
        loop_batch: micro-batches per loop round; divides M; >= D when L > 1.
        prefetch_fwd: extra forwards before the first backward, ``0 <= prefetch_fwd < D``.

    Returns:
        ``D`` lists; rank ``r`` runs stages ``r, r + D, ...``; each list holds ``2 M L`` events
        ``(stage, micro_batch, "F" | "B")`` in execution order.

    Raises:
        ValueError: S not a multiple of D, M not a multiple of loop_batch, prefetch_fwd >= D,
            loop_batch < D for a looped schedule; TypeError for non-integers.
    """
    return _make_schedule(*_check_sched_args(D, M, S, loop_batch, prefetch_fwd))


def _make_schedule(
    D: int, M: int, S: int, loop_batch: int, prefetch_fwd: int
) -> list[list[Event]]:
    L = S // D
    out = []
    for r in range(D):
        fwd = [
            (l * D + r, k, "F")
            for g in range(0, M, loop_batch)
            for l in range(L)
            for k in range(g, g + loop_batch)
        ]
        bwd = [
            (l * D + r, k, "B")
            for g in range(0, M, loop_batch)
            for l in reversed(range(L))
            for k in range(g, g + loop_batch)
        ]
        delta = S - ((L - 1) * D + r)  # S minus the rank's last node index
        warm = (
            ((S - delta) // D) * loop_batch + delta + min(delta - 1, prefetch_fwd) - 1
        )
        warm = min(max(warm, 0), len(fwd))
        ev = fwd[:warm]
        fi, bi = warm, 0
        while fi < len(fwd):  # steady state: one forward, one backward
            ev.append(fwd[fi])
            fi += 1
            ev.append(bwd[bi])
            bi += 1
        ev.extend(bwd[bi:])
        out.append(ev)
    return out


def gpipe_schedule(D: int, M: int, S: int | None = None) -> list[list[Event]]:
    """GPipe (Huang et al. 2019): every forward, then every backward, per rank ("BFS").

    Args:
        D: ranks. M: micro-batches. S: stages (default D; a multiple of D).

    Returns:
        per rank ``[(stage, mb, "F"), ..., (stage, mb, "B"), ...]``; backwards in reverse stage order.

    Raises:
        ValueError: S not a multiple of D; TypeError: non-integers.
    """
    D, M, S, _, _ = _check_sched_args(D, M, D if S is None else S, M, 0)
    L = S // D
    return [
        [(l * D + r, k, "F") for l in range(L) for k in range(M)]
        + [(l * D + r, k, "B") for l in reversed(range(L)) for k in range(M)]
        for r in range(D)
    ]


def one_f_one_b_schedule(D: int, M: int) -> list[list[Event]]:
    """Non-looped 1F1B (PipeDream-flush, Narayanan et al. 2021): ``D - r - 1`` warm-up forwards on rank r.

    Args:
        D: ranks (= stages). M: micro-batches.

    Returns:
        the schedule (``make_schedule(D, M, D, M, 0)``).

    Raises:
        TypeError, ValueError: non-integer or non-positive D, M.
    """
    M = check_int(M, "M", low=1)
    return make_schedule(D, M, check_int(D, "D", low=1), M, 0)


def schedule_candidates(D: int, M: int, S: int) -> list[tuple[int, int]]:
    """The planner's ``(loop_batch, prefetch_fwd)`` pairs for ``S`` stages (Sec. 4, Algorithm 1).

    Non-looped (S = D): ``loop_batch = M``, every prefetch. Looped: every divisor of M that is
    >= D, every prefetch.

    Returns:
        list of pairs. Raises: ValueError, TypeError as :func:`make_schedule`.
    """
    D, M, S, _, _ = _check_sched_args(D, M, S, M, 0)
    lbs = [M] if S == D else [b for b in range(D, M + 1) if M % b == 0]
    return [(b, p) for b in lbs for p in range(D)]


def check_schedule(schedule: list[list[Event]], S: int, M: int) -> list[list[Event]]:
    """Validate a schedule: rank ``r`` runs exactly F and B of every micro-batch of its stages
    ``j = r mod D``, each once, each B after its F.

    Args:
        schedule: per-rank event lists. S: stages. M: micro-batches.

    Returns:
        the schedule as lists of ``(int, int, str)`` tuples.

    Raises:
        TypeError: not a list of lists of triples. ValueError: a rule is broken (named).
    """
    S = check_int(S, "S", low=1)
    M = check_int(M, "M", low=1)
    if not isinstance(schedule, (list, tuple)) or not schedule:
        raise TypeError("schedule must be a non-empty list of per-rank event lists")
    D = len(schedule)
    if S % D:
        raise ValueError(f"schedule has {D} ranks but S = {S} is not a multiple of it")
    out = []
    for r, evs in enumerate(schedule):
        if not isinstance(evs, (list, tuple)):
            raise TypeError(f"schedule[{r}] must be a list of (stage, mb, kind) events")
        seen_f, seen_b = set(), set()
        clean = []
        for e in evs:
            if not (isinstance(e, (tuple, list)) and len(e) == 3):
                raise TypeError(
                    f"schedule[{r}] holds {e!r}, not a (stage, mb, 'F'|'B') triple"
                )
            j, k, kind = int(e[0]), int(e[1]), e[2]
            if kind not in ("F", "B"):
                raise ValueError(
                    f"schedule[{r}]: kind must be 'F' or 'B', got {kind!r}"
                )
            if not (0 <= j < S and j % D == r):
                raise ValueError(
                    f"schedule[{r}]: stage {j} does not run on rank {r} (stage mod D)"
                )
            if not 0 <= k < M:
                raise ValueError(f"schedule[{r}]: micro-batch {k} outside 0..{M - 1}")
            if kind == "F":
                if (j, k) in seen_f:
                    raise ValueError(f"schedule[{r}]: F{j},{k} twice")
                seen_f.add((j, k))
            else:
                if (j, k) not in seen_f:
                    raise ValueError(f"schedule[{r}]: B{j},{k} before its F")
                if (j, k) in seen_b:
                    raise ValueError(f"schedule[{r}]: B{j},{k} twice")
                seen_b.add((j, k))
            clean.append((j, k, kind))
        want = {(j, k) for j in range(r, S, D) for k in range(M)}
        if seen_f != want or seen_b != want:
            raise ValueError(
                f"schedule[{r}] must run F and B of every micro-batch of stages {sorted({j for j, _ in want})}"
            )
        out.append(clean)
    return out


def in_flight(schedule: list[list[Event]]) -> list[int]:
    """Most micro-batches whose forward has run but not their backward, per rank.

    Returns:
        (D,) list of ints: the stashed activations a rank must hold at once.
    """
    res = []
    for evs in schedule:
        cur = best = 0
        for _j, _k, kind in evs:
            cur += 1 if kind == "F" else -1
            best = max(best, cur)
        res.append(best)
    return res
