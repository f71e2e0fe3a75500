"""
==============================================
Entropy weight against label-proportion weight
==============================================

`~sklearn_ssl_crf.EntropyRegularizedCRF` has two weights for its unlabelled terms:
``gamma``, the weight of the entropy of the predicted labels of the unlabelled sentences
(the published objective of Jiao et al. 2006 and Mann & McCallum 2007), and
``proportion_weight``, the weight of a penalty that keeps the mean predicted label
distribution on those sentences near the labelled one. This example fits it on a grid of
both, with 200 labelled and 500 unlabelled BC2GM sentences, and draws the development-set
span F1 of each fit as an annotated heat map, beside the number of gene mentions each model
predicts. The corner ``gamma=0, proportion_weight=0`` is the supervised CRF.

Entropy regularisation rewards confident predictions, and on a task where one label
(``O``) dominates, the most confident tagger predicts it everywhere; the label-proportion
term counters that.

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

from sklearn_ssl_crf import EntropyRegularizedCRF, SequenceVectorizer, WindowFeatures
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
# A random 200 training sentences are labelled and another 500 unlabelled (their labels
# are dropped); a random 1,000 sentences of the development split score every fit, and the
# test split is kept for the setting chosen on them. `~sklearn_ssl_crf.WindowFeatures` and
# `~sklearn_ssl_crf.SequenceVectorizer` featurise every sentence once; the estimators
# accept the resulting `~sklearn_ssl_crf.SequenceMatrix` in place of feature dicts.

N_LABELLED, N_UNLABELLED, N_DEV = 200, 500, 1000
GAMMAS = [0.0, 0.01, 0.1, 1.0]
PROPORTION_WEIGHTS = [0.0, 1.0, 10.0, 100.0]

rng = np.random.default_rng(0)
folder = shared_data("bc2gm")
if folder.is_dir():
    splits = load_bc2gm(folder)
    (X_train, y_train), (X_dev, y_dev) = splits["train"], splits["devel"]
    X_test, y_test = splits["test"]
    corpus = "BC2GM gene mentions"
else:
    print(f"{folder} not found: synthetic sequences from make_sequences instead")
    X, y = make_sequences(n_sequences=6000, random_state=0)
    X_train, y_train, X_dev, y_dev = X[:3000], y[:3000], X[3000:4500], y[3000:4500]
    X_test, y_test = X[4500:], y[4500:]
    corpus = "synthetic sequences"

order = rng.permutation(len(X_train))
labelled, unlabelled = order[:N_LABELLED], order[N_LABELLED:N_LABELLED + N_UNLABELLED]
dev = rng.permutation(len(X_dev))[:N_DEV]
X_labelled = [X_train[i] for i in labelled]
y_labelled = [y_train[i] for i in labelled]
X_unlabelled = [X_train[i] for i in unlabelled]
y_dev = [y_dev[i] for i in dev]

featurizer = make_pipeline(WindowFeatures(), SequenceVectorizer())
featurizer.fit(X_labelled + X_unlabelled)
F_labelled, F_unlabelled = featurizer.transform(X_labelled), featurizer.transform(X_unlabelled)
F_dev = featurizer.transform([X_dev[i] for i in dev])
F_test = featurizer.transform(X_test)
print(f"{corpus}: {N_LABELLED} labelled and {N_UNLABELLED} unlabelled training sentences, "
      f"{N_DEV:,} development sentences, {len(X_test):,} test sentences")

# %%
# The grid
# --------
# ``c2=0.02`` follows the package's rule of thumb for small labelled sets (labelled
# sentences / 10,000). Every fit is capped at 100 L-BFGS iterations per phase to keep the
# example short. Besides the development span F1, each fit's number of predicted mentions
# is recorded (the number of gene spans in its predictions).


def count_mentions(tags):
    """Number of mentions in a list of tag sequences, as conlleval counts them: a mention
    starts at a B- tag, or at an I- tag that follows O."""
    count = 0
    for sequence in tags:
        previous = "O"
        for tag in sequence:
            count += tag.startswith("B-") or (tag.startswith("I-") and previous == "O")
            previous = tag
    return count


f1 = np.zeros((len(GAMMAS), len(PROPORTION_WEIGHTS)))
mentions = np.zeros_like(f1, dtype=int)
models = {}
for i, gamma in enumerate(GAMMAS):
    for j, weight in enumerate(PROPORTION_WEIGHTS):
        # Fixed settings, one fit each: the map shows the objective, not a selection.
        model = EntropyRegularizedCRF(gamma=gamma, proportion_weight=weight, c1=0.0,
                                      c2=0.02, max_iterations=100, early_stopping=False)
        model.fit(F_labelled, y_labelled, X_unlabeled=F_unlabelled)
        predicted = model.predict(F_dev)
        f1[i, j] = 100 * span_f1_score(y_dev, predicted)
        mentions[i, j] = count_mentions(predicted)
        models[gamma, weight] = model
    print(f"gamma={gamma:<5g} dev span F1 (%): " + "  ".join(
        f"w={weight:g}: {value:.2f}" for weight, value in zip(PROPORTION_WEIGHTS, f1[i])))
true_mentions = count_mentions(y_dev)

# %%
# The heat maps
# -------------
# Left, the development span F1 of every fit; right, the mentions it predicts on the
# development sentences, as a share of the true mentions there. On BC2GM, moving down
# the left column (entropy alone) the taggers predict fewer and fewer mentions, and
# moving right (a heavier label-proportion term) keeps their number up. (The synthetic
# fallback data, whose entities are not rare, show much weaker effects.)

fig, axes = plt.subplots(1, 2, figsize=(11, 4.6))
panels = [(f1, "viridis", "development span F1 (%)", "{:.1f}"),
          (100 * mentions / true_mentions, "cividis",
           f"predicted mentions (% of the {true_mentions:,} true ones)", "{:.0f}")]
for ax, (values, cmap, title, fmt) in zip(axes, panels):
    image = ax.imshow(values, cmap=cmap, aspect="auto")
    fig.colorbar(image, ax=ax, shrink=0.9)
    middle = (values.max() + values.min()) / 2
    for (i, j), value in np.ndenumerate(values):
        ax.text(j, i, fmt.format(value), ha="center", va="center", fontsize=11,
                color="black" if value > middle else "white")
    ax.set_xticks(range(len(PROPORTION_WEIGHTS)), [f"{w:g}" for w in PROPORTION_WEIGHTS])
    ax.set_yticks(range(len(GAMMAS)), [f"{g:g}" for g in GAMMAS])
    ax.set_xlabel("proportion_weight (label-proportion term)")
    ax.set_ylabel("gamma (entropy weight)")
    ax.set_title(title, fontsize=10)
fig.suptitle(f"EntropyRegularizedCRF on {corpus}: {N_LABELLED} labelled, {N_UNLABELLED} "
             f"unlabelled sentences, c2 = 0.02 (top-left cell: the supervised CRF)",
             fontsize=11)
fig.tight_layout()

# %%
# The setting chosen on the development set, and the supervised CRF beside it, scored once
# on the test set:

best = np.unravel_index(f1.argmax(), f1.shape)
gamma, weight = GAMMAS[best[0]], PROPORTION_WEIGHTS[best[1]]
chosen = span_f1_score(y_test, models[gamma, weight].predict(F_test))
supervised = span_f1_score(y_test, models[0.0, 0.0].predict(F_test))
print(f"best on dev: gamma={gamma:g}, proportion_weight={weight:g}; test span F1 "
      f"{100 * chosen:.2f} against {100 * supervised:.2f} for the supervised CRF")
plt.show()
