"""Where one `GraphPRCRF` fit spends its time (issue #30).

One fit at fixed settings (``lam=1, c1=0, c2=1``, no selection, ``early_stopping=False``:
20 EM iterations of at most 50 L-BFGS steps) on draw 0 of ``bench_defaults.py``, POS
(a language of ``--pools``; the trigram graph built by the fit) or handwriting (order 1,
the k-NN graph given), under cProfile. Prints the seconds of the whole fit and of its
parts: forward-backward passes (the lattices and their marginals), sparse products (feature
rows times weights and back), L-BFGS's own bookkeeping (the two-loop recursion, the
history, the loop), the graph, the featurisation, and what is left; and the E-step and
M-step totals.

Usage::

    OPENBLAS_NUM_THREADS=1 python benchmarks/profile_graph_pr.py --pools "POS English" handwriting
"""

import argparse
import cProfile
import pstats
import time
import warnings
from pathlib import Path

from bench_propagation import pools
from conll_features import DEFAULT_DATA
from sklearn.exceptions import ConvergenceWarning

from sklearn_ssl_crf import GraphPRCRF
from sklearn_ssl_crf.utils._threads import single_threaded_blas

# Profile entries ("file:function") of each part; "cumulative" counts callees.
PARTS = {
    "forward-backward": (["chain.py:__init__", "node_marginals", "edge_marginal_sum"],
                         "cumulative"),
    "sparse products": (["csr_matvecs", "csc_matvecs", "csr_matmat",
                         "built-in method numpy.zeros"], "own"),
    "L-BFGS bookkeeping": (["apply_inverse_hessian", "lbfgs.py:push", "minimize_lbfgs"],
                           "mixed"),
    "graph": (["trigram_graph"], "cumulative"),
    "featurising": (["_encoding.py:_encode"], "cumulative"),
}


def seconds(stats, patterns, field):
    """Summed own (``field=2``) or cumulative (3) seconds of the matching entries."""
    return sum(value[field] for key, value in stats.items()
               if any(pattern in f"{key[0]}:{key[2]}" for pattern in patterns))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--pools", nargs="+", default=["POS English", "handwriting"])
    args = parser.parse_args(argv)
    print("| pool | fit (s) | forward-backward | sparse products | L-BFGS bookkeeping | "
          "graph | featurising | rest | E-step | M-step |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, X, graph, y_partial, _, _ in pools(args.data_dir):
        if name not in args.pools:
            continue
        model = GraphPRCRF(graph="trigram" if name.startswith("POS") else graph, lam=1.0,
                           c1=0.0, c2=1.0, c2_transitions=None, early_stopping=False)
        profile = cProfile.Profile()
        with single_threaded_blas(), warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            started = time.perf_counter()
            profile.runcall(model.fit, X, y_partial)
            wall = time.perf_counter() - started
        stats = pstats.Stats(profile).stats
        total = max(value[3] for value in stats.values())
        parts = {}
        for part, (patterns, kind) in PARTS.items():
            if kind == "mixed":  # the loop's own time, its helpers' cumulative
                parts[part] = (seconds(stats, patterns[:2], 3)
                               + seconds(stats, patterns[2:], 2))
            else:
                parts[part] = seconds(stats, patterns, 3 if kind == "cumulative" else 2)
        rest = total - sum(parts.values())
        share = " | ".join(f"{value:.1f} ({100 * value / total:.0f} %)"
                           for value in [*parts.values(), rest])
        e_step = seconds(stats, ["_graph_pr_em.py:_e_step"], 3)
        m_step = seconds(stats, ["minimize_lbfgs"], 3)
        print(f"| {name} | {wall:.1f} (profiled {total:.1f}) | {share} | {e_step:.1f} | "
              f"{m_step:.1f} |", flush=True)


if __name__ == "__main__":
    main()
