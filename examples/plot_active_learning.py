"""
==============================================
Active learning: which sentences to label next
==============================================

A tagger trained on a few labelled sentences can say which unlabelled sentences it is
least sure about. This example grows a labelled set of CoNLL-2000 chunking sentences
round by round, each time labelling the sentences a query strategy picks from an
unlabelled pool, retraining a supervised `~sklearn_ssl_crf.CRF` and scoring it on the
test set. The strategies:

- **random**: sentences drawn at random (the baseline);
- **entropy**: the highest entropy of the sentence's labels, ``H(Y | x)``
  (`~sklearn_ssl_crf.CRF.predict_entropy`); it grows with the sentence's length;
- **entropy / token**: the same divided by the sentence's length;
- **uncertain span**: the highest joint entropy of 3 consecutive labels in the sentence
  (`~sklearn_ssl_crf.CRF.most_uncertain_spans`, Mann & McCallum 2007).

The curves are drawn against labelled sentences and against labelled tokens: if the
annotation cost is per token, a strategy that picks long sentences pays more per query.

The data come from the shared data folder: ``$SKLEARN_SSL_CRF_DATA/conll2000`` if the
environment variable is set, else ``../shared/data/conll2000`` beside the repository.
Where the corpus is absent, the example falls back to synthetic BIO sequences from
`~sklearn_ssl_crf.datasets.make_sequences` (and says so in its output). It runs in about a
minute on two cores; ``benchmarks/bench_active_learning.py`` runs the same comparison on
the whole pool with several seeds.
"""

import os
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from sklearn_ssl_crf import CRF, WindowFeatures
from sklearn_ssl_crf.datasets import load_conll2000, make_sequences
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
# From one random order of the training sentences (seed 0): the first 50 are the initial
# labelled set, the next 1,500 the unlabelled pool the strategies query from. Tokens are
# ``(word, part-of-speech tag)`` pairs; `~sklearn_ssl_crf.WindowFeatures` turns them into
# sklearn-crfsuite style feature dicts (the word, its suffixes and shape, the tag, the same
# for the neighbours). The CRF learns its vocabulary of attributes from the labelled
# sentences it is given, so each round's model stays as small as its training set.

N_INITIAL, POOL_SIZE, BATCH, ROUNDS = 50, 1500, 25, 8

folder = shared_data("conll2000")
if folder.is_dir():
    splits = load_conll2000(folder)
    (X_train, y_train), (X_test, y_test) = splits["train"], splits["test"]
    corpus = "CoNLL-2000 chunking"
else:
    print(f"{folder} not found: synthetic sequences from make_sequences instead")
    X, y = make_sequences(n_sequences=5000, n_types=3, random_state=0)
    X_train, y_train, X_test, y_test = X[:3000], y[:3000], X[3000:], y[3000:]
    corpus = "synthetic sequences"

order = np.random.default_rng(0).permutation(len(X_train))[:N_INITIAL + POOL_SIZE]
X_start = [X_train[i] for i in order]
y_start = [y_train[i] for i in order]  # the pool's labels are read only once queried
features = WindowFeatures()
F_start = features.transform(X_start)
F_test = features.transform(X_test)
lengths = np.array([len(sentence) for sentence in X_start])
print(f"{corpus}: {N_INITIAL} labelled sentences to start, a pool of {POOL_SIZE:,}, "
      f"{len(X_test):,} test sentences")

# %%
# The query strategies
# --------------------
# Each returns one score per pool sentence; the highest are labelled next.


def query_scores(strategy, model, pool):
    F_pool = [F_start[i] for i in pool]
    if strategy == "entropy":
        return model.predict_entropy(F_pool)
    if strategy == "entropy / token":
        return model.predict_entropy(F_pool) / lengths[pool]
    if strategy == "uncertain span":
        spans = model.most_uncertain_spans(F_pool, width=3)  # (start, stop, entropy)
        return np.array([entropy for _, _, entropy in spans])
    raise ValueError(strategy)


# %%
# The rounds
# ----------
# Every strategy starts from the same 50 sentences. Each round labels 25 more and retrains
# the CRF from scratch; ``c2`` follows the package's rule of thumb for small labelled sets
# (labelled sentences / 10,000).

STRATEGIES = ["random", "entropy", "entropy / token", "uncertain span"]


def train(labelled):
    model = CRF(c2=len(labelled) / 10_000)
    return model.fit([F_start[i] for i in labelled], [y_start[i] for i in labelled])


first = train(np.arange(N_INITIAL))
first_f1 = span_f1_score(y_test, first.predict(F_test))
curves = {}
for strategy in STRATEGIES:
    rng = np.random.default_rng(1)
    labelled, pool = np.arange(N_INITIAL), np.arange(N_INITIAL, N_INITIAL + POOL_SIZE)
    model = first
    curve = [(len(labelled), lengths[labelled].sum(), first_f1)]
    for _ in range(ROUNDS):
        if strategy == "random":
            chosen = rng.choice(len(pool), size=BATCH, replace=False)
        else:
            chosen = np.argsort(-query_scores(strategy, model, pool), kind="stable")[:BATCH]
        labelled, pool = np.concatenate([labelled, pool[chosen]]), np.delete(pool, chosen)
        model = train(labelled)
        curve.append((len(labelled), lengths[labelled].sum(),
                      span_f1_score(y_test, model.predict(F_test))))
    curves[strategy] = np.array(curve, dtype=float)
    print(f"{strategy:>15}: test span F1 (%) " + " ".join(
        f"{100 * f1:.2f}" for f1 in curves[strategy][:, 2])
        + f"; {curves[strategy][-1, 1]:,.0f} labelled tokens at the end")

# %%
# The learning curves
# -------------------
# Left, against the number of labelled sentences; right, against the number of labelled
# tokens, for the same rounds.

fig, axes = plt.subplots(1, 2, figsize=(11, 4.5), sharey=True)
markers = {"random": "s--", "entropy": "o-", "entropy / token": "^-", "uncertain span": "D-"}
for strategy, curve in curves.items():
    for ax, column in zip(axes, (0, 1)):
        ax.plot(curve[:, column], 100 * curve[:, 2], markers[strategy], label=strategy,
                markersize=5)
axes[0].set_xlabel("labelled sentences")
axes[1].set_xlabel("labelled tokens")
axes[0].set_ylabel("test span F1 (%)")
for ax in axes:
    ax.grid(alpha=0.3)
axes[1].legend(title="query strategy", fontsize=9)
fig.suptitle(f"Active learning on {corpus}: {N_INITIAL} random sentences to start, then "
             f"{ROUNDS} rounds of {BATCH}\nqueried from a pool of {POOL_SIZE:,}; the CRF is "
             "retrained after each round", fontsize=11)
fig.tight_layout()
plt.show()
