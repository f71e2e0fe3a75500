"""
======================================================================
Gene mentions (BC2GM) from 200 labelled sentences plus unlabelled ones
======================================================================

Usage::

    python examples/bc2gm_entropy_regularization.py [--data-dir ../shared/data/bc2gm]
        [--n-labelled 200] [--n-unlabelled 1000] [--seed 0]

Draws the labelled and unlabelled sentences from the BC2GM training set (labels of the
unlabelled ones are dropped), and compares on the test set: the supervised `CRF`, the published
entropy regulariser (Jiao et al. 2006; Mann & McCallum 2007) at two strengths, the
label-proportion term alone, and both together. Entropy alone pushes a rare-entity tagger
towards all-O (fewer and fewer predicted mentions); the label-proportion term prevents that.
"""

import argparse
import time
from pathlib import Path

import numpy as np

from sklearn_ssl_crf import CRFCV, EntropyRegularizedCRF
from sklearn_ssl_crf.datasets import load_bc2gm
from sklearn_ssl_crf.features import WindowFeatures
from sklearn_ssl_crf.metrics import span_classification_report

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "bc2gm"

# The two estimators with their defaults (each chooses its settings by cross-validation),
# then the objective's terms one at a time at fixed settings (one fit each, nothing chosen).
FIXED = {"c1": 0.0, "c2": 1.0, "early_stopping": False}
MODELS = {
    "CRFCV (supervised, c1/c2 chosen)": CRFCV(random_state=0),
    "EntropyRegularizedCRF() (defaults)": EntropyRegularizedCRF(random_state=0),
    "entropy, gamma=0.1": EntropyRegularizedCRF(gamma=0.1, proportion_weight=0.0, **FIXED),
    "entropy, gamma=1": EntropyRegularizedCRF(gamma=1.0, proportion_weight=0.0, **FIXED),
    "proportions, weight=1": EntropyRegularizedCRF(gamma=0.0, proportion_weight=1.0,
                                                   **FIXED),
    "entropy 0.1 + proportions 10": EntropyRegularizedCRF(gamma=0.1, proportion_weight=10.0,
                                                          **FIXED),
}


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", default=str(DEFAULT_DATA))
    parser.add_argument("--n-labelled", type=int, default=200)
    parser.add_argument("--n-unlabelled", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    splits = load_bc2gm(args.data_dir)
    (X_train, y_train), (X_test, y_test) = splits["train"], splits["test"]
    order = np.random.default_rng(args.seed).permutation(len(X_train))
    labelled = order[:args.n_labelled]
    unlabelled = order[args.n_labelled:args.n_labelled + args.n_unlabelled]
    features = WindowFeatures()
    X_labelled = features.transform([X_train[i] for i in labelled])
    y_labelled = [y_train[i] for i in labelled]
    X_unlabelled = features.transform([X_train[i] for i in unlabelled])
    X_test = features.transform(X_test)

    print(f"{len(labelled)} labelled, {len(unlabelled)} unlabelled training sentences "
          f"(seed {args.seed}); {len(X_test)} test sentences\n")
    print(f"{'':>30}  {'P':>6} {'R':>6} {'F1':>6}  mentions  seconds")
    for name, model in MODELS.items():
        started = time.perf_counter()
        if isinstance(model, EntropyRegularizedCRF):
            model.fit(X_labelled, y_labelled, X_unlabeled=X_unlabelled)
        else:
            model.fit(X_labelled, y_labelled)
        predicted = model.predict(X_test)
        seconds = time.perf_counter() - started
        scores = span_classification_report(y_test, predicted, output_dict=True)["overall"]
        # Predicted mentions, counted as conlleval counts chunks.
        mentions = span_classification_report(predicted, predicted,
                                              output_dict=True)["overall"]["support"]
        print(f"{name:>30}  {scores['precision']:6.3f} {scores['recall']:6.3f} "
              f"{scores['f1-score']:6.3f}  {mentions:8d}  {seconds:7.0f}")


if __name__ == "__main__":
    main()
