"""Semi-supervised accuracy (issue #3, part d): Jiao et al. (2006)'s protocol on BC2GM and
CoNLL-2000.

For each corpus, labelled sets are drawn at random from the training split (seeded draws
0, 1, ...); the unlabelled sets are prefixes of one permutation of the rest of the training
split, so larger unlabelled sets contain the smaller ones. Every method is trained on the same
labelled and unlabelled sentences and scored on the full test split (conlleval span precision,
recall, F1, and the number of predicted mentions):

- ``supervised``: `CRF` on the labelled sentences;
- ``self-training``: `SelfTrainingCRF` (Jiao et al. §5.1);
- ``entropy g=...``: the published objective (``proportion_weight=0``) over a grid of gamma;
- ``proportions w=...``: the label-proportion term alone (``gamma=0``);
- ``entropy g=... + proportions w=...``: both.

The semi-supervised fits get a dev set (``X_dev``/``y_dev``) and keep the iterate with the
best dev span F1 (iteration 0 is the supervised optimum). BC2GM: 200 labelled sentences,
unlabelled sets of 1x, 2x, 5x that and 5,000 sentences, dev = a fixed random 1,000 sentences
of ``devel``. CoNLL-2000 has no development split: a fixed random 1,000 training sentences
are held out as the dev set, and the labelled (500) and unlabelled sentences (all the rest)
are drawn from the other training sentences.

Two rows per unlabelled size are chosen on the dev set, per draw: the published objective
with the gamma of best dev F1, and the best configuration of all (supervised and
self-training included). The targets checked: (i) the configuration chosen on dev beats the
supervised CRF by at least 5 F1 points on test (mean over draws); (ii) the published
objective with gamma chosen on dev is never worse than the supervised CRF on test (in every
draw and in the mean).

Compute: every corpus is featurised and vectorised once (one vocabulary over all its
splits; attributes absent from a model's training sentences keep weight 0, so the models are
those a fit on feature dicts gives). The supervised optimum, the common start of every
semi-supervised fit of a draw, is computed once per draw and reused. ``--max-iterations``
caps the semi-supervised phase only (and each self-training round after the first); the
supervised start always runs to convergence. With ``--patience P`` the semi-supervised phase
also stops when the dev F1 has not improved for P iterations (the best dev iterate is kept
either way). Defaults: 5 draws per corpus; cap 100 iterations on BC2GM, 40 on CoNLL-2000;
patience 20; self-training at most 5 rounds; c2 = 1 everywhere. On the 2-core machine of
issue #3 the default run took 41 minutes (BC2GM 22, CoNLL-2000 19). Per-fit results go to a
JSON file after every fit; a rerun with the same settings resumes from it.

Usage::

    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 python benchmarks/bench_ssl_accuracy.py \\
        --corpus both --output /tmp/bench_ssl_accuracy.md

    # smoke run (a minute): tiny labelled, unlabelled, dev and test sets
    python benchmarks/bench_ssl_accuracy.py --quick --output /tmp/quick.md
"""

import argparse
import dataclasses
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

from sklearn_ssl_crf import CRF, EntropyRegularizedCRF, SelfTrainingCRF, SequenceVectorizer
from sklearn_ssl_crf.datasets import load_bc2gm, load_conll2000
from sklearn_ssl_crf.featurize import WindowFeatures
from sklearn_ssl_crf.metrics import span_classification_report, span_f1_score

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conll_features import sentence_features  # noqa: E402

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
DEFAULT_JSON = Path("/tmp/bench_ssl_accuracy.json")

PUBLISHED_GAMMAS = (0.001, 0.01, 0.1, 0.5, 1.0, 5.0)
PROPORTION_WEIGHTS = (1.0, 10.0)
COMBINED_GAMMAS = (0.1, 1.0)
TARGET_GAIN = 0.05

# Per corpus: labelled sentences, unlabelled sizes, draws, cap of the semi-supervised phase.
DEFAULTS = {
    "bc2gm": {"n_labelled": 200, "sizes": "1x,2x,5x,5000", "draws": 5, "max_iterations": 100},
    "conll2000": {"n_labelled": 500, "sizes": "all", "draws": 5, "max_iterations": 40},
}
QUICK = {"n_labelled": 40, "sizes": "1x,2x", "draws": 2, "max_iterations": 3, "dev_size": 100,
         "test_size": 300, "self_training_rounds": 1}


# -- methods ------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Method:
    name: str
    family: str  # 'supervised', 'self-training', 'published', 'proportions', 'combined'
    gamma: float = 0.0
    proportion_weight: float = 0.0


def methods():
    found = [Method("supervised", "supervised"), Method("self-training", "self-training")]
    found += [Method(f"entropy g={g:g}", "published", g) for g in PUBLISHED_GAMMAS]
    found += [Method(f"proportions w={w:g}", "proportions", 0.0, w) for w in PROPORTION_WEIGHTS]
    found += [Method(f"entropy g={g:g} + proportions w={w:g}", "combined", g, w)
              for g in COMBINED_GAMMAS for w in PROPORTION_WEIGHTS]
    return found


class SupervisedStart:
    """The supervised optimum of one labelled set (an `LBFGSResult`), computed on first use."""

    def __init__(self):
        self.result = None


class _SharedStartMixin:
    """Estimators whose first optimisation (the supervised one, from zero weights) runs to
    convergence and is shared through a `SupervisedStart`; ``max_iterations`` then caps only
    the warm-started optimisations (the semi-supervised phase, the later self-training
    rounds). The package's own ``max_iterations`` bounds every phase, the supervised start
    included.

    This hooks the private `CRF._minimize`, which ``fit`` calls once per phase (the report
    checks that fits keeping iteration 0 reproduce the separately fitted supervised CRF).
    """

    start = None
    patience = 0

    def _minimize(self, objective, theta, callback=None):
        if theta.any():
            return super()._minimize(objective, theta, self._early_stopping(callback))
        if self.start is None:
            self.start = SupervisedStart()
        if self.start.result is None:
            cap, self.max_iterations = self.max_iterations, None
            try:
                self.start.result = super()._minimize(objective, theta, callback)
            finally:
                self.max_iterations = cap
        return dataclasses.replace(self.start.result, x=self.start.result.x.copy())

    def _early_stopping(self, callback):
        """``callback``, raising StopIteration once the dev F1 has not improved for
        ``patience`` iterations (counting the supervised start as iteration 0)."""
        if not self.patience or callback is None:
            return callback
        start_log = self.start.result.log
        best = {"score": start_log[-1].get("dev_span_f1", -np.inf) if start_log else -np.inf,
                "iteration": 0}

        def on_iteration(iteration, theta):
            entry = callback(iteration, theta) or {}
            score = entry.get("dev_span_f1")
            if score is not None and score > best["score"]:
                best.update(score=score, iteration=iteration)
            elif score is not None and iteration - best["iteration"] >= self.patience:
                raise StopIteration(f"dev span F1 not improved for {self.patience} iterations")
            return entry

        return on_iteration


class SharedStartEntropyCRF(_SharedStartMixin, EntropyRegularizedCRF):
    pass


class SharedStartSelfTrainingCRF(_SharedStartMixin, SelfTrainingCRF):
    pass


def make_model(method, start, settings):
    if method.family == "supervised":
        return CRF(c2=settings["c2"])
    if method.family == "self-training":
        model = SharedStartSelfTrainingCRF(max_rounds=settings["self_training_rounds"],
                                           c2=settings["c2"],
                                           max_iterations=settings["max_iterations"])
    else:
        model = SharedStartEntropyCRF(gamma=method.gamma,
                                      proportion_weight=method.proportion_weight,
                                      c2=settings["c2"], max_iterations=settings["max_iterations"])
        model.patience = settings["patience"]
    model.start = start
    return model


# -- corpora ------------------------------------------------------------------------------

@dataclasses.dataclass
class Corpus:
    name: str
    train: object  # SequenceMatrix
    y_train: list
    pool: np.ndarray  # training sentences the labelled and unlabelled sets are drawn from
    X_dev: object
    y_dev: list
    X_test: object
    y_test: list
    dev_note: str


def _vectorise(parts):
    """One `SequenceMatrix` per part, over one vocabulary fitted on all of them."""
    lengths = np.cumsum([0] + [len(part) for part in parts])
    matrix = SequenceVectorizer().fit_transform([x for part in parts for x in part])
    return [matrix[np.arange(start, stop)] for start, stop in zip(lengths[:-1], lengths[1:])]


def load_corpus(name, data_dir, dev_size, test_size=None):
    """Featurised, vectorised splits, the dev set and the pool of training sentences."""
    started = time.perf_counter()
    dev_rng = np.random.default_rng(12345)
    if name == "bc2gm":
        splits = load_bc2gm(Path(data_dir) / "bc2gm")
        features = WindowFeatures()
        (X_train, y_train), (X_devel, y_devel), (X_test, y_test) = (
            splits[part] for part in ("train", "devel", "test"))
        dev = np.sort(dev_rng.permutation(len(X_devel))[:dev_size])
        X_test, y_test = X_test[:test_size], y_test[:test_size]
        train, X_dev, X_test = _vectorise([features.transform(X_train),
                                           features.transform([X_devel[i] for i in dev]),
                                           features.transform(X_test)])
        y_dev = [y_devel[i] for i in dev]
        pool = np.arange(len(y_train))
        dev_note = f"dev: a fixed random {len(dev):,} of the {len(X_devel):,} devel sentences"
    else:
        splits = load_conll2000(Path(data_dir) / "conll2000")
        (raw_train, y_train), (raw_test, y_test) = splits["train"], splits["test"]
        raw_test, y_test = raw_test[:test_size], y_test[:test_size]
        order = dev_rng.permutation(len(raw_train))
        dev, pool = np.sort(order[:dev_size]), np.sort(order[dev_size:])
        train, X_test = _vectorise([[sentence_features(s) for s in raw_train],
                                    [sentence_features(s) for s in raw_test]])
        X_dev, y_dev = train[dev], [y_train[i] for i in dev]
        dev_note = (f"CoNLL-2000 has no devel split: dev = a fixed random {len(dev):,} training "
                    f"sentences, held out of the labelled and unlabelled sets")
    print(f"{name}: {len(y_train):,} train, {len(y_dev):,} dev, {len(y_test):,} test sentences, "
          f"{train.n_features:,} attributes; loaded in {time.perf_counter() - started:.1f} s",
          flush=True)
    return Corpus(name, train, y_train, pool, X_dev, y_dev, X_test, y_test, dev_note)


def parse_sizes(spec, n_labelled, n_rest):
    """'1x,2x,5x,5000,all' -> [(label, n_sentences)], capped at the sentences available."""
    sizes = []
    for item in spec.split(","):
        item = item.strip()
        if item == "all":
            n = n_rest
        elif item.endswith("x"):
            n = int(round(float(item[:-1]) * n_labelled))
        else:
            n = int(item)
        sizes.append((item, min(n, n_rest)))
    return sizes


# -- fitting and scoring ------------------------------------------------------------------

def scores(y_true, y_pred):
    overall = span_classification_report(y_true, y_pred, output_dict=True)["overall"]
    mentions = span_classification_report(y_pred, y_pred, output_dict=True)["overall"]["support"]
    return {"precision": overall["precision"], "recall": overall["recall"],
            "f1": overall["f1-score"], "mentions": int(mentions)}


def fit_one(method, corpus, labelled, unlabelled, start, settings):
    X, y = corpus.train[labelled], [corpus.y_train[i] for i in labelled]
    model = make_model(method, start, settings)
    started = time.perf_counter()
    if method.family == "supervised":
        model.fit(X, y)
    else:
        model.fit(X, y, X_unlabeled=corpus.train[unlabelled], X_dev=corpus.X_dev,
                  y_dev=corpus.y_dev)
    seconds = time.perf_counter() - started
    record = {"seconds": seconds,
              "dev_f1": span_f1_score(corpus.y_dev, model.predict(corpus.X_dev)),
              **scores(corpus.y_test, model.predict(corpus.X_test))}
    if method.family == "self-training":
        record.update(rounds=model.n_rounds_, termination=model.termination_condition_,
                      round_dev_f1=[round(r["dev_span_f1"], 4) for r in model.rounds_])
    elif method.family != "supervised":
        second = [e for e in model.training_log_ if e["phase"] == "semi-supervised"]
        # The entry of the iteration at which early stopping fires holds no objective parts.
        last = next(e for e in reversed(second) if "proportion_kl" in e)
        record.update(best_iteration=model.best_iteration_, ssl_iterations=len(second) - 1,
                      termination=model.termination_condition_,
                      dev_curve=[_rounded(e.get("dev_span_f1")) for e in second],
                      final_proportion_kl=last["proportion_kl"],
                      final_entropy=last["unlabelled_entropy"])
    return record


def settings_key(settings):
    """What a fit's result depends on (not the number of draws or the list of sizes)."""
    return json.dumps({k: v for k, v in settings.items() if k not in ("draws", "sizes")},
                      sort_keys=True)


def load_results(path, fresh):
    if fresh or not path.exists():
        return []
    with open(path) as f:
        return json.load(f)


def save_results(path, results):
    temporary = path.with_suffix(".tmp")
    with open(temporary, "w") as f:
        json.dump(results, f)
    os.replace(temporary, path)


def run_corpus(corpus, settings, results, json_path):
    key = settings_key(settings)
    done = {(r["method"], r["draw"], r["size"]): r for r in results
            if r["corpus"] == corpus.name and r["settings"] == key}
    n_labelled = settings["n_labelled"]
    sizes = parse_sizes(settings["sizes"], n_labelled, len(corpus.pool) - n_labelled)
    all_methods = methods()
    for draw in range(settings["draws"]):
        order = np.random.default_rng(draw).permutation(corpus.pool)
        labelled, rest = order[:n_labelled], order[n_labelled:]
        start = SupervisedStart()
        for size_label, n_unlabelled in [("-", 0)] + sizes:
            for method in all_methods:
                if (method.family == "supervised") != (size_label == "-"):
                    continue
                if (method.name, draw, size_label) in done:
                    continue
                record = fit_one(method, corpus, labelled, rest[:n_unlabelled], start,
                                 settings)
                record.update(corpus=corpus.name, method=method.name, family=method.family,
                              draw=draw, size=size_label, n_unlabelled=n_unlabelled,
                              settings=key)
                results.append(record)
                done[(method.name, draw, size_label)] = record
                save_results(json_path, results)
                extra = ""
                if "best_iteration" in record:
                    extra = (f", best iterate {record['best_iteration']}"
                             f"/{record['ssl_iterations']}")
                elif "rounds" in record:
                    extra = f", {record['rounds']} rounds"
                print(f"[{corpus.name}] draw {draw} unlabelled {size_label:>5} "
                      f"{method.name:<34} {record['seconds']:7.1f} s  dev F1 "
                      f"{record['dev_f1']:.4f}  test F1 {record['f1']:.4f}"
                      f"  mentions {record['mentions']}{extra}", flush=True)
    wanted = {"-"} | {label for label, _ in sizes}
    records = [r for r in done.values()
               if r["draw"] < settings["draws"] and r["size"] in wanted]
    return records, sizes


def _rounded(value):
    # Nor a dev score.
    return None if value is None else round(value, 4)


# -- report -------------------------------------------------------------------------------

def _mean_std(values, scale=100.0, digits=2):
    values = scale * np.asarray(values, dtype=float)
    return f"{values.mean():.{digits}f} ± {values.std():.{digits}f}"


def chosen_rows(records, draws, size_label):
    """Per draw: the published objective with the best-dev gamma, the best-dev method."""
    by_draw = {}
    for r in records:
        if r["size"] in (size_label, "-"):
            by_draw.setdefault(r["draw"], []).append(r)
    order = {m.name: k for k, m in enumerate(methods())}
    published, overall = [], []
    for draw in draws:
        candidates = sorted(by_draw[draw], key=lambda r: order[r["method"]])
        best_published = max((r for r in candidates if r["family"] == "published"),
                             key=lambda r: r["dev_f1"])  # first of equals: smallest gamma
        best_overall = max(candidates, key=lambda r: r["dev_f1"])
        published.append(best_published)
        overall.append(best_overall)
    return published, overall


def report(corpus, settings, records, sizes):
    lines = []
    draws = sorted({r["draw"] for r in records})
    supervised = {r["draw"]: r for r in records if r["method"] == "supervised"}
    targets = []
    lines.append(f"## {corpus.name}\n")
    lines.append(
        f"{settings['n_labelled']} labelled training sentences, {len(draws)} draws "
        f"(seeds {', '.join(map(str, draws))}); test: "
        f"{'the first' if settings['test_size'] else 'all'} {len(corpus.y_test):,} test "
        f"sentences; {corpus.dev_note}. Semi-supervised phase capped at "
        f"{settings['max_iterations']} L-BFGS iterations"
        + (f", stopped after {settings['patience']} iterations without a dev improvement"
           if settings["patience"] else "")
        + f"; self-training: at most {settings['self_training_rounds']} rounds, each after the "
        f"first capped at {settings['max_iterations']} iterations; c2 = {settings['c2']:g}. "
        "Scores in %, mean ± std over draws; mentions = predicted spans (mean); "
        "dev F1 of the kept iterate.\n")
    # Summary: test F1 per method and size.
    size_labels = [label for label, _ in sizes]
    n_of = dict(sizes)
    header = " | ".join(f"{label} ({n_of[label]:,})" for label in size_labels)
    lines.append(f"Test span F1 by unlabelled set (sentences):\n\n| method | {header} |")
    lines.append("|---|" + "---:|" * len(size_labels))
    table = {}
    for r in records:
        table.setdefault(r["method"], {}).setdefault(r["size"], []).append(r)
    for method in methods():
        if method.name not in table:
            continue
        cells = []
        for label in size_labels:
            rows = table[method.name].get("-" if method.family == "supervised" else label, [])
            cells.append(_mean_std([r["f1"] for r in rows]) if rows else "–")
        lines.append(f"| {method.name} | " + " | ".join(cells) + " |")
    chosen = {label: chosen_rows(records, draws, label) for label in size_labels}
    for k, title in enumerate(("published, gamma chosen on dev", "best on dev (all methods)")):
        cells = [_mean_std([r["f1"] for r in chosen[label][k]]) for label in size_labels]
        lines.append(f"| **{title}** | " + " | ".join(cells) + " |")
    lines.append("")

    # Detail: P/R/F1/mentions per size.
    lines.append("| unlabelled | method | precision | recall | F1 | ΔF1 vs supervised | "
                 "mentions | dev F1 | kept iterate / iterations (or rounds) | seconds |")
    lines.append("|---|---|---:|---:|---:|---:|---:|---:|---|---:|")
    sup_f1 = np.array([supervised[d]["f1"] for d in draws])
    for label in size_labels:
        groups = [(m.name, [r for r in table.get(m.name, {}).get(
            "-" if m.family == "supervised" else label, [])]) for m in methods()]
        published, overall = chosen[label]
        groups += [("**published, gamma chosen on dev**", published),
                   ("**best on dev (all methods)**", overall)]
        for name, rows in groups:
            if not rows:
                continue
            rows = sorted(rows, key=lambda r: r["draw"])
            delta = np.array([r["f1"] - supervised[r["draw"]]["f1"] for r in rows])
            if "best_iteration" in rows[0] and all("best_iteration" in r for r in rows):
                iterates = ", ".join(f"{r['best_iteration']}/{r['ssl_iterations']}" for r in rows)
            elif all("rounds" in r for r in rows):
                iterates = ", ".join(f"{r['rounds']} r" for r in rows)
            else:
                iterates = ""
            if name.startswith("**"):
                iterates = ", ".join(r["method"] for r in rows)
            lines.append(
                f"| {label} ({n_of[label]:,}) | {name} | "
                f"{_mean_std([r['precision'] for r in rows])} | "
                f"{_mean_std([r['recall'] for r in rows])} | {_mean_std([r['f1'] for r in rows])} "
                f"| {100 * delta.mean():+.2f} | {np.mean([r['mentions'] for r in rows]):.0f} | "
                f"{_mean_std([r['dev_f1'] for r in rows])} | {iterates} | "
                f"{np.mean([r['seconds'] for r in rows]):.1f} |")
        gain_overall = np.array([r["f1"] for r in overall]) - sup_f1
        gain_published = np.array([r["f1"] for r in published]) - sup_f1
        targets.append((label, n_of[label], gain_overall, gain_published, published, overall))
    kept_start = [r for r in records if r.get("best_iteration") == 0]
    same = sum(r["f1"] == supervised[r["draw"]]["f1"] for r in kept_start)
    lines.append(f"\nTrue spans in test: {_true_mentions(corpus):,}. Check: of the "
                 f"{len(kept_start)} semi-supervised fits that kept iteration 0, {same} give "
                 f"exactly the supervised CRF's test F1 (all should). Fit time of this corpus: "
                 f"{sum(r['seconds'] for r in records) / 60:.1f} min (sum over fits).\n")

    lines.append("Targets (per unlabelled set):\n")
    for label, n, gain_overall, gain_published, published, overall in targets:
        met_i = gain_overall.mean() >= TARGET_GAIN
        met_ii = (gain_published >= 0).all() and gain_published.mean() >= 0
        per_draw = ", ".join(f"{100 * g:+.2f}" for g in gain_overall)
        per_draw_pub = ", ".join(f"{r['method'].split('=')[1]} ({100 * g:+.2f})"
                                 for r, g in zip(published, gain_published))
        lines.append(
            f"- {label} ({n:,}): (i) best on dev beats supervised by >= 5 F1 points: "
            f"{100 * gain_overall.mean():+.2f} points in mean (per draw {per_draw}; chosen "
            f"{', '.join(r['method'] for r in overall)}) -> **{'met' if met_i else 'MISSED'}**; "
            f"(ii) published objective, gamma chosen on dev, never worse than supervised: "
            f"{100 * gain_published.mean():+.2f} in mean, per draw gamma (ΔF1) {per_draw_pub} "
            f"-> **{'met' if met_ii else 'MISSED'}**")
    lines.append("")
    return "\n".join(lines)


def _true_mentions(corpus):
    return span_classification_report(corpus.y_test, corpus.y_test,
                                      output_dict=True)["overall"]["support"]


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", choices=["bc2gm", "conll2000", "both"], default="both")
    parser.add_argument("--data-dir", default=str(DEFAULT_DATA))
    parser.add_argument("--draws", type=int, help="labelled draws (default: 5)")
    parser.add_argument("--max-iterations", type=int,
                        help="cap of the semi-supervised phase (default: 100 BC2GM, 40 CoNLL)")
    parser.add_argument("--sizes", help="unlabelled sizes, e.g. '1x,2x,5x,5000' or 'all' "
                                        "(default: '1x,2x,5x,5000' BC2GM, 'all' CoNLL)")
    parser.add_argument("--n-labelled", type=int, help="default: 200 BC2GM, 500 CoNLL")
    parser.add_argument("--patience", type=int, default=20,
                        help="stop the semi-supervised phase after this many iterations "
                             "without a dev improvement (0: off)")
    parser.add_argument("--self-training-rounds", type=int, default=5)
    parser.add_argument("--c2", type=float, default=1.0)
    parser.add_argument("--dev-size", type=int, default=1000)
    parser.add_argument("--quick", action="store_true", help="tiny smoke run")
    parser.add_argument("--json", default=str(DEFAULT_JSON),
                        help="per-fit results, appended after every fit and resumed from")
    parser.add_argument("--fresh", action="store_true", help="ignore results in --json")
    parser.add_argument("--output", help="write the markdown report here")
    args = parser.parse_args()

    corpora = ["bc2gm", "conll2000"] if args.corpus == "both" else [args.corpus]
    json_path = Path(args.json)
    results = load_results(json_path, args.fresh)
    started = time.perf_counter()
    sections = []
    for name in corpora:
        settings = dict(DEFAULTS[name], c2=args.c2, patience=args.patience,
                        self_training_rounds=args.self_training_rounds, dev_size=args.dev_size,
                        test_size=None)
        if args.quick:
            settings.update(QUICK)
        for option in ("draws", "max_iterations", "sizes", "n_labelled"):
            if getattr(args, option) is not None:
                settings[option] = getattr(args, option)
        corpus = load_corpus(name, args.data_dir, settings["dev_size"], settings["test_size"])
        corpus_started = time.perf_counter()
        records, sizes = run_corpus(corpus, settings, results, json_path)
        print(f"[{name}] done in {time.perf_counter() - corpus_started:.0f} s", flush=True)
        sections.append(report(corpus, settings, records, sizes))
    text = (f"# Semi-supervised CRF accuracy (issue #3, part d)\n\nMachine: "
            f"{platform.machine()}, {os.cpu_count()} cores, Python "
            f"{platform.python_version()}, single process; this invocation took "
            f"{time.perf_counter() - started:.0f} s (fits resumed from {json_path} are not "
            f"rerun).\n\n" + "\n".join(sections))
    print("\n" + text)
    if args.output:
        Path(args.output).write_text(text)


if __name__ == "__main__":
    main()
