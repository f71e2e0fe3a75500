"""Weights of the labelled likelihood: one per sequence (``sample_weight`` of ``fit``) and
one per label (the ``class_weight`` parameter)."""

from collections.abc import Mapping
from numbers import Real

import numpy as np

__all__ = ["labelled_weights", "resolve_class_weight"]


def labelled_weights(sample_weight, n_sequences, labelled, unlabeled_ones=True):
    """The weights of the labelled sequences ``labelled`` (indices) from ``fit``'s
    ``sample_weight`` (one per sequence of X), or None when it is None.

    Weights must be finite and non-negative. They weight each labelled sequence's
    log-likelihood; with ``unlabeled_ones``, an unlabelled sequence (its terms are not
    weighted) must have weight 1.
    """
    if sample_weight is None:
        return None
    if isinstance(sample_weight, (str, bytes, Mapping)):
        raise TypeError(f"sample_weight must be an array of numbers, one per sequence of X, "
                        f"got {type(sample_weight).__name__}")
    try:
        weights = np.asarray(sample_weight, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise TypeError("sample_weight must be an array of numbers, one per sequence of "
                        "X") from error
    if weights.ndim == 0:
        weights = np.full(n_sequences, float(weights))
    if weights.shape != (n_sequences,):
        raise ValueError(f"sample_weight has shape {weights.shape}; it needs one weight per "
                         f"sequence of X ({n_sequences})")
    bad = np.flatnonzero(~np.isfinite(weights) | (weights < 0))
    if bad.size:
        raise ValueError(f"sample_weight[{bad[0]}] is {float(weights[bad[0]])!r}: weights must be "
                         "finite and non-negative")
    if labelled.size and not weights[labelled].any():
        raise ValueError("sample_weight is 0 for every labelled sequence: at least one must "
                         "weigh more")
    unlabeled = np.setdiff1d(np.arange(n_sequences), labelled)
    odd = unlabeled[weights[unlabeled] != 1.0] if unlabeled_ones else unlabeled[:0]
    if odd.size:
        raise ValueError(f"sample_weight[{odd[0]}] is {float(weights[odd[0]])!r} but sequence "
                         f"{odd[0]} is unlabelled: weights apply to the labelled sequences' "
                         "likelihood; give unlabelled sequences weight 1")
    return weights[labelled]


def resolve_class_weight(class_weight, classes, codes):
    """The weight of each label of ``classes``, or None when all are 1.

    ``class_weight`` is None, 'balanced' (``n_tokens / (n_classes * count)`` over the
    known labels ``codes``, -1 unknown; 1 for a label without tokens), or a dict label ->
    positive weight (missing labels 1).
    """
    if class_weight is None:
        return None
    n_classes = len(classes)
    if isinstance(class_weight, str):
        if class_weight != "balanced":
            raise ValueError(f"class_weight must be None, 'balanced' or a dict of label -> "
                             f"weight, got {class_weight!r}")
        counts = np.bincount(codes[codes >= 0], minlength=n_classes).astype(np.float64)
        weights = np.ones(n_classes)
        seen = counts > 0
        weights[seen] = counts.sum() / (n_classes * counts[seen])
    elif isinstance(class_weight, Mapping):
        index = {label: k for k, label in enumerate(classes)}
        weights = np.ones(n_classes)
        for label, weight in class_weight.items():
            if label not in index:
                raise ValueError(f"class_weight names label {label!r}, which is not among "
                                 f"the training labels {list(classes)}")
            if not isinstance(weight, Real) or not np.isfinite(weight) or weight <= 0:
                raise ValueError(f"class_weight[{label!r}] is {weight!r}: weights must be "
                                 "positive numbers")
            weights[index[label]] = float(weight)
    else:
        raise TypeError(f"class_weight must be None, 'balanced' or a dict of label -> "
                        f"weight, got {type(class_weight).__name__}")
    return None if np.all(weights == 1.0) else weights
