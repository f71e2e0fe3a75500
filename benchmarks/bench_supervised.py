"""Supervised CoNLL-2000 benchmark: our `CRF` against sklearn_crfsuite.CRF in the same run.

Both taggers get the sklearn-crfsuite tutorial features (feature dicts), train on the full
CoNLL-2000 training set with L-BFGS (c1=0, c2=1, 100 iterations) and tag the test set. Each
runs in its own child process so that peak memory (max RSS) is measured separately.

Usage::

    python benchmarks/bench_supervised.py [--data-dir ../shared/data] [--max-iterations 100]

Prints a markdown table (for docs/benchmarks.md) and the ratios the project targets.
"""

import argparse
import json
import platform
import resource
import subprocess
import sys
import time

from conll_features import DEFAULT_DATA, load_tutorial_conll2000


def max_rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def current_rss_mb():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def run_ours(X_train, y_train, X_test, max_iterations):
    import numpy as np

    from sklearn_ssl_crf import CRF, SequenceVectorizer
    from sklearn_ssl_crf.objective._weights import penalised_negative_log_likelihood
    from sklearn_ssl_crf.parallel import ChunkedSequences
    from sklearn_ssl_crf.utils._validation import encode_labels

    started = time.perf_counter()
    sequences = SequenceVectorizer().fit_transform(X_train)
    vectorize_seconds = time.perf_counter() - started
    del sequences

    crf = CRF(algorithm="lbfgs", c1=0.0, c2=1.0, max_iterations=max_iterations)
    started = time.perf_counter()
    crf.fit(X_train, y_train)
    fit_seconds = time.perf_counter() - started
    optimise_seconds = crf.training_log_[-1]["time"]

    # One objective + gradient evaluation at the optimum, the unit of L-BFGS work.
    sequences = crf.vectorizer_.transform(X_train)
    _, codes = encode_labels(y_train, crf.classes_)
    data = ChunkedSequences(sequences, codes, len(crf.classes_))
    layout = crf._weight_layout(data)
    objective = penalised_negative_log_likelihood(data, layout, 1.0)
    theta = layout.pack(crf.state_weights_, crf.transition_weights_)
    evaluations = []
    for _ in range(5):
        started = time.perf_counter()
        objective(theta)
        evaluations.append(time.perf_counter() - started)

    started = time.perf_counter()
    predicted = crf.predict(X_test)
    predict_seconds = time.perf_counter() - started
    return predicted, {
        "vectorize_s": vectorize_seconds,
        "fit_s": fit_seconds,
        "n_iter": crf.n_iter_,
        "n_evaluations": crf.training_log_[-1]["n_evaluations"],
        "per_iteration_s": optimise_seconds / crf.n_iter_,
        "evaluation_s": float(np.min(evaluations)),
        "predict_s": predict_seconds,
        "n_parameters": int(layout.size),
    }


def run_crfsuite(X_train, y_train, X_test, max_iterations):
    import sklearn_crfsuite

    crf = sklearn_crfsuite.CRF(algorithm="lbfgs", c1=0.0, c2=1.0,
                               max_iterations=max_iterations)
    started = time.perf_counter()
    crf.fit(X_train, y_train)
    fit_seconds = time.perf_counter() - started
    iterations = crf.training_log_.iterations
    optimise_seconds = sum(iteration["time"] for iteration in iterations)
    started = time.perf_counter()
    # sklearn-crfsuite 0.5's predict() fails on ragged output; it is this loop anyway.
    predicted = [list(crf.predict_single(x)) for x in X_test]
    predict_seconds = time.perf_counter() - started
    return predicted, {
        "vectorize_s": fit_seconds - optimise_seconds,
        "fit_s": fit_seconds,
        "n_iter": len(iterations),
        "per_iteration_s": optimise_seconds / len(iterations),
        "predict_s": predict_seconds,
        "n_parameters": len(crf.state_features_) + len(crf.transition_features_),
    }


def child(system, data_dir, max_iterations):
    from sklearn_ssl_crf.metrics import flat_accuracy_score, span_f1_score

    X_train, y_train, X_test, y_test, _ = load_tutorial_conll2000(data_dir)
    baseline = current_rss_mb()
    run = run_ours if system == "ours" else run_crfsuite
    predicted, result = run(X_train, y_train, X_test, max_iterations)
    n_test_tokens = sum(map(len, X_test))
    result.update({
        "system": system,
        "predict_tokens_per_s": n_test_tokens / result.pop("predict_s"),
        "token_accuracy": flat_accuracy_score(y_test, predicted),
        "span_f1": span_f1_score(y_test, predicted),
        "peak_rss_mb": max_rss_mb(),
        "baseline_rss_mb": baseline,
    })
    print(json.dumps(result))


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", default=str(DEFAULT_DATA))
    parser.add_argument("--max-iterations", type=int, default=100)
    parser.add_argument("--child", choices=["ours", "crfsuite"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.data_dir, args.max_iterations)
        return

    results = {}
    for system in ("crfsuite", "ours"):
        output = subprocess.run(
            [sys.executable, __file__, "--child", system, "--data-dir", args.data_dir,
             "--max-iterations", str(args.max_iterations)],
            check=True, capture_output=True, text=True,
        ).stdout
        results[system] = json.loads(output.strip().splitlines()[-1])
        print(f"{system}: {results[system]}", file=sys.stderr)
    report(results, args)


def report(results, args):
    ours, ref = results["ours"], results["crfsuite"]
    rows = [
        ("vectorise (s)", "vectorize_s", "{:.2f}"),
        ("fit, vectorising included (s)", "fit_s", "{:.1f}"),
        ("L-BFGS iterations", "n_iter", "{}"),
        ("time per iteration (s)", "per_iteration_s", "{:.3f}"),
        ("one objective + gradient evaluation (s)", "evaluation_s", "{:.3f}"),
        ("parameters", "n_parameters", "{:,}"),
        ("predict, featurising included (tokens/s)", "predict_tokens_per_s", "{:,.0f}"),
        ("peak memory, max RSS (MB)", "peak_rss_mb", "{:.0f}"),
        ("memory above the loaded data (MB)", "above", "{:.0f}"),
        ("token accuracy", "token_accuracy", "{:.4f}"),
        ("span F1 (conlleval)", "span_f1", "{:.4f}"),
    ]
    for result in (ours, ref):
        result["above"] = result["peak_rss_mb"] - result["baseline_rss_mb"]
    print(f"Machine: {platform.processor() or platform.machine()}, "
          f"{_cpu_count()} cores, Python {platform.python_version()}; "
          f"max_iterations={args.max_iterations}\n")
    print("| | sklearn_ssl_crf `CRF` | sklearn_crfsuite `CRF` | ratio |")
    print("|---|---|---|---|")
    for name, key, fmt in rows:
        mine = ours.get(key)
        theirs = ref.get(key)
        ratio = f"{mine / theirs:.2f}" if isinstance(theirs, (int, float)) and theirs else ""
        print(f"| {name} | {fmt.format(mine) if mine is not None else '–'} | "
              f"{fmt.format(theirs) if theirs is not None else '–'} | {ratio} |")
    print()
    print("Targets:")
    checks = [
        ("span F1 within 0.3 points (or better)",
         ours["span_f1"] >= ref["span_f1"] - 0.003,
         f"{100 * (ours['span_f1'] - ref['span_f1']):+.2f} points"),
        ("fit time <= 0.7x", ours["fit_s"] <= 0.7 * ref["fit_s"],
         f"{ours['fit_s'] / ref['fit_s']:.2f}x"),
        ("one evaluation <= 0.5x their time per iteration",
         ours["evaluation_s"] <= 0.5 * ref["per_iteration_s"],
         f"{ours['evaluation_s'] / ref['per_iteration_s']:.2f}x"),
        ("predict throughput >= 1x", ours["predict_tokens_per_s"] >= ref["predict_tokens_per_s"],
         f"{ours['predict_tokens_per_s'] / ref['predict_tokens_per_s']:.2f}x"),
        ("peak memory <= 1.5x", ours["peak_rss_mb"] <= 1.5 * ref["peak_rss_mb"],
         f"{ours['peak_rss_mb'] / ref['peak_rss_mb']:.2f}x"),
    ]
    for name, met, value in checks:
        print(f"- {name}: {value} ({'met' if met else 'MISSED'})")


def _cpu_count():
    import os

    return os.cpu_count()


if __name__ == "__main__":
    main()
