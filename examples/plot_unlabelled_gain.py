"""
===================================
Gain from more unlabelled sentences
===================================

How much does unlabelled text add to a tagger trained on few labelled sentences, and does
more of it help? This example trains
`~sklearn_ssl_crf.EntropyRegularizedCRF` (entropy regularisation with a label-proportion
term) on 200 labelled sentences of the BC2GM gene-mention corpus plus 50 to 1,500
unlabelled ones, and plots the **gain**: its test span F1 minus that of the supervised
`~sklearn_ssl_crf.CRF` trained on the same 200 sentences.

The data come from the shared data folder: ``$SKLEARN_SSL_CRF_DATA/bc2gm`` if the
environment variable is set, else ``../shared/data/bc2gm`` beside the repository. Where
the corpus is absent, the example falls back to synthetic BIO sequences from
`~sklearn_ssl_crf.datasets.make_sequences` (and says so in its output). It runs in about a
minute on two cores.
"""

import os
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from sklearn.pipeline import make_pipeline

from sklearn_ssl_crf import CRFCV, EntropyRegularizedCRF, SequenceVectorizer, WindowFeatures
from sklearn_ssl_crf.datasets import load_bc2gm, make_sequences
from sklearn_ssl_crf.metrics import span_f1_score


def shared_data(corpus):
    """Folder of a shared corpus: under $SKLEARN_SSL_CRF_DATA, else ../shared/data beside
    the repository (sphinx-gallery runs examples in their folder, without ``__file__``)."""
    here = Path(__file__).resolve().parent if "__file__" in globals() else Path.cwd()
    root = os.environ.get("SKLEARN_SSL_CRF_DATA", here.parent.parent / "shared" / "data")
    return Path(root) / corpus


# %%
# The data
# --------
# The training sentences are shuffled once per draw (seeds 0 and 1): the first 200 are
# the labelled ones, and the unlabelled sets are prefixes of the rest, so that each
# unlabelled set contains the smaller ones. Their labels are dropped. Every model is
# scored on the whole test set.

N_LABELLED = 200
UNLABELLED_SIZES = [50, 150, 500, 1500]
SEEDS = [0, 1]

folder = shared_data("bc2gm")
if folder.is_dir():
    splits = load_bc2gm(folder)
    (X_train, y_train), (X_test, y_test) = splits["train"], splits["test"]
    corpus = "BC2GM gene mentions"
else:
    print(f"{folder} not found: synthetic sequences from make_sequences instead")
    X, y = make_sequences(n_sequences=6000, random_state=0)
    X_train, y_train, X_test, y_test = X[:4000], y[:4000], X[4000:], y[4000:]
    corpus = "synthetic sequences"

print(f"{corpus}: {len(X_train):,} training sentences, {len(X_test):,} test sentences")

# %%
# Training
# --------
# In each draw the sentences are featurised once: `~sklearn_ssl_crf.WindowFeatures`
# turns each token into sklearn-crfsuite style feature dicts (the word, its suffixes and
# shape, the same for its neighbours), and `~sklearn_ssl_crf.SequenceVectorizer` turns
# those into a sparse matrix, its vocabulary learned from the draw's labelled and
# unlabelled sentences. The estimators accept the resulting
# `~sklearn_ssl_crf.SequenceMatrix` (indexable by sentence) in place of the dicts.
#
# Both models with their defaults: `~sklearn_ssl_crf.CRFCV` chooses ``c1`` and ``c2`` by
# cross-validation over the labelled sentences, and
# `~sklearn_ssl_crf.EntropyRegularizedCRF` chooses them the same way, then decides on the
# folds whether its unlabelled term pays. Every L-BFGS run is capped at 100 iterations,
# here and in the supervised baseline, to keep the example short. The unlabelled sentences
# are passed as ``X_unlabeled``.

scores = {}  # (seed, number of unlabelled sentences) -> test span F1
for seed in SEEDS:
    order = np.random.default_rng(seed).permutation(len(X_train))
    labelled, pool = order[:N_LABELLED], order[N_LABELLED:N_LABELLED + max(UNLABELLED_SIZES)]
    X_labelled = [X_train[i] for i in labelled]
    y_labelled = [y_train[i] for i in labelled]
    X_pool = [X_train[i] for i in pool]  # unlabelled: their labels are not used
    featurizer = make_pipeline(WindowFeatures(), SequenceVectorizer())
    featurizer.fit(X_labelled + X_pool)
    F_labelled, F_pool = featurizer.transform(X_labelled), featurizer.transform(X_pool)
    F_test = featurizer.transform(X_test)

    crf = CRFCV(random_state=seed, max_iterations=100).fit(F_labelled, y_labelled)
    scores[seed, 0] = span_f1_score(y_test, crf.predict(F_test))
    for n_unlabelled in UNLABELLED_SIZES:
        model = EntropyRegularizedCRF(random_state=seed, max_iterations=100)
        model.fit(F_labelled, y_labelled, X_unlabeled=F_pool[:n_unlabelled])
        scores[seed, n_unlabelled] = span_f1_score(y_test, model.predict(F_test))
    print(f"seed {seed}: test span F1 (%) " + ", ".join(
        f"{n:,} unlabelled {100 * scores[seed, n]:.2f}" for n in [0] + UNLABELLED_SIZES))

# %%
# The gain
# --------
# Each thin line is one draw of the labelled sentences, the thick line their mean. A
# point above zero means that the unlabelled sentences helped.

gains = 100 * np.array([[scores[seed, n] - scores[seed, 0] for n in UNLABELLED_SIZES]
                        for seed in SEEDS])
print("gain in span F1 points over the supervised CRF, mean over the draws: " + ", ".join(
    f"{n:,}: {gain:+.2f}" for n, gain in zip(UNLABELLED_SIZES, gains.mean(axis=0))))

fig, ax = plt.subplots(figsize=(7, 4.5))
for seed, row in zip(SEEDS, gains):
    ax.plot(UNLABELLED_SIZES, row, "o--", color="tab:blue", alpha=0.4, linewidth=1,
            label="single draws" if seed == SEEDS[0] else None)
ax.plot(UNLABELLED_SIZES, gains.mean(axis=0), "o-", color="tab:blue", linewidth=2.5,
        label=f"mean over {len(SEEDS)} draws")
for n, gain in zip(UNLABELLED_SIZES, gains.mean(axis=0)):
    ax.annotate(f"{gain:+.1f}", (n, gain), textcoords="offset points", xytext=(0, 8),
                ha="center", fontsize=9, color="tab:blue")
ax.axhline(0, color="black", linewidth=0.8)
ax.set_xscale("log")
ax.set_xticks(UNLABELLED_SIZES, [f"{n:,}" for n in UNLABELLED_SIZES])
ax.minorticks_off()
ax.set_xlabel("unlabelled sentences (log scale)")
ax.set_ylabel("test span F1 gain over CRF (points)")
ax.set_title(f"{corpus}: EntropyRegularizedCRF() minus CRFCV(),\n"
             f"both on the same {N_LABELLED} labelled sentences",
             fontsize=10)
ax.grid(alpha=0.3)
ax.legend()
fig.tight_layout()
plt.show()
