"""A fitted model's weights as the start of another fit (the ``init`` parameter): matched by
attribute name and label, so that a tagger trained elsewhere (a CRFsuite model file read
by `load`) starts a semi-supervised fit on new data."""

import numpy as np
from sklearn.utils.validation import check_is_fitted

from ._base import BaseCRF

__all__ = ["init_priors", "init_vector"]


def _check_init(init):
    if not isinstance(init, BaseCRF):
        raise TypeError(f"init must be a fitted CRF (for example one read by "
                        f"sklearn_ssl_crf.load), got {type(init).__name__}")
    check_is_fitted(init, ["state_weights_", "transition_weights_"])


def init_priors(init):
    """``{'c1': ..., 'c2': ...}`` that ``init`` was trained with (chosen ones, for a model
    that chose them); checks that ``init`` is a fitted chain CRF."""
    _check_init(init)
    if init.training_log_ is None:
        raise ValueError(
            "init has no record of the c1 and c2 it was trained with (a model read from a "
            "CRFsuite file), so c1='auto' and c2='auto' cannot take them: give c1 and c2, "
            "its own (sklearn-crfsuite's tutorial: 0.1 and 0.1) or those to go on with")
    chosen = getattr(init, "best_params_", None) or {}
    return {name: chosen.get(name, getattr(init, name)) for name in ("c1", "c2")}


def init_vector(init, layout, attributes, classes):
    """The parameter vector of ``layout`` (this fit's attributes and labels, in their order)
    holding the weights of the fitted model ``init`` where both have the attribute and the
    labels; 0 elsewhere (attributes new to this data start from 0).

    Raises TypeError unless ``init`` is a fitted chain CRF, and ValueError when its labels
    are not this fit's or its order differs.
    """
    _check_init(init)
    if set(init.classes_) != set(classes):
        raise ValueError(f"init's labels {list(init.classes_)} are not those of y "
                         f"{list(classes)}: a start needs a weight for every label, and "
                         "only those")
    order = 2 if getattr(init, "trigram_weights_", None) is not None else 1
    if order != layout.order:
        raise ValueError(f"init is a chain of order {order}; this estimator has "
                         f"order={layout.order}")
    column = {label: k for k, label in enumerate(classes)}
    labels = np.array([column[label] for label in init.classes_])
    row = {name: k for k, name in enumerate(attributes)}
    old_rows = np.array([k for k, name in enumerate(init.attributes_) if name in row],
                        dtype=np.intp)
    new_rows = np.array([row[init.attributes_[k]] for k in old_rows], dtype=np.intp)
    n_labels = len(classes)
    state = np.zeros((len(attributes), n_labels))
    state[np.ix_(new_rows, labels)] = init.state_weights_[old_rows]
    transition = np.zeros((n_labels, n_labels))
    transition[np.ix_(labels, labels)] = init.transition_weights_
    blocks = [state, transition]
    if order == 2:
        # The trigram tensor's extra first index (n_labels) is the start: it stays there.
        first = np.append(labels, n_labels)
        trigram = np.zeros((n_labels + 1, n_labels, n_labels))
        trigram[np.ix_(first, labels, labels)] = init.trigram_weights_
        skip = np.zeros((n_labels, n_labels))
        skip[np.ix_(labels, labels)] = init.skip_weights_
        blocks += [trigram, skip]
    return layout.vector(blocks)
