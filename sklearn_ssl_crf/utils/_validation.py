"""Checks and conversions of user input shared by all estimators."""

import os
import sys
import warnings
import weakref
from itertools import chain
from numbers import Number

import numpy as np
import scipy.sparse as sp

from ._sequences import SequenceMatrix, UnlabeledSequences

__all__ = [
    "as_sequence_list",
    "concatenate_inputs",
    "unlabeled_input",
    "not_sequences_error",
    "stack_sequences",
    "sequence_lengths",
    "select_sequences",
    "is_matrix_input",
    "matrices_to_sequence_matrix",
    "check_feature_values",
    "check_labels",
    "encode_labels",
]


def as_sequence_list(X, name="X"):
    """X as a list of sequences, or a `SequenceMatrix` unchanged."""
    if isinstance(X, SequenceMatrix):
        return X
    if isinstance(X, (str, bytes, dict)) or sp.issparse(X) or not hasattr(X, "__iter__"):
        raise not_sequences_error(X, name, "a list of sequences (each a list of feature "
                                  "dicts, or a per-sequence feature matrix) or a "
                                  "SequenceMatrix")
    return X if isinstance(X, list) else list(X)


def not_sequences_error(X, name, expected):
    """The TypeError for an ``X`` that is not ``expected``; a path is told where text files
    are read."""
    message = f"{name} must be {expected}, got {type(X).__name__}"
    if isinstance(X, (str, os.PathLike)):
        message += ("; the estimators take features: featurise a text file of sentences "
                    "with WindowFeatures().transform(path), or in a Pipeline give "
                    "transform_input=['X_unlabeled'] and pass the path as X_unlabeled")
    return TypeError(message)


#: One-shot iterators already read by a fit: given again, they would be silently empty.
_READ_ITERATORS = weakref.WeakSet()


def unlabeled_input(X_unlabeled, X):
    """``X_unlabeled`` as the estimators read it: an `UnlabeledSequences` unwrapped, and
    checked against two ways of silently training on less than was meant.

    - A one-shot iterator (a generator) that an earlier fit read is empty now: a
      ``ValueError`` says so (several fits, as a search makes, need a list or a path).
    - A list or `SequenceMatrix` with as many sequences as X, in a fit that scikit-learn's
      model selection makes: it splits such a fit parameter like X; a warning says how to
      keep it whole (a fit outside a search is not split, and is not warned about).
    """
    if isinstance(X_unlabeled, UnlabeledSequences):
        return X_unlabeled.sequences
    if isinstance(X_unlabeled, (str, bytes, dict)) or not hasattr(X_unlabeled, "__iter__"):
        return X_unlabeled  # not sequences: the caller says what it expected
    if iter(X_unlabeled) is X_unlabeled:
        try:
            if X_unlabeled in _READ_ITERATORS:
                raise ValueError(
                    "X_unlabeled is an iterator that an earlier fit has already read to its "
                    "end; to fit again (as GridSearchCV and cross-validation do) pass a list, "
                    "WindowFeatures().transform(path), or UnlabeledSequences(...)")
            _READ_ITERATORS.add(X_unlabeled)
        except TypeError:  # no weak references to this kind of iterator
            pass
    elif (hasattr(X_unlabeled, "__len__") and hasattr(X, "__len__")
          and len(X_unlabeled) == len(X) and _called_by_model_selection()):
        warnings.warn(
            f"X_unlabeled has as many sequences as X ({len(X)}): GridSearchCV and "
            "cross_validate split such a fit parameter like X, so each fit would see only "
            "a fold's share of it; pass X_unlabeled=UnlabeledSequences(X_unlabeled) to keep "
            "it whole", UserWarning, stacklevel=4)
    return X_unlabeled


def _called_by_model_selection():
    """Whether a function of ``sklearn.model_selection`` (a search, cross-validation: what
    splits fit parameters like X) is among the callers, in this process or, through
    joblib, in the worker that runs the fit."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_globals.get("__name__", "").startswith("sklearn.model_selection."):
            return True
        frame = frame.f_back
    return False


def concatenate_inputs(X, y, X_unlabeled):
    """``X`` and ``y`` with the sequences of ``X_unlabeled`` appended as unlabelled
    (``y[i] = None``), in the same kind of container."""
    if X_unlabeled is None:
        return X, y
    X = as_sequence_list(X)
    X_unlabeled = as_sequence_list(unlabeled_input(X_unlabeled, X), name="X_unlabeled")
    if isinstance(y, (str, bytes, dict)) or not hasattr(y, "__len__"):
        raise TypeError(f"y must be a list of label sequences, got {type(y).__name__}")
    y = list(y) + [None] * len(X_unlabeled)
    if isinstance(X, SequenceMatrix) or isinstance(X_unlabeled, SequenceMatrix):
        first, second = (matrices_to_sequence_matrix(part) for part in (X, X_unlabeled))
        if first.n_features != second.n_features:
            raise ValueError(f"X has {first.n_features} attributes per token but X_unlabeled "
                             f"has {second.n_features}")
        return stack_sequences([first, second]), y
    return X + X_unlabeled, y


def stack_sequences(parts):
    """The sequences of `SequenceMatrix` parts with the same columns, laid end to end, as
    one `SequenceMatrix` (named as the first part's columns)."""
    lengths = np.concatenate([part.lengths for part in parts])
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    matrix = sp.vstack([part.matrix for part in parts], format="csr")
    return SequenceMatrix(matrix, offsets, parts[0].feature_names)


def sequence_lengths(X):
    """Number of tokens of each sequence of a list of sequences or a `SequenceMatrix`."""
    if isinstance(X, SequenceMatrix):
        return X.lengths
    return np.array([seq.shape[0] if hasattr(seq, "shape") else len(seq) for seq in X],
                    dtype=np.int64)


def select_sequences(X, indices):
    """The sequences at ``indices``, as the same kind of container."""
    if isinstance(X, SequenceMatrix):
        return X[indices]
    return [X[i] for i in indices]


def is_matrix_input(X):
    """True when X holds feature matrices rather than feature dicts."""
    if isinstance(X, SequenceMatrix):
        return True
    kinds = {sp.issparse(seq) or isinstance(seq, np.ndarray) for seq in X}
    if len(kinds) > 1:
        raise TypeError("X mixes feature matrices with other sequence types")
    return kinds == {True}


def matrices_to_sequence_matrix(X, n_features=None):
    """Stack per-sequence feature matrices (sparse or 2-d arrays) into a `SequenceMatrix`."""
    if isinstance(X, SequenceMatrix):
        matrix = X
    else:
        blocks = []
        for i, seq in enumerate(X):
            if not sp.issparse(seq) and np.ndim(seq) != 2:
                raise ValueError(f"sequence {i} of X is not a 2-d (tokens x attributes) matrix")
            blocks.append(sp.csr_matrix(seq, dtype=np.float64))
        widths = {block.shape[1] for block in blocks}
        if len(widths) > 1:
            raise ValueError(f"the sequences of X have different numbers of columns: {widths}")
        lengths = [block.shape[0] for block in blocks]
        stacked = sp.vstack(blocks, format="csr") if blocks else sp.csr_matrix((0, 0))
        matrix = SequenceMatrix(stacked, np.concatenate([[0], np.cumsum(lengths)]))
    check_feature_values(matrix)
    if n_features is not None and matrix.n_features != n_features:
        raise ValueError(
            f"X has {matrix.n_features} attributes per token, but the model was fitted "
            f"with {n_features}"
        )
    return matrix


#: The largest feature magnitude accepted. L-BFGS's first trial step has length 1 and its
#: line search halves it at most 20 times (`minimize_lbfgs`), so its shortest step still
#: moves a potential by up to ``|value| * 2**-20``: beyond 2**20 (about 1e6) even that step
#: can change the potentials by more than 1, and the search then finds no decrease and the
#: fit ends at iteration 0 with weights of zero (a value of 3e6 did so on synthetic tagging
#: data, 1e6 still trained). Such features need scaling (a logarithm, standardisation).
MAX_FEATURE_VALUE = 2.0**20


def feature_value_error(attribute, value):
    """What is wrong with the value of ``attribute`` that is non-finite or over
    `MAX_FEATURE_VALUE` in magnitude, in words."""
    if value != value or abs(value) == float("inf"):
        return f"attribute {attribute!r} has the non-finite value {value!r}"
    return (f"attribute {attribute!r} has the value {value!r}, beyond the +-2**20 a CRF's "
            "training can take (its potentials would swamp the optimiser's steps): scale "
            "it (a logarithm, standardisation)")


def check_feature_values(sequences, name="X"):
    """Raise ValueError naming the sequence, token and attribute of the first feature value
    of a `SequenceMatrix` that is NaN or infinite, or beyond `MAX_FEATURE_VALUE`."""
    matrix = sequences.matrix
    bad = ~(np.abs(matrix.data) <= MAX_FEATURE_VALUE)  # NaN compares False
    if not bad.any():
        return
    k = int(np.argmax(bad))
    row = int(np.searchsorted(matrix.indptr, k, side="right")) - 1
    i = int(np.searchsorted(sequences.offsets, row, side="right")) - 1
    column = int(matrix.indices[k])
    names = sequences.feature_names
    attribute = names[column] if names is not None else f"column {column}"
    problem = feature_value_error(attribute, float(matrix.data[k]))
    kind = "NaN or infinite" if "non-finite" in problem else "too large"
    raise ValueError(f"{name} contains {kind} feature values: sequence {i}, token "
                     f"{row - int(sequences.offsets[i])}: {problem}")


def check_labels(y, lengths, name="y", partial=False):
    """Validate label sequences against sequence lengths.

    Returns the indices of the labelled sequences (``y[i] is None`` marks an unlabelled one).
    With ``partial``, a label sequence may hold None where a token's label is unknown (one
    with no known label counts as unlabelled); otherwise a None label is an error.
    """
    if isinstance(y, (str, bytes, dict)) or not hasattr(y, "__len__"):
        raise TypeError(f"{name} must be a list of label sequences, got {type(y).__name__}")
    if len(y) != len(lengths):
        raise ValueError(
            f"X has {len(lengths)} sequences but {name} has {len(y)} label sequences"
        )
    labelled = []
    for i, labels in enumerate(y):
        if labels is None:
            continue
        if isinstance(labels, (str, bytes)) or not hasattr(labels, "__len__"):
            raise TypeError(
                f"{name}[{i}] must be a list of labels (or None when unlabelled), "
                f"got {type(labels).__name__}"
            )
        if len(labels) != lengths[i]:
            raise ValueError(
                f"sequence {i} has {lengths[i]} tokens but {len(labels)} labels"
            )
        unknown = sum(label is None for label in labels)
        if unknown and not partial:
            t = next(t for t, label in enumerate(labels) if label is None)
            raise ValueError(f"{name}[{i}][{t}] is None: only training labels may leave "
                             "tokens unknown")
        # NaN is unequal to itself: each would be a class of its own, never predicted.
        nan = next((t for t, label in enumerate(labels)
                    if isinstance(label, Number) and label != label), None)
        if nan is not None:
            raise ValueError(f"{name}[{i}][{nan}] is NaN, which is no label (it equals no "
                             "label, itself included); use None for an unknown label")
        if unknown < len(labels) or not len(labels):
            labelled.append(i)
    return np.asarray(labelled, dtype=np.int64)


def encode_labels(label_sequences, classes=None):
    """Integer codes of all labels, and the classes in order of first appearance.

    A None label (unknown) gets code -1 and is not a class. With ``classes`` given, labels
    outside it raise a ValueError.
    """
    flat = list(chain.from_iterable(label_sequences))
    index = {} if classes is None else {label: k for k, label in enumerate(classes)}
    try:
        if classes is None:
            codes = [-1 if label is None else index.setdefault(label, len(index))
                     for label in flat]
        else:
            codes = [-1 if label is None else index[label] for label in flat]
    except TypeError as error:
        bad = next(label for label in flat if not _is_hashable(label))
        raise TypeError(
            f"labels must be hashable (str, int, ...), got {type(bad).__name__}: {bad!r}"
        ) from error
    except KeyError as error:
        raise ValueError(f"unknown label {error.args[0]!r}; known: {list(index)}") from None
    return list(index), np.asarray(codes, dtype=np.int64)


def _is_hashable(value):
    try:
        hash(value)
    except TypeError:
        return False
    return True
