"""
=========================================================
Part-of-speech error against labelled sentences: graph PR
=========================================================

Part-of-speech tagging error against the number of labelled sentences, the supervised
`~sklearn_ssl_crf.CRF` against graph posterior regularisation
(`~sklearn_ssl_crf.GraphPRCRF`), like Figure 1(b) of He, Gillenwater & Taskar (2013).

Data: Universal Dependencies English-EWT, dev and test pooled (4,078 sentences, 50k
tokens), universal part-of-speech tags. For each draw (seed ``--seed``, ``--seed + 1``,
...), 500 sentences are held out at random; of the others, in a random order, the first l
are labelled (nested sets: the 50 are among the 100) and the next ones unlabelled: 800
sentences besides the largest labelled set by default (``--max-unlabelled``), all of them
with ``--max-unlabelled all``. Features: the word, its suffixes of 1 to 3 letters and its
shape, for the token and its two neighbours (`~sklearn_ssl_crf.WindowFeatures`). The
trigram graph (60 mutual nearest neighbours, section 4.2 of the paper,
`~sklearn_ssl_crf.graph.trigram_graph`) is built once per draw over the labelled and
unlabelled sentences. The CRF is trained on the l labelled sentences, `GraphPRCRF`
(lam = 1) on all of them.

Plotted: the token error on the unlabelled sentences (transductive: the CRF's
``predict``, PR's ``transduction_``, its auxiliary distribution q) and on the held-out
sentences (inductive: both ``predict``), averaged over the draws; the numbers are printed
as a table.

The data come from the shared data folder: ``$SKLEARN_SSL_CRF_DATA/ud_english_ewt`` if the
environment variable is set, else ``../shared/data/ud_english_ewt`` beside the repository
(or ``--data-dir``); without them the example stops with a ``FileNotFoundError`` saying
where it looked. With the defaults it runs in about a minute on two cores.

Usage::

    python examples/plot_graph_pr_pos_curve.py [--data-dir DIR] [--n-labelled 50 100 200]
        [--draws 1] [--seed 0] [--lam LAMBDA] [--max-unlabelled 800]
        [--output figure.png]

The figure is written to a file only with ``--output``. ``docs/graph_pr_pos_curve.png``
uses every sentence of the pool and one more l (each PR fit on the ~44k tokens then takes
80-100 s of CPU; about 8 minutes on a busy 2-core machine)::

    python examples/plot_graph_pr_pos_curve.py --n-labelled 50 100 200 400 \\
        --max-unlabelled all --output docs/graph_pr_pos_curve.png
"""

import argparse
import os
import time
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from sklearn_ssl_crf import CRFCV, GraphPRCRF, WindowFeatures
from sklearn_ssl_crf.datasets import load_ud_english_ewt
from sklearn_ssl_crf.graph import trigram_graph


def shared_data(corpus):
    """Folder of a shared corpus: under $SKLEARN_SSL_CRF_DATA, else ../shared/data beside
    the repository (sphinx-gallery runs examples in their folder, without ``__file__``)."""
    here = Path(__file__).resolve().parent if "__file__" in globals() else Path.cwd()
    root = os.environ.get("SKLEARN_SSL_CRF_DATA", here.parent.parent / "shared" / "data")
    return Path(root) / corpus


def sentence_count(text):
    """--max-unlabelled: a number of sentences, or 'all'."""
    return None if text == "all" else int(text)


parser = argparse.ArgumentParser(
    description="POS error against labelled sentences, CRF against GraphPRCRF "
                "(He et al. 2013, Fig. 1b)")
parser.add_argument("--data-dir", default=str(shared_data("ud_english_ewt")))
parser.add_argument("--n-labelled", type=int, nargs="+", default=[50, 100, 200])
parser.add_argument("--draws", type=int, default=1, help="random splits averaged")
parser.add_argument("--seed", type=int, default=0, help="seed of the first draw")
parser.add_argument("--lam", type=float, help="graph strength (default: the estimator's)")
parser.add_argument("--max-unlabelled", type=sentence_count, default=800,
                    help="keep only max(l) + this many sentences besides the held-out ones "
                         "('all': every one)")
parser.add_argument("--output", help="write the figure to this file (PNG)")
args = parser.parse_args()
args.n_labelled = sorted(set(args.n_labelled))

N_HELDOUT = 500
COLUMNS = ("CRF unlabelled", "PR unlabelled", "CRF held-out", "PR held-out")

# %%
# The data
# --------
# Dev and test are pooled; the features of every sentence are computed once.

if not Path(args.data_dir).is_dir():
    raise FileNotFoundError(
        f"{args.data_dir} not found: set SKLEARN_SSL_CRF_DATA to the folder holding "
        "ud_english_ewt/, or pass --data-dir")
splits = load_ud_english_ewt(args.data_dir)
sentences = splits["dev"][0] + splits["test"][0]
tags = splits["dev"][1] + splits["test"][1]
X = WindowFeatures(window=1, suffixes=(1, 2, 3), word_shape=True).fit_transform(sentences)
print(f"{len(sentences):,} sentences, {sum(map(len, tags)):,} tokens")

# %%
# One draw
# --------
# A random split, the graph over the pool, then for every l the CRF on the l labelled
# sentences and `~sklearn_ssl_crf.GraphPRCRF` on the whole pool (the labels of all but
# the first l sentences set to None).


def token_error(predicted, gold):
    wrong = np.concatenate([np.asarray(p) != np.asarray(g) for p, g in zip(predicted, gold)])
    return 100 * wrong.mean()


def run_draw(X, tags, seed, args):
    """Errors (%) of the CRF and PR for every l on one random split, as {l: {column: error}}."""
    order = np.random.default_rng(seed).permutation(len(X))
    heldout, pool = order[:N_HELDOUT], order[N_HELDOUT:]
    if args.max_unlabelled is not None:
        pool = pool[:max(args.n_labelled) + args.max_unlabelled]
    X_pool, y_pool = [X[i] for i in pool], [tags[i] for i in pool]
    X_heldout, y_heldout = [X[i] for i in heldout], [tags[i] for i in heldout]
    start = time.perf_counter()
    graph = trigram_graph(X_pool, n_neighbors=60)
    print(f"draw {seed}: {graph} in {time.perf_counter() - start:.0f} s", flush=True)
    results = {}
    for n_labelled in args.n_labelled:
        start = time.perf_counter()
        crf = CRFCV(random_state=seed).fit(X_pool[:n_labelled], y_pool[:n_labelled])
        pr = GraphPRCRF(graph=graph, random_state=seed,
                        **({} if args.lam is None else {"lam": args.lam}))
        pr.fit(X_pool, y_pool[:n_labelled] + [None] * (len(X_pool) - n_labelled))
        unlabelled, gold = X_pool[n_labelled:], y_pool[n_labelled:]
        results[n_labelled] = dict(zip(COLUMNS, (
            token_error(crf.predict(unlabelled), gold),
            token_error(pr.transduction_[n_labelled:], gold),
            token_error(crf.predict(X_heldout), y_heldout),
            token_error(pr.predict(X_heldout), y_heldout))))
        print(f"  l = {n_labelled}: " + ", ".join(
            f"{name} {error:.2f}%" for name, error in results[n_labelled].items())
            + f" ({pr.n_iter_} EM iterations, {time.perf_counter() - start:.0f} s)",
            flush=True)
    n_unlabelled = {n: sum(len(sentence) for sentence in y_pool[n:]) for n in args.n_labelled}
    return results, n_unlabelled


started = time.perf_counter()
draws, n_unlabelled = [], None
for draw in range(args.draws):
    results, n_unlabelled = run_draw(X, tags, args.seed + draw, args)
    draws.append(results)
print(f"{args.draws} draw(s) in {time.perf_counter() - started:.0f} s")

# %%
# The errors
# ----------

# errors[l][column]: one value per draw.
errors = {n: {c: np.array([d[n][c] for d in draws]) for c in COLUMNS}
          for n in args.n_labelled}
print(f"\ntoken error (%), mean{' ± std' if args.draws > 1 else ''} over {args.draws} "
      f"draw(s)")
print(f"{'l':>5}  " + "  ".join(f"{c:>16}" for c in COLUMNS))
for n in args.n_labelled:
    cells = []
    for c in COLUMNS:
        values = errors[n][c]
        cell = f"{values.mean():.2f}"
        if args.draws > 1:
            cell += f" ± {values.std(ddof=1):.2f}"
        cells.append(f"{cell:>16}")
    print(f"{n:>5}  " + "  ".join(cells))

# %%
# The figure
# ----------
# Left, the unlabelled sentences of the pool (for PR, its auxiliary distribution q);
# right, the held-out sentences, which neither model saw.


def plot(errors, n_unlabelled, args):
    """Two panels, unlabelled and held-out sentences: error against l, CRF and PR."""
    figure, axes = plt.subplots(1, 2, figsize=(11, 4.6), sharey=True)
    panels = (("unlabelled", f"unlabelled sentences ({n_unlabelled[args.n_labelled[0]]:,} "
               f"tokens at l = {args.n_labelled[0]})\nCRF: predict, PR: transduction_ (q)"),
              ("held-out", f"{N_HELDOUT} held-out sentences\nCRF and PR: predict (theta)"))
    x = np.array(args.n_labelled)
    for axis, (part, title) in zip(axes, panels):
        for method, style in (("CRF", "s--"), ("PR", "o-")):
            values = np.array([errors[n][f"{method} {part}"] for n in args.n_labelled])
            mean = values.mean(axis=1)
            spread = values.std(axis=1, ddof=1) if args.draws > 1 else None
            axis.errorbar(x, mean, yerr=spread, fmt=style, capsize=3,
                          label="CRFCV (labelled only)" if method == "CRF"
                          else "GraphPRCRF (its defaults)" if args.lam is None
                          else f"GraphPRCRF (lam = {args.lam:g})")
            for n, value in zip(x, mean):
                axis.annotate(f"{value:.1f}", (n, value), textcoords="offset points",
                              xytext=(6, 3) if method == "CRF" else (-6, -11),
                              ha="left" if method == "CRF" else "right", fontsize=8,
                              color=axis.lines[-1].get_color())
        axis.set_xscale("log")
        axis.margins(x=0.08, y=0.08)
        axis.set_xticks(x, [str(n) for n in x])
        axis.minorticks_off()
        axis.set_xlabel("labelled sentences l")
        axis.set_title(title, fontsize=10)
        axis.grid(alpha=0.3)
    axes[0].set_ylabel("token error (%)")
    axes[0].legend(fontsize=9)
    setting = ("all other sentences unlabelled" if args.max_unlabelled is None
               else f"a subsample of {args.max_unlabelled:,} + max(l) - l unlabelled")
    spread_note = (f"mean ± std over {args.draws} random splits" if args.draws > 1
                   else f"one random split (seed {args.seed})")
    figure.suptitle(
        f"UPOS tagging, UD English-EWT dev + test: l labelled sentences, {setting}, trigram "
        f"graph k = 60,\nEM iterations chosen by cross-validation; {spread_note}",
        fontsize=11)
    figure.tight_layout()
    return figure


figure = plot(errors, n_unlabelled, args)
if args.output:
    figure.savefig(args.output, dpi=110)
    print(f"wrote {args.output}")
plt.show()
