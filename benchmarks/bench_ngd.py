"""Natural-gradient CRF training on CoNLL-2000 (issue #4), against L-BFGS and CRFsuite's l2sgd.

Parts (``--parts``):

``accuracy``  For 'sgd' and the five transforms, each seed: `NaturalGradientCRF` with
              ``batch_size=1`` (the paper's algorithm) for ``--epochs`` epochs (the stopping
              rule off), test token accuracy and span F1 after every epoch; the final model
              (CRFsuite keeps the epoch of lowest loss). Also the fast setting
              (``--fast-batch``, ``--fast-eta0``) with 'arctan'.
``baselines`` `CRF` (L-BFGS, to convergence) and ``sklearn_crfsuite.CRF(algorithm='l2sgd',
              c2=1.0)`` trained for 1, 2, 3, 5, 10, 15, 20 and 30 epochs (it has no per-epoch
              callback; its shuffling is its own, the same in every run).
``timing``    Seconds per epoch, median over ``--timing-epochs`` epochs, of CRFsuite's l2sgd
              (from its own log), ours with ``batch_size=1`` ('sgd' and 'arctan') and the
              fast setting, in one run on a quiet machine: ratios, not absolute seconds.

Results are merged into a JSON file (``--json``), so seeds can run in separate processes;
``--report`` prints the markdown tables of docs/benchmarks.md from it, and
``examples/ngd_convergence_from_bench.py`` draws the curves.

Usage::

    python benchmarks/bench_ngd.py --parts accuracy --seeds 0 --json ngd0.json
    python benchmarks/bench_ngd.py --parts accuracy,baselines --seeds 1 2 --json ngd1.json
    python benchmarks/bench_ngd.py --parts timing --json ngd2.json   # alone on the machine
    python benchmarks/bench_ngd.py --report --json ngd0.json ngd1.json ngd2.json

With the defaults (3 seeds, 30 epochs) the accuracy part takes about 12 minutes per seed
on 2 cores, the baselines 3 minutes, the timing 2 minutes.
"""

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from conll_features import DEFAULT_DATA, load_tutorial_conll2000  # noqa: E402

from sklearn_ssl_crf import CRF, NaturalGradientCRF, SequenceVectorizer  # noqa: E402
from sklearn_ssl_crf.metrics import flat_accuracy_score, span_f1_score  # noqa: E402
from sklearn_ssl_crf.optim.transforms import TRANSFORMS  # noqa: E402

CRFSUITE_EPOCHS = (1, 2, 3, 5, 10, 15, 20, 30)


def load(data_dir):
    X_train, y_train, X_test, y_test, _ = load_tutorial_conll2000(data_dir)
    vectorizer = SequenceVectorizer()
    return (X_train, y_train, X_test, y_test, vectorizer.fit_transform(X_train),
            vectorizer.transform(X_test))


def scores(y_true, y_pred):
    return {"accuracy": flat_accuracy_score(y_true, y_pred),
            "span_f1": span_f1_score(y_true, y_pred)}


def run_ngd(train, y_train, test, y_test, update, seed, epochs, batch_size, eta0=None,
            eps=1.0):
    started = time.perf_counter()
    model = NaturalGradientCRF(update=update, batch_size=batch_size, max_iterations=epochs,
                               period=0, random_state=seed, eta0=eta0, eps=eps)
    model.fit(train, y_train, X_dev=test, y_dev=y_test)
    log = model.training_log_
    return {
        "update": update, "eps": eps, "seed": seed, "batch_size": batch_size,
        "eta0": model.eta0_,
        "epoch_seconds": epoch_seconds(log),
        "curve_accuracy": [entry["dev_accuracy"] for entry in log],
        "curve_span_f1": [entry["dev_span_f1"] for entry in log],
        "loss": [entry["loss"] for entry in log],
        "final": scores(y_test, model.predict(test)),
        "total_seconds": time.perf_counter() - started,
    }


def crfsuite_model(epochs):
    import sklearn_crfsuite

    return sklearn_crfsuite.CRF(algorithm="l2sgd", c2=1.0, max_iterations=epochs)


def crfsuite_predict(model, X):
    # sklearn-crfsuite 0.5's predict() fails on ragged output; it is this loop anyway.
    return [model.predict_single(sequence) for sequence in X]


def part_accuracy(data, args, results):
    X_train, y_train, X_test, y_test, train, test = data
    for seed in args.seeds:
        for update in args.updates:
            label = update if args.eps == 1 else f"{update}, eps={args.eps:g}"
            key = f"ngd/{label}/b1/seed{seed}"
            if key in results:
                continue
            results[key] = run_ngd(train, y_train, test, y_test, update, seed, args.epochs, 1,
                                   eps=args.eps)
            print(key, results[key]["final"], flush=True)
            save(results, args.json)
        fast = f"b{args.fast_batch}" + ("" if args.fast_eta0 is None else
                                         f",eta0={args.fast_eta0:g}")
        key = f"ngd/arctan/{fast}/seed{seed}"
        if key not in results:
            results[key] = run_ngd(train, y_train, test, y_test, "arctan", seed, args.epochs,
                                   args.fast_batch, args.fast_eta0)
            print(key, results[key]["final"], flush=True)
            save(results, args.json)


def part_baselines(data, args, results):
    X_train, y_train, X_test, y_test, train, test = data
    if "crf" not in results:
        started = time.perf_counter()
        model = CRF(c2=1.0).fit(train, y_train)
        results["crf"] = {"final": scores(y_test, model.predict(test)), "n_iter": model.n_iter_,
                          "total_seconds": time.perf_counter() - started}
        print("crf", results["crf"], flush=True)
        save(results, args.json)
    if "crfsuite" not in results:
        curve = []
        for epochs in CRFSUITE_EPOCHS:
            model = crfsuite_model(epochs).fit(X_train, y_train)
            curve.append({"epochs": epochs, **scores(y_test, crfsuite_predict(model, X_test))})
            print("crfsuite", curve[-1], flush=True)
        results["crfsuite"] = {"curve": curve, "final": {k: curve[-1][k] for k in
                                                         ("accuracy", "span_f1")}}
        save(results, args.json)


def epoch_seconds(log):
    """Each epoch's seconds, from a log whose ``time`` counts from the phase's start (the
    dev scoring of an epoch counts in the next one's)."""
    times = [entry["time"] for entry in log]
    return [later - earlier for earlier, later in zip([0.0] + times, times)]


def part_timing(data, args, results):
    X_train, y_train, X_test, y_test, train, test = data
    n = args.timing_epochs
    model = crfsuite_model(n).fit(X_train, y_train)
    crfsuite = statistics.median(it["time"] for it in model.training_log_.iterations)
    timing = {"epochs": n, "crfsuite_l2sgd": crfsuite}
    for name, update, batch_size in (("sgd_b1", "sgd", 1), ("arctan_b1", "arctan", 1),
                                     (f"arctan_b{args.fast_batch}", "arctan", args.fast_batch)):
        ours = NaturalGradientCRF(update=update, batch_size=batch_size, max_iterations=n,
                                  period=0, eta0=0.05, random_state=0).fit(train, y_train)
        timing[name] = statistics.median(epoch_seconds(ours.training_log_))
        print(name, timing[name], "crfsuite", crfsuite, flush=True)
    results["timing"] = timing
    save(results, args.json)


def save(results, path):
    Path(path).write_text(json.dumps(results, indent=1))


def report(results):
    # Batch-1 runs by update (and eps, when not the default), in the order of TRANSFORMS.
    labels = {k.split("/")[1] for k in results if k.startswith("ngd/") and "/b1/" in k}
    updates = sorted(labels, key=lambda label: (TRANSFORMS.index(label.split(",")[0]), label))

    def runs(update, batch="b1"):
        return [v for k, v in results.items() if k.startswith(f"ngd/{update}/{batch}/")]

    def etas(rs):
        return ", ".join(f"{r['eta0']:g}" for r in rs)

    def mean_std(values):
        return f"{100 * np.mean(values):.2f} ± {100 * np.std(values):.2f}"

    print("| algorithm | seeds | token accuracy (%) | span F1 (%) | eta0 |\n"
          "|---|---:|---:|---:|---:|")
    for update in updates:
        rs = runs(update)
        print(f"| NGD '{update}', batch 1 | {len(rs)} | "
              f"{mean_std([r['final']['accuracy'] for r in rs])} | "
              f"{mean_std([r['final']['span_f1'] for r in rs])} | "
              f"{etas(rs)} |")
    fast = [k.split("/")[2] for k in results if k.startswith("ngd/arctan/b") and "/b1/" not in k]
    for batch in sorted(set(fast)):
        rs = runs("arctan", batch)
        print(f"| NGD 'arctan', batch {batch[1:]} | {len(rs)} | "
              f"{mean_std([r['final']['accuracy'] for r in rs])} | "
              f"{mean_std([r['final']['span_f1'] for r in rs])} | "
              f"{etas(rs)} |")
    for name, label in (("crf", "`CRF` (L-BFGS)"), ("crfsuite", "sklearn-crfsuite l2sgd")):
        if name in results:
            final = results[name]["final"]
            print(f"| {label} | 1 | {100 * final['accuracy']:.2f} | "
                  f"{100 * final['span_f1']:.2f} | |")
    if updates:
        epochs = len(runs(updates[0])[0]["curve_accuracy"])
        marks = [e for e in (1, 2, 3, 5, 10, 15, 20, 30) if e <= epochs]
        print("\nToken accuracy (%) after each epoch, mean over seeds\n")
        print("| update | " + " | ".join(str(e) for e in marks) + " |")
        print("|---|" + "---:|" * len(marks))
        for update in updates:
            curve = np.mean([r["curve_accuracy"] for r in runs(update)], axis=0)
            print(f"| {update} | " + " | ".join(f"{100 * curve[e - 1]:.2f}" for e in marks)
                  + " |")
        for batch in sorted(set(fast)):
            curve = np.mean([r["curve_accuracy"] for r in runs("arctan", batch)], axis=0)
            print(f"| arctan, batch {batch[1:]} | "
                  + " | ".join(f"{100 * curve[e - 1]:.2f}" for e in marks) + " |")
        if "crfsuite" in results:
            points = {p["epochs"]: p["accuracy"] for p in results["crfsuite"]["curve"]}
            print("| crfsuite l2sgd | " + " | ".join(
                f"{100 * points[e]:.2f}" if e in points else "" for e in marks) + " |")
    if "timing" in results:
        timing = results["timing"]
        base = timing["crfsuite_l2sgd"]
        print(f"\nSeconds per epoch, median of {timing['epochs']} epochs\n")
        print("| trainer | s / epoch | ratio to crfsuite l2sgd |\n|---|---:|---:|")
        for name, value in timing.items():
            if name != "epochs":
                print(f"| {name} | {value:.2f} | {value / base:.2f} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", default=str(DEFAULT_DATA))
    parser.add_argument("--parts", default="accuracy,baselines,timing")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--updates", nargs="+", default=list(TRANSFORMS))
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--eps", type=float, default=1.0,
                        help="eps of the batch-1 runs (the fast setting keeps the default)")
    parser.add_argument("--fast-batch", type=int, default=32)
    parser.add_argument("--fast-eta0", type=float, default=None,
                        help="eta0 of the fast setting's accuracy runs (default: calibrated)")
    parser.add_argument("--timing-epochs", type=int, default=5)
    parser.add_argument("--json", nargs="+", default=["ngd_results.json"],
                        help="results file (the first one is written; --report merges all)")
    parser.add_argument("--report", action="store_true")
    args = parser.parse_args()
    results = {}
    for path in map(Path, args.json[::-1]):
        if path.exists():
            results.update(json.loads(path.read_text()))
    if args.report:
        report(results)
        return
    args.json = args.json[0]
    data = load(args.data_dir)
    parts = {"accuracy": part_accuracy, "baselines": part_baselines, "timing": part_timing}
    for name in args.parts.split(","):
        parts[name](data, args, results)


if __name__ == "__main__":
    main()
