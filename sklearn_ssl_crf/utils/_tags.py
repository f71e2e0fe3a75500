"""scikit-learn estimator tags of the estimators and transformers whose X is a list of
sequences."""

__all__ = ["LabelledSequenceTagsMixin", "SequenceTagsMixin"]


class SequenceTagsMixin:
    """Declares in scikit-learn's estimator tags that X is a list of sequences, not a 2-d
    array: ``__sklearn_tags__`` for scikit-learn >= 1.6, ``_more_tags`` for older versions
    (which ignore the former; later ones ignore the latter). Goes before ``BaseEstimator``
    in the bases.

    scikit-learn's common checks (``check_estimator``) feed 2-d arrays, so with these tags
    they skip the estimator; ``tests/test_conformance.py`` runs them all on a view whose
    tags claim 2-d input (the API checks pass; the 2-d-array checks fail, each listed), and
    their sequence form.

    Subclasses describe themselves with the class attributes below and `_requires_fit`.
    """

    # The kinds of token X's sequences may hold, by their names in scikit-learn's input
    # tags ("dict": feature dicts, "string": words). Per-sequence feature matrices have no
    # tag: X is never a 2-d array or sparse matrix itself.
    _token_kinds = ()
    # Whether fit needs y: a list of label sequences.
    _requires_y = False

    def _requires_fit(self):
        """Whether ``transform`` or ``predict`` needs ``fit`` first."""
        return True

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        for kind in self._token_kinds:
            setattr(tags.input_tags, kind, True)
        tags.target_tags.required = self._requires_y
        tags.requires_fit = self._requires_fit()
        return tags

    def __sklearn_is_fitted__(self):
        # What check_is_fitted asks. scikit-learn < 1.6 does not read requires_fit, so a
        # transformer that needs no fit says so here; otherwise scikit-learn's own rule: a
        # fitted attribute (name ending in "_") was set.
        return not self._requires_fit() or any(
            name.endswith("_") and not name.startswith("__") for name in vars(self))

    def _more_tags(self):
        return {
            "X_types": list(self._token_kinds),
            "requires_y": self._requires_y,
            "requires_fit": self._requires_fit(),
        }


class LabelledSequenceTagsMixin(SequenceTagsMixin):
    """`SequenceTagsMixin` of the estimators: fitted on sequences of feature dicts (or
    feature matrices) and their label sequences."""

    _token_kinds = ("dict",)
    _requires_y = True
