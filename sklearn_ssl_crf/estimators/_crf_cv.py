"""`CRFCV`: the supervised CRF with its priors chosen by cross-validation."""

from sklearn.base import _fit_context

from ..training import Phase
from ..utils import unfitted_on_failure
from ._semi_supervised_path import SemiSupervisedPath

__all__ = ["CRFCV"]


class CRFCV(SemiSupervisedPath):
    """Supervised linear-chain CRF whose L1 and L2 strengths are chosen on held-out data.

    The supervised start of the semi-supervised estimators on its own: `CRF` fitted at every
    (``c1``, ``c2``) candidate on each fold of the labelled sequences (or on all of them,
    scored on ``X_dev, y_dev``), the pair with the best mean held-out score refitted on all
    labelled sequences. It is the tuned baseline the semi-supervised estimators are
    compared with, in one line; `CRF` keeps sklearn-crfsuite's defaults.

    Parameters
    ----------
    c1 : float, list of float or 'auto', default='auto'
        L1 strength; 'auto': chosen among 0 and 0.1; a list: chosen among its values.
    c2 : float, list of float or 'auto', default='auto'
        L2 strength; 'auto': chosen among 1, 0.1, 0.01 and 0.001.
    cv : int, cross-validation generator or iterable, default=5
        As in `EntropyRegularizedCRF`.
    scoring : None, str or callable, default=None
        As in `EntropyRegularizedCRF`.
    random_state : int, RandomState instance or None, default=None
        As in `EntropyRegularizedCRF`.
    algorithm : {'lbfgs'}, default='lbfgs'
        As in `CRF`.
    order : {1, 2}, default=1
        As in `CRF`.
    c2_transitions : float, list of float, None or 'auto', default='auto'
        L2 strength of the transition weights (as in `CRF`; None: ``c2``). 'auto': None
        at order 1; at order 2 chosen among None, 0.01 and 0.001 (a second-order chain's
        many transition weights want a weaker prior than its emissions).
    max_iterations : int, default=None
        As in `CRF`.
    num_memories : int, default=6
        As in `CRF`.
    epsilon : float, default=1e-5
        As in `CRF`.
    period : int, default=10
        As in `CRF`.
    delta : float, default=1e-5
        As in `CRF`.
    linesearch : {'Backtracking'} or None, default=None
        As in `CRF`.
    max_linesearch : int, default=20
        As in `CRF`.
    min_freq : float, default=0
        As in `CRF`.
    all_possible_states : bool, default=True
        As in `CRF`.
    all_possible_transitions : bool, default=True
        As in `CRF`.
    constraints : 'auto', None, str or dict, default='auto'
        As in `CRF`.
    class_weight : dict, 'balanced' or None, default=None
        As in `CRF`.
    verbose : bool, default=False
        As in `CRF`.
    n_jobs : int, default=None
        As in `CRF`.
    checkpoint, checkpoint_every : str or path-like, int, default=None, 10
        A directory where the fit's optimisation runs are checkpointed every
        ``checkpoint_every`` iterations; a fit given it again resumes there (see `CRF`).

    Attributes
    ----------
    best_params_ : dict
        The chosen ``c1`` and ``c2``, and ``c2_transitions`` where it was chosen among
        several candidates (order 2).
    cv_results_ : dict or None
        Every candidate's held-out scores, as in `EntropyRegularizedCRF`.
    classes_, attributes_, num_attributes_, state_weights_, transition_weights_, \
trigram_weights_, skip_weights_, allowed_transitions_, constraints_, class_weight_, \
state_features_, \
transition_features_, size_, \
training_log_, termination_condition_, vectorizer_
        As in `CRF` (``training_log_`` of the final fit).

    See Also
    --------
    CRF : Fixed priors, sklearn-crfsuite's defaults.
    EntropyRegularizedCRF : The semi-supervised CRF whose supervised start this is.

    Examples
    --------
    >>> from sklearn_ssl_crf import CRFCV
    >>> from sklearn_ssl_crf.datasets import make_sequences
    >>> X, y = make_sequences(60, features="dict", random_state=0)
    >>> model = CRFCV(c1=0.0, c2=[0.01, 1.0], cv=3, random_state=0).fit(X, y)
    >>> sorted(model.best_params_)
    ['c1', 'c2']
    """

    _parameter_constraints = {
        key: value for key, value in SemiSupervisedPath._parameter_constraints.items()
        if key not in ("early_stopping", "n_iter_no_change", "tol")
    }

    def __init__(
        self,
        *,
        c1="auto",
        c2="auto",
        cv=5,
        scoring=None,
        random_state=None,
        algorithm="lbfgs",
        order=1,
        c2_transitions="auto",
        max_iterations=None,
        num_memories=6,
        epsilon=1e-5,
        period=10,
        delta=1e-5,
        linesearch=None,
        max_linesearch=20,
        min_freq=0,
        all_possible_states=True,
        all_possible_transitions=True,
        constraints="auto",
        class_weight=None,
        verbose=False,
        n_jobs=None,
        checkpoint=None,
        checkpoint_every=10,
    ):
        super().__init__(
            algorithm=algorithm, c1=c1, c2=c2, order=order, c2_transitions=c2_transitions,
            max_iterations=max_iterations,
            num_memories=num_memories, epsilon=epsilon, period=period, delta=delta,
            linesearch=linesearch, max_linesearch=max_linesearch,
            min_freq=min_freq, all_possible_states=all_possible_states,
            all_possible_transitions=all_possible_transitions,
            constraints=constraints, class_weight=class_weight, verbose=verbose,
            n_jobs=n_jobs, checkpoint=checkpoint,
            checkpoint_every=checkpoint_every,
        )
        self.cv = cv
        self.scoring = scoring
        self.random_state = random_state

    @unfitted_on_failure
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, *, X_dev=None, y_dev=None, sample_weight=None):
        """Choose c1 and c2, and train on all labelled sequences with them.

        Parameters
        ----------
        X : list of sequences of feature dicts, list of feature matrices, or SequenceMatrix
            The training sequences.
        y : list of label sequences
            The labels of ``X``; None marks an unlabelled sequence, which is skipped, and
            a None label a token whose label is unknown (partial annotation, as in `CRF`);
            only fully labelled sequences are held out by the cross-validation.
        X_dev, y_dev : optional
            A development set on which c1 and c2 are chosen instead of by
            cross-validation.

        sample_weight : array-like of shape (n_sequences,), default=None
            Weight of each sequence of X in the labelled likelihood, as in `CRF`.

        Returns
        -------
        self : CRFCV
            The fitted estimator.
        """
        return self._fit_path(X, y, None, X_dev, y_dev, sample_weight)

    def _max_phase_iterations(self):
        return 0

    def _prepare(self, X, y, X_unlabeled, sample_weight=None):
        sequences, labelled, codes = self._fit_inputs(X, y, self.min_freq)
        return self._labelled_problem(sequences, labelled, codes, y, sample_weight)

    def _semi_supervised_phase(self, fold, theta, strength, max_iterations, iterates):
        return Phase(theta, [], 0, state=iterates.record(0, theta)[0])

    def _final_log(self, run):
        # A supervised model: its log and iterations are the final L-BFGS run's.
        return run.supervised.log, run.supervised.n_iter

    def _finish_fit(self, *args, **kwargs):
        super()._finish_fit(*args, **kwargs)
        del self.best_iteration_, self.validation_scores_
