"""Scaling of `GraphPRCRF` with the unlabelled corpus, 10^3 to 10^5 sentences (issue #30).

Data. The labelled sentences are 100 of UD English-EWT's dev + test sentences (the first
100 of a permutation seeded 0, as draw 0 of ``bench_defaults.py``); the unlabelled ones
are the other 3,977, repeated, each repeat in a fresh shuffle (seeded), cut to the size.
They are featurised once (``WindowFeatures(window=1, suffixes=(1, 2, 3))``); a repeated
sentence is the same list of feature dicts, so the input's own memory grows with the
number of sentences, not of tokens.

Fit. ``GraphPRCRF(graph='trigram')`` at fixed settings, no selection: ``lam=1, c1=0,
c2=1``, ``--em-iterations`` EM iterations (default 5) of at most ``--mstep-iterations``
L-BFGS steps (default 20), ``early_stopping=False`` and ``em_tol=0`` (every size runs the
same number of EM iterations). The trigram graph is built first (timed apart: "graph s"),
then given to the fit ("fit s"). A repeated sentence adds tokens but no trigram types, so
past the 3,977 distinct sentences the graph's vertices stop growing while the EM's passes
grow with the tokens.

``--default-fit``: instead, `GraphPRCRF(graph='trigram', random_state=0)` with its
defaults (selection by 5 folds, the folds' EM on a sample of 10,000 unlabelled sentences;
the graph built inside the fit), then in another fresh process the fit a user who fixes
the settings it chose runs (those settings, its number of EM iterations,
``early_stopping=False``, the graph built inside too): seconds, peak RSS of each, their
ratio, and whether the two models are the same (a hash of the weights). ``--generated``:
the unlabelled sentences are ``bench_trigram_scale.py``'s synthetic English text (whose
trigram types grow as real text's do) instead of EWT's repeated. ``--cluster``: both fits
inside a 2-worker dask `LocalCluster` with joblib's dask backend (``bench_scale.py``'s
``dask`` mode: the graph's search blocks and the fit's chunks on the workers), with each
worker's peak RSS. ``--stream`` (with ``--generated``): the unlabelled sentences are
written to a text file (one a line) before the fits, and each fit reads them from it,
``X_unlabeled=WindowFeatures(...).transform(path)``, a block at a time; only the labelled
sentences are held as feature dicts.

Each size runs in a fresh child process: "peak RSS" is its ``ru_maxrss`` (input, graph and
fit), "input RSS" its RSS once the data is featurised, before the graph. The report gives
the log-log slope of seconds and of memory between consecutive sizes (1: linear growth).

Usage::

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_graph_pr_scale.py \\
        [--sizes 1000 10000 100000] [--em-iterations 5] [--mstep-iterations 20] \\
        [--n-jobs 1] [--data-dir /work/shared/data]
    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_graph_pr_scale.py --default-fit \
        --generated --sizes 10000 100000 [--cluster] [--stream]
"""

import argparse
import hashlib
import json
import math
import resource
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
from bench_defaults import POS_LABELLED, language_pool
from bench_scale import PeakSampler, parallel_mode, worker_memory, worker_pid_finder
from bench_trigram_scale import SyntheticText, english_sentences
from conll_features import DEFAULT_DATA
from sklearn.exceptions import ConvergenceWarning

from sklearn_ssl_crf import GraphPRCRF, WindowFeatures
from sklearn_ssl_crf.graph import trigram_graph


def scaled_data(data_dir, size, generated=False):
    """Feature dicts of the 100 labelled sentences then ``size`` unlabelled ones (EWT's
    repeated, or synthetic text), and the partial labels."""
    sentences, tags = language_pool(data_dir, "English")
    order = np.random.default_rng(0).permutation(len(sentences))
    labelled, unlabelled = order[:POS_LABELLED], order[POS_LABELLED:]
    featurizer = WindowFeatures(window=1, suffixes=(1, 2, 3))
    if generated:
        text, _ = SyntheticText(english_sentences(data_dir), 0.8).generate(size, seed=0)
        X = featurizer.fit_transform([sentences[i] for i in labelled] + text)
        return X, [tags[i] for i in labelled] + [None] * size
    features = featurizer.fit_transform(
        [sentences[i] for i in np.concatenate([labelled, unlabelled])])
    rng = np.random.default_rng(1)
    repeats = -(-size // len(unlabelled))
    picked = np.concatenate([POS_LABELLED + rng.permutation(len(unlabelled))
                             for _ in range(repeats)])[:size]
    X = features[:POS_LABELLED] + [features[i] for i in picked]
    y = [tags[i] for i in labelled] + [None] * size
    return X, y


def streamed_data(data_dir, text_file):
    """Feature dicts of the 100 labelled sentences, their labels, and the unlabelled
    sentences of ``text_file`` featurised as they are read."""
    sentences, tags = language_pool(data_dir, "English")
    labelled = np.random.default_rng(0).permutation(len(sentences))[:POS_LABELLED]
    featurizer = WindowFeatures(window=1, suffixes=(1, 2, 3))
    return (featurizer.fit_transform([sentences[i] for i in labelled]),
            [tags[i] for i in labelled], featurizer.transform(text_file))


def write_text(data_dir, size, path):
    """The ``size`` generated sentences of ``scaled_data``, one a line; their tokens."""
    text, _ = SyntheticText(english_sentences(data_dir), 0.8).generate(size, seed=0)
    if any(not token or any(c.isspace() for c in token) for sentence in text
           for token in sentence):
        raise ValueError("a generated token is empty or holds white space")
    with open(path, "w", encoding="utf-8") as file:
        file.writelines(" ".join(sentence) + "\n" for sentence in text)
    return sum(map(len, text))


def rss_mb():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return math.nan


def default_child(args):
    """A default fit (or, with ``--replay``, the fixed fit at its choice) in this process;
    prints a JSON line."""
    if args.text_file:
        X, y, X_unlabeled = streamed_data(args.data_dir, args.text_file)
    else:
        X, y = scaled_data(args.data_dir, args.size, args.generated)
        X_unlabeled = None
    mode = "dask" if args.cluster else "single"
    # On the cluster joblib counts the workers' cores.
    settings = dict(random_state=0, n_jobs=None if args.cluster else args.n_jobs)
    if args.replay:
        chosen = json.loads(args.replay)
        settings.update(early_stopping=False, em_iterations=chosen["best_iteration"],
                        **chosen["best_params"])
    model = GraphPRCRF(graph="trigram", **settings)
    with parallel_mode(mode) as client:
        find_workers = worker_pid_finder(mode, client)
        with PeakSampler(find_workers) as sampler:
            started = time.perf_counter()
            model.fit(X, y, X_unlabeled=X_unlabeled)
            seconds = time.perf_counter() - started
        workers = worker_memory(find_workers(), sampler)
    digest = hashlib.sha256(np.concatenate([model.state_weights_.ravel(),
                                            model.transition_weights_.ravel()])).hexdigest()
    print(json.dumps({
        "size": args.size, "fit": "fixed" if args.replay else "default",
        "tokens": int(sum(map(len, model.transduction_[POS_LABELLED:]))),
        "vertices": model.graph_.n_vertices, "seconds": seconds,
        "best_params": model.best_params_, "best_iteration": model.best_iteration_,
        "weights_sha256": digest[:16],
        "where": mode + (", streamed from a file" if args.text_file else ""),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "workers_peak_rss_mb": [worker["peak_rss_mb"] for worker in workers]}))


def default_fits(args):
    """The default fit and the fixed fit of each size, each in a fresh process."""
    print("| unlabelled sentences | tokens | vertices | where | chosen | default fit s "
          "| fixed fit s | ratio | peak RSS MB of each process (default / fixed) "
          "| weights (default, fixed) |")
    print("|---:|---:|---:|---|---|---:|---:|---:|---|---|")
    for size in args.sizes:
        command = [sys.executable, __file__, "--default-fit", "--size", str(size),
                   "--data-dir", str(args.data_dir), "--n-jobs", str(args.n_jobs),
                   *(["--generated"] if args.generated else []),
                   *(["--cluster"] if args.cluster else [])]
        if args.stream:
            folder = tempfile.TemporaryDirectory()
            command += ["--text-file", str(Path(folder.name) / "unlabelled.txt")]
            write_text(args.data_dir, size, command[-1])
        rows = []
        for replay in ([], None):
            if replay is None:
                replay = ["--replay", json.dumps({key: rows[0][key] for key in
                                                  ("best_params", "best_iteration")})]
            output = subprocess.run(command + replay, capture_output=True, text=True,
                                    check=True).stdout
            rows.append(json.loads(output.strip().splitlines()[-1]))
        default, fixed = rows
        peaks = [", ".join(f"{mb:,.0f}" for mb in [row["peak_rss_mb"],
                                                   *row["workers_peak_rss_mb"]])
                 for row in rows]
        print(f"| {size:,} | {default['tokens']:,} | {default['vertices']:,} | "
              f"{default['where']} | "
              f"{default['best_params']}, {default['best_iteration']} EM iterations | "
              f"{default['seconds']:.0f} | {fixed['seconds']:.0f} | "
              f"{default['seconds'] / fixed['seconds']:.2f} | {peaks[0]} / {peaks[1]} | "
              f"{default['weights_sha256']}, {fixed['weights_sha256']} |", flush=True)


def child(args):
    """One size in this process; prints a JSON line."""
    X, y = scaled_data(args.data_dir, args.size)
    input_rss = rss_mb()
    started = time.perf_counter()
    graph = trigram_graph(X, n_neighbors=60)
    graph_seconds = time.perf_counter() - started
    model = GraphPRCRF(graph=graph, lam=1.0, c1=0.0, c2=1.0, c2_transitions=None,
                       em_iterations=args.em_iterations, em_tol=0.0,
                       mstep_iterations=args.mstep_iterations, early_stopping=False,
                       n_jobs=args.n_jobs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        started = time.perf_counter()
        model.fit(X, y)
        fit_seconds = time.perf_counter() - started
    mstep = [entry for entry in model.training_log_ if entry.get("phase") == "M-step"]
    print(json.dumps({
        "size": args.size, "tokens": int(sum(len(sequence) for sequence in X[POS_LABELLED:])),
        "vertices": graph.n_vertices, "edges": int(graph.weights.nnz // 2),
        "graph_s": graph_seconds, "fit_s": fit_seconds, "em_iterations": model.n_iter_,
        "mstep_iterations": len(mstep), "input_rss_mb": input_rss,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


def slope(rows, key):
    """Log-log slopes of ``key`` against the size between consecutive rows."""
    return ", ".join(
        f"{math.log(b[key] / a[key]) / math.log(b['size'] / a['size']):.2f}"
        for a, b in zip(rows, rows[1:]))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000, 100_000])
    parser.add_argument("--em-iterations", type=int, default=5)
    parser.add_argument("--mstep-iterations", type=int, default=20)
    parser.add_argument("--n-jobs", type=int, default=1)
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--default-fit", action="store_true",
                        help="the default fit against the fixed fit at its choice")
    parser.add_argument("--generated", action="store_true",
                        help="synthetic unlabelled text (bench_trigram_scale.py's)")
    parser.add_argument("--cluster", action="store_true",
                        help="the default fits on a 2-worker dask LocalCluster")
    parser.add_argument("--stream", action="store_true",
                        help="with --default-fit --generated: the unlabelled text read "
                             "from a file as the fit goes")
    parser.add_argument("--text-file", help=argparse.SUPPRESS)  # a streaming child's text
    parser.add_argument("--size", type=int, help=argparse.SUPPRESS)  # a child's size
    parser.add_argument("--replay", help=argparse.SUPPRESS)  # a fixed child's settings
    args = parser.parse_args(argv)
    if args.stream and not (args.default_fit and args.generated):
        parser.error("--stream needs --default-fit and --generated")
    if args.size is not None:
        (default_child if args.default_fit else child)(args)
        return
    if args.default_fit:
        default_fits(args)
        return
    rows = []
    print("| unlabelled sentences | tokens | vertices | edges | graph s | fit s | EM / L-BFGS "
          "iterations | input RSS MB | peak RSS MB |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for size in args.sizes:
        command = [sys.executable, __file__, "--size", str(size), "--data-dir",
                   str(args.data_dir), "--em-iterations", str(args.em_iterations),
                   "--mstep-iterations", str(args.mstep_iterations), "--n-jobs",
                   str(args.n_jobs)]
        output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
        row = json.loads(output.strip().splitlines()[-1])
        rows.append(row)
        print(f"| {size:,} | {row['tokens']:,} | {row['vertices']:,} | {row['edges']:,} | "
              f"{row['graph_s']:.1f} | {row['fit_s']:.1f} | {row['em_iterations']} / "
              f"{row['mstep_iterations']} | {row['input_rss_mb']:.0f} | "
              f"{row['peak_rss_mb']:.0f} |", flush=True)
    if len(rows) > 1:
        for row in rows:
            row["total_s"] = row["graph_s"] + row["fit_s"]
        print(f"\nlog-log slopes between consecutive sizes: fit seconds {slope(rows, 'fit_s')}; "
              f"graph seconds {slope(rows, 'graph_s')}; graph + fit "
              f"{slope(rows, 'total_s')}; tokens {slope(rows, 'tokens')}; peak RSS "
              f"{slope(rows, 'peak_rss_mb')}")


if __name__ == "__main__":
    main()
