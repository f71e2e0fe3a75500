"""Cost of the entropy terms (issue #3, parts a-c).

(a) One evaluation of the unlabelled terms (negative entropy, value and lattice gradient,
    sparse products included) over the BC2GM training sentences, divided by one supervised
    log-likelihood evaluation on the same sentences. Mann & McCallum report about 1.5x.
(b) `covariance_entropy_gradient` (Jiao et al., O(n^2 S^3)) against the lattice gradient
    (O(n S^2)) on random chains of length 10 ... 640, S = 3 and 22: the ratio should grow
    about linearly in n (log-log slope about 1) once the arithmetic outweighs the per-step
    Python overhead.
(c) The unlabelled terms with n_jobs=2 (worker processes) against n_jobs=1; and the peak
    memory of one evaluation for a quarter, half and all of the sentences.

Usage::

    python benchmarks/bench_entropy.py [--data-dir ../shared/data] [--repeat 5] [--parts abc]
"""

import argparse
import time
import tracemalloc
import warnings
from pathlib import Path

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from sklearn_ssl_crf import CRF
from sklearn_ssl_crf.datasets import load_bc2gm
from sklearn_ssl_crf.features import WindowFeatures
from sklearn_ssl_crf.inference import ChainLayout, covariance_entropy_gradient, entropy_gradient
from sklearn_ssl_crf.inference.entropy import entropy_batch
from sklearn_ssl_crf.objective._weights import chunk_log_likelihood, chunk_unlabeled_terms
from sklearn_ssl_crf.parallel import ChunkedSequences
from sklearn_ssl_crf.utils._threads import single_threaded_blas

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def best_time(function, repeat):
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        function()
        times.append(time.perf_counter() - started)
    return min(times)


def cost_ratio(data_dir, repeat):
    X, y = load_bc2gm(Path(data_dir) / "bc2gm")["train"]
    features = WindowFeatures()
    # Realistic posteriors: weights of a CRF trained on 500 sentences for 50 iterations
    # (stopping at that cap is meant).
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = CRF(max_iterations=50).fit(features.transform(X[:500]), y[:500])
    sequences = model.vectorizer_.transform(features.transform(X))
    index = {label: k for k, label in enumerate(model.classes_)}
    codes = np.array([index[label] for labels in y for label in labels])
    labelled = ChunkedSequences(sequences, codes, len(model.classes_))
    unlabelled = ChunkedSequences(sequences)
    state, transition = model.state_weights_, model.transition_weights_

    def supervised():
        labelled.sum(chunk_log_likelihood, state, transition)

    def entropy():
        unlabelled.sum(chunk_unlabeled_terms, state, transition, "lattice")

    with single_threaded_blas():
        t_supervised, t_entropy = best_time(supervised, repeat), best_time(entropy, repeat)
    print(f"(a) BC2GM train, {sequences.n_tokens:,} tokens, {len(sequences):,} sentences, "
          f"{sequences.n_features:,} attributes x {len(model.classes_)} labels; best of "
          f"{repeat}\n")
    print("| evaluation | seconds |\n|---|---:|")
    print(f"| supervised log-likelihood + gradient | {t_supervised:.3f} |")
    print(f"| unlabelled negative entropy + lattice gradient | {t_entropy:.3f} |")
    print(f"\nratio {t_entropy / t_supervised:.2f}x (target <= 1.5x)\n")
    return sequences, codes, len(model.classes_), state, transition


def scaling(repeat, batch=64):
    """Seconds per sequence of both gradients. The lattice is timed as training runs it, on a
    batch of ``batch`` chains (one loop over positions for all of them), and alone; the
    covariance form is per sequence, as published."""
    rng = np.random.default_rng(0)
    lengths = (10, 20, 40, 80, 160, 320, 640)
    print(f"(b) seconds per sequence, best of {repeat}; batched: {batch} chains at once\n")
    print("| S | n | lattice, one chain | lattice, batched | covariance | "
          "covariance / batched lattice |\n|---|---:|---:|---:|---:|---:|")
    with single_threaded_blas():
        for n_labels in (3, 22):
            ratios = []
            for n in lengths:
                unary = rng.normal(size=(n, n_labels))
                transition = rng.normal(size=(n_labels, n_labels))
                layout = ChainLayout([n] * batch)
                stacked = rng.normal(size=(n * batch, n_labels))
                single = best_time(lambda: entropy_gradient(unary, transition), repeat)
                batched = best_time(lambda: entropy_batch(stacked, transition, layout),
                                    repeat) / batch
                covariance = best_time(lambda: covariance_entropy_gradient(unary, transition),
                                       repeat)
                ratios.append(covariance / batched)
                print(f"| {n_labels} | {n} | {single:.2e} | {batched:.2e} | {covariance:.2e} | "
                      f"{ratios[-1]:.0f} |")
            for low, high in ((10, 160), (160, 640)):
                kept = [k for k, n in enumerate(lengths) if low <= n <= high]
                slope = np.polyfit(np.log(np.take(lengths, kept)), np.log(np.take(ratios, kept)),
                                   1)[0]
                print(f"| {n_labels} | log-log slope of the ratio, n = {low}..{high} | | | | "
                      f"{slope:.2f} |")
    print()


def parallel_speedup(sequences, codes, n_labels, state, transition, repeat):
    """n_jobs=2 against n_jobs=1, for the unlabelled terms and, for comparison, the supervised
    log-likelihood. The two settings alternate, evaluation by evaluation, so that both see the
    same moments of a noisy machine; best times and the median of the paired ratios."""
    print(f"(c) one evaluation, {repeat} pairs, n_jobs=1 and 2 alternating\n")
    print("| evaluation | n_jobs=1, best (s) | n_jobs=2, best (s) | ratio of bests | "
          "median paired ratio |\n|---|---:|---:|---:|---:|")
    for name, labels, function, args in (
            ("unlabelled terms (target >= 1.6x)", None, chunk_unlabeled_terms, ("lattice",)),
            ("supervised log-likelihood", codes, chunk_log_likelihood, ())):
        data = {n_jobs: ChunkedSequences(sequences, labels, n_labels, n_jobs=n_jobs)
                for n_jobs in (1, 2)}
        times = {1: [], 2: []}
        with single_threaded_blas():
            data[2].sum(function, state, transition, *args)  # starts the workers
            for _ in range(repeat):
                for n_jobs in (1, 2):
                    times[n_jobs].append(best_time(
                        lambda: data[n_jobs].sum(function, state, transition, *args), 1))
        one, two = np.array(times[1]), np.array(times[2])
        print(f"| {name} | {one.min():.3f} | {two.min():.3f} | {one.min() / two.min():.2f}x | "
              f"{np.median(one / two):.2f}x |")
    print()


def memory(sequences, state, transition):
    """Peak memory allocated by one evaluation of the unlabelled terms (work arrays included,
    the packed data not) for growing numbers of sentences: it should stay flat."""
    print("\n(c') peak memory allocated during one evaluation, fresh work arrays\n")
    print("| sentences | tokens | packed data (MB) | peak during the evaluation (MB) |\n"
          "|---:|---:|---:|---:|")
    for fraction in (0.25, 0.5, 1.0):
        subset = sequences[:int(len(sequences) * fraction)]
        data = ChunkedSequences(subset)
        stored = sum(chunk.matrix.data.nbytes + chunk.matrix.indices.nbytes
                     + chunk.matrix.indptr.nbytes for chunk in data.chunks)
        with single_threaded_blas():
            tracemalloc.start()
            data.sum(chunk_unlabeled_terms, state, transition, "lattice")
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
        print(f"| {len(subset):,} | {subset.n_tokens:,} | {stored / 1e6:.0f} | "
              f"{peak / 1e6:.0f} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", default=str(DEFAULT_DATA))
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--parts", default="abc",
                        help="which parts to run, e.g. 'ab' (c needs a and two idle cores)")
    args = parser.parse_args()
    if "a" in args.parts:
        sequences, codes, n_labels, state, transition = cost_ratio(args.data_dir, args.repeat)
    if "b" in args.parts:
        scaling(args.repeat)
    if "c" in args.parts:
        if "a" not in args.parts:
            parser.error("part c reuses the data of part a")
        parallel_speedup(sequences, codes, n_labels, state, transition, args.repeat)
        memory(sequences, state, transition)


if __name__ == "__main__":
    main()
