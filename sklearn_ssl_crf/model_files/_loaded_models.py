"""What a loaded model must be: its fitted CRFs' weights of the shapes their labels and
attributes imply, and finite, whatever format it came from (a crafted or damaged file
fails here, with the file named, not deep inside ``predict``); and its estimators given the
parameters added since the file was written."""

import inspect

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.pipeline import Pipeline

from ..estimators import BaseCRF, LabelConstraints
from ..features import SequenceVectorizer

__all__ = ["check_loaded", "with_new_parameters"]


class _Unfit(Exception):
    """A part of a loaded CRF that does not fit the rest (the message says which)."""


def _expect(condition, what):
    if not condition:
        raise _Unfit(what)



def check_loaded(model, name):
    """Raise ValueError naming ``name`` unless every fitted CRF in ``model`` has weights of
    the shapes its labels and attributes imply, all finite."""
    for where, crf in _crfs(model, "model"):
        if hasattr(crf, "state_weights_"):
            try:
                _check_crf(crf)
            except _Unfit as error:
                raise ValueError(f"{name} is a damaged model file: {where} {error}") from None


def with_new_parameters(model):
    """``model`` with each of the package's estimators in it (itself, a pipeline's steps,
    estimators held as parameters) given the default of every constructor parameter its
    file lacks: a model saved before a parameter existed has no attribute for it, and
    `get_params`, `clone` and a refit would fail on it. Its fitted state is left as is.
    Each object is visited once, without recursion (a file may make an estimator hold
    itself, or a chain of any length)."""
    package = __name__.split(".")[0] + "."
    seen, pending = set(), [model]
    while pending:
        item = pending.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, Pipeline):
            steps = vars(item).get("steps")
            pending += [step[1] for step in (steps if type(steps) is list else [])
                        if type(step) is tuple and len(step) == 2]
        elif isinstance(item, BaseEstimator) and type(item).__module__.startswith(package):
            signature = inspect.signature(type(item).__init__).parameters
            for name in type(item)._get_param_names():
                if name in vars(item):
                    pending.append(vars(item)[name])
                else:
                    setattr(item, name, signature[name].default)
    return model


def _crfs(model, where):
    if isinstance(model, BaseCRF):
        yield where, model
    elif isinstance(model, Pipeline):
        for i, step in enumerate(model.steps):
            if type(step) is tuple and len(step) == 2:
                yield from _crfs(step[1], f"{where}.steps[{i}]")


def _check_crf(crf):
    classes = getattr(crf, "classes_", None)
    _expect(type(classes) is list and classes, "has no classes")
    n_labels, n_attributes = len(classes), getattr(crf, "num_attributes_", None)
    _expect(type(n_attributes) is int, "has no number of attributes")
    second = getattr(crf, "trigram_weights_", None) is not None
    shapes = {"state_weights_": (n_attributes, n_labels),
              "transition_weights_": (n_labels, n_labels),
              "trigram_weights_": (n_labels + 1, n_labels, n_labels) if second else None,
              "skip_weights_": (n_labels, n_labels) if second else None}
    for attribute, shape in shapes.items():
        weights = getattr(crf, attribute, None)
        if shape is None:
            _expect(weights is None, f"has {attribute} but no trigram weights")
            continue
        _expect(type(weights) is np.ndarray and weights.dtype == np.float64
                and weights.shape == shape,
                f"{attribute} is not a float64 array of shape {shape}")
        _expect(np.isfinite(weights).all(), f"{attribute} has non-finite weights")
    allowed = getattr(crf, "allowed_transitions_", None)
    _expect(allowed is None or (type(allowed) is np.ndarray and allowed.dtype == bool
                                and allowed.shape == (n_labels + 1, n_labels, n_labels)),
            "allowed_transitions_ is not a bool array of its labels' shape")
    constraints = getattr(crf, "constraints_", None)
    _expect(constraints is None or (
        type(constraints) is LabelConstraints
        and all(type(part) is np.ndarray and part.dtype == bool and part.shape == shape
                for part, shape in [(constraints.transitions, (n_labels, n_labels)),
                                    (constraints.starts, (n_labels,)),
                                    (constraints.ends, (n_labels,))])),
        "constraints_ do not match its labels")
    vectorizer = getattr(crf, "vectorizer_", None)
    if vectorizer is not None:
        vocabulary = getattr(vectorizer, "vocabulary_", None)
        _expect(type(vectorizer) is SequenceVectorizer and type(vocabulary) is dict
                and len(vocabulary) == n_attributes
                and all(type(key) is str and type(column) is int
                        for key, column in vocabulary.items())
                and sorted(vocabulary.values()) == list(range(n_attributes)),
                "vectorizer_'s vocabulary does not number its attributes")
