"""Benchmark: CombiMOTS's hot loops against the libraries the chapter checks them with.

- Bulk Tanimoto: :func:`icml25.kernels.tanimoto.max_tanimoto` (the similarity / novelty objective: the
  largest Tanimoto of each of ``n`` fingerprints to ``m = 100`` references) against RDKit's
  ``BulkTanimotoSimilarity`` called once per query, ``n in {1e3, 1e4, 1e5}``, 2048-bit fingerprints with
  2 % of the bits set (the density of Morgan radius-2 fingerprints of REAL blocks). Equality is asserted.
- Dominance: :func:`icml25.kernels.dominance.pareto_mask` against ``paretoset`` (numba, compiled before
  timing) and pymoo's ``NonDominatedSorting`` (moocore) front 0, and :func:`non_dominated_sort` against
  pymoo's full ranking, ``n in {1e3, 1e4, 1e5}``, D = 4 uniform objectives. The NumPy reference's full
  sort is refused above ``--max-sort-n`` (its peeling is O(fronts x n x front)); the GPU kernels are not.
- Rollouts per second of :class:`icml25.combimots.ParetoMCTS` against SyntheMol's own ``Generator`` at
  equal settings (1,500 REAL blocks, ``num_expand_nodes = 25``, c = 10, one reaction, the same stand-in
  objective, block scores precomputed for both), construction included.

Times are CPU seconds of this process (``time.process_time``, best of ``--n-reps``), measured side by side
in one run; ratios are baseline seconds over ours (> 1: ours is faster). On a GPU machine the dispatchers
take the kernels (``backend`` in the JSON says which path ran).

Writes ``benchmarks/results/combimots.json``.

Usage: ``python benchmarks/combimots.py [--ns 1000 10000 100000] [--n-rollouts 100] [--n-reps 2]``
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from icml25.common import backend_label, device_name, profile_config

import _limits

LIMITS: dict = {}
LOOPS: list = []


def _best(fn, n_reps: int) -> tuple[float, object]:
    best, out = np.inf, None
    for _ in range(n_reps):
        t0 = time.process_time()
        out = fn()
        best = min(best, time.process_time() - t0)
    return best, out


def bench_tanimoto(
    n: int, n_reps: int, rng: np.random.Generator, m: int = 100, n_bits: int = 2048
) -> dict:
    from rdkit import DataStructs

    from icml25.kernels import tanimoto

    bits = rng.random((n + m, n_bits)) < 0.02
    P = tanimoto.pack_bits(bits)
    A, B = P[:n], P[n:]
    fps = []
    for row in bits:
        fp = DataStructs.ExplicitBitVect(n_bits)
        fp.SetBitsFromList([int(j) for j in np.flatnonzero(row)])
        fps.append(fp)
    qa, qb = fps[:n], fps[n:]
    t_ours, ours = _best(lambda: tanimoto.max_tanimoto(A, B), n_reps)
    t_rd, rd = _best(
        lambda: np.array(
            [max(DataStructs.BulkTanimotoSimilarity(f, qb)) for f in qa],
            dtype=np.float32,
        ),
        n_reps,
    )
    assert np.array_equal(ours, rd), "max_tanimoto differs from RDKit"
    words = n * m * A.shape[1]
    LOOPS.append(
        _limits.memory_bound(
            "max_tanimoto",
            f"n={n}, m={m}, 2048 bits",
            16.0 * words,
            t_ours,
            LIMITS,
            baseline="RDKit BulkTanimotoSimilarity per query",
            ratio=t_rd / t_ours,
            counted="16 B per (query word, reference word) pair, no cache reuse counted",
        )
    )
    return {
        "n": n,
        "m": m,
        "ours_s": t_ours,
        "rdkit_s": t_rd,
        "ratio_rdkit_over_ours": t_rd / t_ours,
        "pairs_per_s_ours": n * m / t_ours,
        "pairs_per_s_rdkit": n * m / t_rd,
    }


def bench_dominance(
    n: int, n_reps: int, rng: np.random.Generator, max_sort_n: int, D: int = 4
) -> dict:
    import paretoset
    from pymoo.util.nds.non_dominated_sorting import NonDominatedSorting

    from icml25.kernels import dominance

    F = rng.random((n, D))
    # numba compile, not timed
    paretoset.paretoset(F[:50], sense=["max"] * D, distinct=False)
    t_ours, mask = _best(lambda: dominance.pareto_mask(F), n_reps)
    t_ps, ps = _best(
        lambda: paretoset.paretoset(F, sense=["max"] * D, distinct=False), n_reps
    )
    t_pm, front = _best(
        lambda: NonDominatedSorting().do(-F, only_non_dominated_front=True), n_reps
    )
    assert np.array_equal(mask, ps) and np.array_equal(
        np.flatnonzero(mask), np.sort(front)
    )
    out = {
        "n": n,
        "D": D,
        "front_size": int(mask.sum()),
        "mask_ours_s": t_ours,
        "mask_paretoset_s": t_ps,
        "mask_pymoo_s": t_pm,
        "ratio_paretoset_over_ours": t_ps / t_ours,
        "ratio_pymoo_over_ours": t_pm / t_ours,
    }
    if n <= max_sort_n:
        t_sort, rank = _best(lambda: dominance.non_dominated_sort(F), n_reps)
        t_pms, (_, prank) = _best(
            lambda: NonDominatedSorting().do(-F, return_rank=True), n_reps
        )
        assert np.array_equal(rank, prank)
        out.update(
            {
                "sort_ours_s": t_sort,
                "sort_pymoo_s": t_pms,
                "ratio_sort_pymoo_over_ours": t_pms / t_sort,
                "n_fronts": int(rank.max()) + 1,
            }
        )
    else:
        out["sort"] = (
            f"not timed: n > --max-sort-n = {max_sort_n} for the NumPy reference"
        )
    return out


def bench_rollouts(n_rollouts: int, n_blocks: int, seed: int = 0) -> dict:
    from icml25 import combimots as cm

    blocks, reactions = cm.load_real_space(n_blocks, rng=np.random.default_rng(seed))
    refs = cm.load_reference_inhibitors()
    warm = cm.stand_in_objectives(refs)
    block_F = warm(list(blocks["smiles"]))

    def fresh():
        obj = cm.stand_in_objectives(refs)
        # block scores precomputed for both searches
        obj._cache.update(zip(blocks["smiles"], block_F))
        return obj

    import synthemol.generate  # noqa: F401 - imported before timing

    obj = fresh()
    t0 = time.process_time()
    tree = cm.ParetoMCTS(
        obj, blocks, reactions, num_expand_nodes=25, rng=np.random.default_rng(seed)
    ).run(n_rollouts)
    t_ours = time.process_time() - t0
    obj2 = fresh()
    t0 = time.process_time()
    sm = cm.run_synthemol(
        blocks,
        reactions,
        cm.scalarize(obj2),
        n_rollouts,
        num_expand_nodes=25,
        rng_seed=seed,
    )
    t_sm = time.process_time() - t0
    return {
        "n_rollouts": n_rollouts,
        "n_blocks": n_blocks,
        "ours_s": t_ours,
        "synthemol_s": t_sm,
        "rollouts_per_s_ours": n_rollouts / t_ours,
        "rollouts_per_s_synthemol": n_rollouts / t_sm,
        "ratio_synthemol_over_ours": t_sm / t_ours,
        "products_ours": len(tree.molecules()),
        "products_synthemol": len(sm),
        "oracle_calls_ours": tree.n_oracle_calls,
        "oracle_calls_synthemol": obj2.n_calls,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ns", type=int, nargs="+", default=[1000, 10000, 100000])
    ap.add_argument("--n-rollouts", type=int, default=100)
    ap.add_argument("--n-blocks", type=int, default=1500)
    ap.add_argument("--n-reps", type=int, default=2)
    ap.add_argument("--max-sort-n", type=int, default=10000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    profile_config("cpu")  # one thread, as every benchmark of the book
    global LIMITS
    LIMITS = _limits.measure()
    print(_limits.describe(LIMITS), flush=True)
    rng = np.random.default_rng(args.seed)
    out = {
        "device": device_name(),
        "backend": backend_label(),
        "utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "threads": 1,
        "tanimoto": [],
        "dominance": [],
    }
    for n in args.ns:
        out["tanimoto"].append(bench_tanimoto(n, args.n_reps, rng))
        print("tanimoto", out["tanimoto"][-1], flush=True)
        out["dominance"].append(bench_dominance(n, args.n_reps, rng, args.max_sort_n))
        print("dominance", out["dominance"][-1], flush=True)
    out["rollouts"] = bench_rollouts(args.n_rollouts, args.n_blocks, args.seed)
    print("rollouts", out["rollouts"], flush=True)
    _limits.attach(out, LIMITS, LOOPS)
    path = Path(__file__).resolve().parent / "results" / "combimots.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
