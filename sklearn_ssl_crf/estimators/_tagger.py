"""`Tagger`: python-crfsuite's ``Tagger`` inspection of a fitted estimator, for code written
for ``sklearn_crfsuite.CRF().tagger_``."""

from sklearn.utils import Bunch

__all__ = ["Tagger"]


class Tagger:
    """What ``tagger_`` gives: the inspection methods of python-crfsuite's ``Tagger``.

    sklearn-crfsuite's ``tagger_`` is a handle on a CRFsuite model file; here the model is
    the estimator's arrays, so this is a view of them, made on each access of ``tagger_``.
    python-crfsuite's ``set``, ``probability`` and ``marginal`` work on a sequence given
    before: their counterparts are the estimator's ``predict_marginals_single``.

    Parameters
    ----------
    estimator : fitted CRF (or any estimator of this package with weights)

    Examples
    --------
    >>> from sklearn_ssl_crf import CRF
    >>> X = [[{"w": "the"}, {"w": "dog"}], [{"w": "a"}, {"w": "cat"}]]
    >>> crf = CRF(c2=0.1).fit(X, [["DET", "NOUN"], ["DET", "NOUN"]])
    >>> info = crf.tagger_.info()
    >>> info.labels, info.header["num_attrs"]
    ({'DET': 0, 'NOUN': 1}, 4)
    >>> info.transitions == crf.transition_features_
    True
    >>> crf.tagger_.tag([{"w": "a"}, {"w": "dog"}])
    ['DET', 'NOUN']
    """

    def __init__(self, estimator):
        self._estimator = estimator

    def info(self):
        """The model's contents, as python-crfsuite's ``Tagger.info()`` parses them.

        Returns
        -------
        info : Bunch
            ``header`` (``num_labels``, ``num_attrs``, ``num_features``: the non-zero
            weights), ``labels`` (label -> index), ``attributes`` (attribute -> index),
            ``transitions`` (the estimator's ``transition_features_``) and
            ``state_features`` (its ``state_features_``).
        """
        estimator = self._estimator
        state_features = estimator.state_features_
        transitions = estimator.transition_features_
        return Bunch(
            header={"num_labels": len(estimator.classes_),
                    "num_attrs": estimator.num_attributes_,
                    "num_features": len(state_features) + len(transitions)},
            labels={label: i for i, label in enumerate(estimator.classes_)},
            attributes={name: i for i, name in enumerate(estimator.attributes_)},
            transitions=transitions,
            state_features=state_features,
        )

    def labels(self):
        """The labels, in the order of ``classes_``."""
        return list(self._estimator.classes_)

    def tag(self, xseq):
        """The labels of one sequence (the estimator's ``predict_single``)."""
        return self._estimator.predict_single(xseq)
