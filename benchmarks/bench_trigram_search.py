"""The trigram graph's searches against the exact one (issues #30 and #43).

Draw 0 of ``bench_defaults.py``'s POS pools (UD English-EWT, German-GSD, Italian-ISDT, dev +
test, 100 labelled sentences). For each, `trigram_graph` (k = 60) with
``algorithm='exact'`` and each of ``--algorithms``: ``'pruned'`` (the features more than
``--max-df`` of the types share left out of the similarities) and ``'hnsw'`` (PMI rows
reduced to 256 dimensions by truncated SVD for faiss's index): seconds, the share of the
exact graph's edges the graph has, and the token error on the unlabelled tokens of
`GraphPropagation` and of a `GraphPRCRF` fit at fixed settings (λ = 1, c1 = 0, c2 = 1, 20
EM iterations) on each graph.

Usage::

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_trigram_search.py --algorithms pruned hnsw
"""

import argparse
import time
import warnings
from pathlib import Path

from bench_graph_pr import token_errors
from bench_propagation import pools
from conll_features import DEFAULT_DATA
from sklearn.exceptions import ConvergenceWarning

from sklearn_ssl_crf import GraphPRCRF, GraphPropagation
from sklearn_ssl_crf.graph import trigram_graph


def share_or_count(text):
    """``--max-df`` as trigram_graph takes it: a float (a share of the types) or an int."""
    return float(text) if any(c in text for c in ".eE") else int(text)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--algorithms", nargs="+", choices=("pruned", "hnsw"),
                        default=["pruned", "hnsw"])
    parser.add_argument("--max-df", type=share_or_count, default=0.003,
                        help="trigram_graph's max_df for 'pruned': a share (0.01) or a "
                             "number of types (1000)")
    args = parser.parse_args(argv)
    print("| pool | types | search | seconds | edges | recall | GP error | PR error | "
          "PR-θ error |")
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|")
    for name, X, _, y_partial, gold, n in pools(args.data_dir, handwriting=False):
        graphs, seconds = {}, {}
        for algorithm in ("exact", *args.algorithms):
            started = time.perf_counter()
            graphs[algorithm] = trigram_graph(X, n_neighbors=60, algorithm=algorithm,
                                              max_df=args.max_df)
            seconds[algorithm] = time.perf_counter() - started
        exact = graphs["exact"].weights > 0
        for algorithm, graph in graphs.items():
            recall = exact.multiply(graph.weights > 0).nnz / exact.nnz
            gp = GraphPropagation(graph=graph).fit(X, y_partial)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                pr = GraphPRCRF(graph=graph, lam=1.0, c1=0.0, c2=1.0, c2_transitions=None,
                                early_stopping=False).fit(X, y_partial)
            print(f"| {name} | {graph.n_vertices:,} | {algorithm} | {seconds[algorithm]:.1f} | "
                  f"{graph.weights.nnz // 2:,} | {recall:.3f} | "
                  f"{token_errors(gp.transduction_[n:], gold):.2f} | "
                  f"{token_errors(pr.transduction_[n:], gold):.2f} | "
                  f"{token_errors(pr.predict(X[n:]), gold):.2f} |", flush=True)


if __name__ == "__main__":
    main()
