"""Active learning on CoNLL-2000 (issue #3, part e): learning curves of query strategies.

Starting from 100 random labelled training sentences, each of 10 rounds queries 50 sentences
from the unlabelled pool (the other training sentences, or a random subsample of them with
``--pool-size``), adds them with their gold labels and retrains a supervised `CRF` (c2=1,
L-BFGS to convergence). Strategies, scored with the model of the previous round:

- ``random``: 50 sentences at random;
- ``entropy``: highest sequence entropy ``H(Y | x)`` (`predict_entropy`);
- ``entropy/token``: highest sequence entropy divided by the sentence length;
- ``span``: highest joint entropy of the most uncertain span of ``--span-width`` labels
  (`most_uncertain_spans`, Mann & McCallum 2007 §5).

Sequence entropy grows with length, so ``entropy`` buys more tokens per query than the
others; the report gives the labelled tokens beside the F1 so the curves can be compared per
token as well as per sentence. The test span F1 (conlleval) on the full CoNLL-2000 test set is
recorded after every round (labelled sizes 100, 150, ..., 600), averaged over seeds; for a
seed, every strategy starts from the same labelled sentences (and so the same round-0 model).
Results go to a JSON file after every curve; a rerun with the same settings resumes from it.
The default run (3 seeds, whole pool) took 10 minutes on the 2-core machine of issue #3.

Usage::

    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 python benchmarks/bench_active_learning.py \\
        --seeds 3 --output /tmp/bench_active_learning.md --plot /tmp/bench_active_learning.png

    # smoke run: 2 rounds of 10 sentences, small pool and test set
    python benchmarks/bench_active_learning.py --quick --output /tmp/quick_al.md
"""

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

from sklearn_ssl_crf import CRF, SequenceVectorizer
from sklearn_ssl_crf.datasets import load_conll2000
from sklearn_ssl_crf.metrics import span_f1_score

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conll_features import sentence_features  # noqa: E402

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
DEFAULT_JSON = Path("/tmp/bench_active_learning.json")
STRATEGIES = ("random", "entropy", "entropy/token", "span")


def load(data_dir, test_size=None):
    """CoNLL-2000 train and test, featurised and vectorised once (one vocabulary)."""
    splits = load_conll2000(Path(data_dir) / "conll2000")
    (raw_train, y_train), (raw_test, y_test) = splits["train"], splits["test"]
    raw_test, y_test = raw_test[:test_size], y_test[:test_size]
    features = [sentence_features(s) for s in raw_train + raw_test]
    matrix = SequenceVectorizer().fit_transform(features)
    n_train = len(raw_train)
    train = matrix[np.arange(n_train)]
    test = matrix[np.arange(n_train, len(matrix))]
    return train, y_train, test, y_test


def query_scores(strategy, model, X_pool, width):
    """Higher is queried first."""
    if strategy == "entropy":
        return model.predict_entropy(X_pool)
    if strategy == "entropy/token":
        return model.predict_entropy(X_pool) / np.maximum(X_pool.lengths, 1)
    if strategy == "span":
        spans = model.most_uncertain_spans(X_pool, width)
        return np.array([-np.inf if span is None else span[2] for span in spans])
    raise ValueError(strategy)


def learning_curve(strategy, seed, data, settings, round0):
    """Test F1 and labelled tokens after each round; ``round0`` is the shared first model."""
    train, y_train, test, y_test = data
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(y_train))
    n_initial, batch = settings["n_initial"], settings["batch"]
    labelled = list(order[:n_initial])
    pool = order[n_initial:]
    if settings["pool_size"]:
        pool = pool[:settings["pool_size"]]
    query_rng = np.random.default_rng([seed, 1])
    model, f1 = round0
    curve = [{"round": 0, "sentences": len(labelled), "f1": f1, "seconds": 0.0,
              "tokens": int(train.lengths[labelled].sum())}]
    for round_ in range(1, settings["rounds"] + 1):
        started = time.perf_counter()
        if strategy == "random":
            chosen = query_rng.choice(len(pool), size=batch, replace=False)
        else:
            scores = query_scores(strategy, model, train[pool], settings["span_width"])
            chosen = np.argsort(-scores, kind="stable")[:batch]
        labelled += list(pool[chosen])
        pool = np.delete(pool, chosen)
        query_seconds = time.perf_counter() - started
        model = CRF(c2=settings["c2"]).fit(train[labelled], [y_train[i] for i in labelled])
        f1 = span_f1_score(y_test, model.predict(test))
        curve.append({"round": round_, "sentences": len(labelled), "f1": f1,
                      "tokens": int(train.lengths[labelled].sum()),
                      "seconds": time.perf_counter() - started, "query_seconds": query_seconds})
        print(f"seed {seed} {strategy:<14} round {round_:2d}: {len(labelled)} sentences, "
              f"{curve[-1]['tokens']} tokens, test F1 {f1:.4f} "
              f"({curve[-1]['seconds']:.1f} s, query {query_seconds:.2f} s)", flush=True)
    return curve


def run(data, settings, results, json_path):
    # What a curve depends on (not how many seeds or which other strategies run).
    key = json.dumps({k: v for k, v in settings.items() if k not in ("seeds", "strategies")},
                     sort_keys=True)
    done = {(r["seed"], r["strategy"]): r for r in results if r["settings"] == key}
    train, y_train, test, y_test = data
    for seed in range(settings["seeds"]):
        round0 = None
        for strategy in settings["strategies"]:
            if (seed, strategy) in done:
                continue
            if round0 is None:
                initial = np.random.default_rng(seed).permutation(len(y_train))
                initial = initial[:settings["n_initial"]]
                started = time.perf_counter()
                model = CRF(c2=settings["c2"]).fit(train[initial],
                                                   [y_train[i] for i in initial])
                round0 = (model, span_f1_score(y_test, model.predict(test)))
                print(f"seed {seed} round 0: test F1 {round0[1]:.4f} "
                      f"({time.perf_counter() - started:.1f} s)", flush=True)
            curve = learning_curve(strategy, seed, data, settings, round0)
            record = {"seed": seed, "strategy": strategy, "curve": curve, "settings": key}
            results.append(record)
            done[(seed, strategy)] = record
            temporary = json_path.with_suffix(".tmp")
            temporary.write_text(json.dumps(results))
            os.replace(temporary, json_path)
    return [done[(seed, strategy)] for seed in range(settings["seeds"])
            for strategy in settings["strategies"]]


def report(records, settings, n_pool, n_test, seconds):
    strategies = settings["strategies"]
    seeds = sorted({r["seed"] for r in records})
    f1 = {s: np.array([[p["f1"] for p in r["curve"]] for r in records if r["strategy"] == s])
          for s in strategies}
    tokens = {s: np.array([[p["tokens"] for p in r["curve"]] for r in records
                           if r["strategy"] == s]) for s in strategies}
    sentences = [p["sentences"] for p in records[0]["curve"]]
    pool = (f"a random {n_pool:,} of the other training sentences" if settings["pool_size"]
            else f"all {n_pool:,} other training sentences")
    lines = [
        "# Active learning on CoNLL-2000 (issue #3, part e)\n",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}, single process; this invocation took {seconds:.0f} s "
        f"(curves resumed from the JSON file are not rerun); the rounds of all curves took "
        f"{sum(p['seconds'] for r in records for p in r['curve']) / 60:.1f} min.\n",
        f"Start: {settings['n_initial']} random training sentences; {settings['rounds']} rounds "
        f"of {settings['batch']} queried sentences from the pool ({pool}); supervised `CRF` "
        f"(c2 = {settings['c2']:g}, L-BFGS to convergence) retrained each round; test span F1 "
        f"(%) on {n_test:,} test sentences, mean ± std over {len(seeds)} seeds "
        f"({', '.join(map(str, seeds))}). Span strategy: width {settings['span_width']}. "
        "Tutorial features (sklearn-crfsuite).\n",
        "| labelled sentences | " + " | ".join(strategies) + " |",
        "|---:|" + "---:|" * len(strategies),
    ]
    for k, n in enumerate(sentences):
        cells = [f"{100 * f1[s][:, k].mean():.2f} ± {100 * f1[s][:, k].std():.2f}"
                 for s in strategies]
        lines.append(f"| {n} | " + " | ".join(cells) + " |")
    means = [f"{100 * f1[s][:, 1:].mean():.2f}" for s in strategies]
    lines.append(f"| mean of rounds 1-{settings['rounds']} | " + " | ".join(means) + " |")
    lines += ["", "Labelled tokens (mean over seeds):", "",
              "| labelled sentences | " + " | ".join(strategies) + " |",
              "|---:|" + "---:|" * len(strategies)]
    for k, n in enumerate(sentences):
        lines.append(f"| {n} | " + " | ".join(f"{tokens[s][:, k].mean():,.0f}"
                                              for s in strategies) + " |")
    # Equal annotation cost: each seed's curve interpolated at token budgets between the
    # initial set and the largest budget that every strategy reaches in every seed.
    initial = max(tokens[s][:, 0].max() for s in strategies)
    reached = min(tokens[s][:, -1].min() for s in strategies)
    budgets = [int(round(initial + k * (reached - initial) / 4, -2)) for k in (1, 2, 3, 4)]
    budgets = sorted({b for b in budgets if initial <= b <= reached})
    lines += ["", "Test F1 (%) at equal labelled tokens (each seed's curve interpolated "
              "linearly), mean ± std over seeds:", "",
              "| labelled tokens | " + " | ".join(strategies) + " |",
              "|---:|" + "---:|" * len(strategies)]
    for budget in budgets:
        cells = []
        for s in strategies:
            at = 100 * np.array([np.interp(budget, t, f) for t, f in zip(tokens[s], f1[s])])
            cells.append(f"{at.mean():.2f} ± {at.std():.2f}")
        lines.append(f"| {budget:,} | " + " | ".join(cells) + " |")
    lines.append("")
    return "\n".join(lines), sentences, f1, tokens


def plot(path, strategies, sentences, f1, tokens):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no plot")
        return
    figure, axes = plt.subplots(1, 2, figsize=(11, 4))
    for s in strategies:
        mean, std = 100 * f1[s].mean(axis=0), 100 * f1[s].std(axis=0)
        axes[0].errorbar(sentences, mean, yerr=std, label=s, capsize=3)
        axes[1].plot(tokens[s].mean(axis=0), mean, marker="o", label=s)
    axes[0].set(xlabel="labelled sentences", ylabel="test span F1 (%)",
                title="CoNLL-2000 active learning")
    axes[1].set(xlabel="labelled tokens (mean)", ylabel="test span F1 (%)", title="per token")
    for ax in axes:
        ax.grid(alpha=0.3)
        ax.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    print(f"plot: {path}")


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", default=str(DEFAULT_DATA))
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--n-initial", type=int, default=100)
    parser.add_argument("--batch", type=int, default=50)
    parser.add_argument("--pool-size", type=int, default=0,
                        help="random subsample of the unlabelled pool (0: all of it)")
    parser.add_argument("--span-width", type=int, default=3)
    parser.add_argument("--c2", type=float, default=1.0)
    parser.add_argument("--strategies", default=",".join(STRATEGIES))
    parser.add_argument("--quick", action="store_true", help="tiny smoke run")
    parser.add_argument("--json", default=str(DEFAULT_JSON))
    parser.add_argument("--fresh", action="store_true", help="ignore results in --json")
    parser.add_argument("--output", help="write the markdown report here")
    parser.add_argument("--plot", help="write a PNG of the learning curves here")
    args = parser.parse_args()

    settings = {"seeds": args.seeds, "rounds": args.rounds, "n_initial": args.n_initial,
                "batch": args.batch, "pool_size": args.pool_size, "span_width": args.span_width,
                "c2": args.c2, "strategies": args.strategies.split(","), "test_size": None}
    if args.quick:
        settings.update(seeds=2, rounds=2, n_initial=20, batch=10, pool_size=300,
                        test_size=300)
    unknown = set(settings["strategies"]) - set(STRATEGIES)
    if unknown:
        parser.error(f"unknown strategies {sorted(unknown)}; choose from {STRATEGIES}")
    started = time.perf_counter()
    data = load(args.data_dir, settings["test_size"])
    print(f"loaded in {time.perf_counter() - started:.1f} s: {len(data[1]):,} train, "
          f"{len(data[3]):,} test sentences, {data[0].n_features:,} attributes", flush=True)
    json_path = Path(args.json)
    results = [] if args.fresh or not json_path.exists() else json.loads(json_path.read_text())
    records = run(data, settings, results, json_path)
    n_pool = settings["pool_size"] or len(data[1]) - settings["n_initial"]
    text, sentences, f1, tokens = report(records, settings, n_pool, len(data[3]),
                                         time.perf_counter() - started)
    print("\n" + text)
    if args.output:
        Path(args.output).write_text(text)
    if args.plot:
        plot(args.plot, settings["strategies"], sentences, f1, tokens)


if __name__ == "__main__":
    main()
