"""`SelfTrainingCRF`: the self-training baseline of Jiao et al. (2006), §5.1."""

from dataclasses import dataclass, replace
from numbers import Integral

import numpy as np
from sklearn.base import _fit_context
from sklearn.utils._param_validation import Interval

from ..training import Fold, Phase, Problem
from ..utils import single_threaded_blas, unfitted_on_failure
from ._base import unlabeled_sequences
from ._label_constraints import constrained
from ._prediction import decode
from ._semi_supervised_path import SAMPLE_SIZE, SemiSupervisedPath

__all__ = ["SelfTrainingCRF"]


class SelfTrainingCRF(SemiSupervisedPath):
    """Self-training (bootstrapping) with a linear-chain CRF.

    Jiao et al. (2006), §5.1: train the CRF on the labelled sequences; label every unlabelled
    sequence with its Viterbi path; retrain on the labelled and these pseudo-labelled
    sequences; repeat until the pseudo-labels stop changing (or ``max_rounds``). Each round
    starts from the previous round's weights (the problem is convex: the same optimum,
    sooner). By default the priors ``c1``/``c2`` and the number of rounds (0, the supervised
    CRF, included) are chosen on held-out labelled data, as in `EntropyRegularizedCRF`.

    Parameters
    ----------
    max_rounds : int, default=10
        Maximum number of retraining rounds after the first supervised fit.
    c1 : float, list of float or 'auto', default='auto'
        As in `EntropyRegularizedCRF`; it applies to every round.
    c2 : float, list of float or 'auto', default='auto'
        As in `EntropyRegularizedCRF`; it applies to every round.
    cv : int, cross-validation generator or iterable, default=5
        As in `EntropyRegularizedCRF`.
    scoring : None, str or callable, default=None
        As in `EntropyRegularizedCRF`.
    early_stopping : bool, default=True
        As in `EntropyRegularizedCRF`.
    n_iter_no_change : int or None, default=2
        A held-out run stops after this many rounds without a better score.
    tol : float, default=0.01
        Self-training is kept only if its best mean held-out score beats the supervised
        CRF's by at least this (it was 2-4 span F1 points worse on BC2GM); the refit runs
        to the round of that best score.
    random_state : int, RandomState instance or None, default=None
        As in `EntropyRegularizedCRF`.
    selection_unlabeled : int or None, default=10000
        The cross-validation folds' rounds pseudo-label and train on a random sample of at
        most this many of the unlabelled sequences (drawn with ``random_state``), each
        weighted by the pool's tokens over the sample's, so that the pseudo-labelled text
        weighs what the pool's would against the labelled; the refit uses all of them.
        None: every fold uses all of them.
    algorithm : {'lbfgs'}, default='lbfgs'
        As in `CRF`. This and the settings below apply to every round.
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
    init : CRF or None, default=None
        As in `EntropyRegularizedCRF`.
    verbose : bool, default=False
        As in `CRF`.
    n_jobs : int, default=None
        As in `CRF`.
    checkpoint, checkpoint_every : str or path-like, int, default=None, 10
        A directory where the fit's optimisation runs are checkpointed every
        ``checkpoint_every`` iterations; a fit given it again resumes there (see `CRF`).

    Attributes
    ----------
    n_iter_ : int
        Retraining rounds run by the final fit.
    best_iteration_ : int
        The round whose weights were kept (0: the supervised CRF).
    termination_condition_ : {'converged', 'max_iter', 'no_improvement', \
'line_search_failed'}
        'converged': the pseudo-labels did not change; 'max_iter': ``max_rounds`` ran, with
        a `~sklearn.exceptions.ConvergenceWarning`; otherwise as in
        `EntropyRegularizedCRF`.
    rounds_ : list of dict
        Per round of the final fit: ``round``, ``changed_tokens`` (pseudo-labels that
        changed since the previous round; None for round 0), ``n_iter`` (L-BFGS
        iterations), and ``validation_score`` with a dev set.
    training_log_ : list of dict
        As in `CRF`, over all rounds (``round`` key).
    best_params_, validation_scores_, cv_results_
        As in `EntropyRegularizedCRF`, per round.
    classes_, attributes_, num_attributes_, state_weights_, transition_weights_, \
trigram_weights_, skip_weights_, allowed_transitions_, constraints_, class_weight_, \
state_features_, \
transition_features_, size_, \
vectorizer_
        As in `CRF`.

    See Also
    --------
    EntropyRegularizedCRF : Entropy regularisation, the settings chosen the same way.
    CRFCV : The supervised CRF with its priors chosen the same way.

    Examples
    --------
    >>> from sklearn_ssl_crf import SelfTrainingCRF
    >>> from sklearn_ssl_crf.datasets import make_sequences
    >>> X, y = make_sequences(30, features="dict", random_state=0)
    >>> model = SelfTrainingCRF(c1=0.0, c2=0.1, max_rounds=3, early_stopping=False)
    >>> model.fit(X[:10], y[:10], X_unlabeled=X[10:])
    SelfTrainingCRF(c1=0.0, c2=0.1, early_stopping=False, max_rounds=3)
    >>> model.rounds_[0]["round"], model.n_iter_ <= 3
    (0, True)
    """

    _phase_cap_name = "max_rounds"
    _parameter_constraints = {
        **SemiSupervisedPath._parameter_constraints,
        "max_rounds": [Interval(Integral, 0, None, closed="left")],
        "init": "no_validation",
        "selection_unlabeled": SAMPLE_SIZE,
    }

    def __init__(
        self,
        *,
        max_rounds=10,
        c1="auto",
        c2="auto",
        cv=5,
        scoring=None,
        early_stopping=True,
        n_iter_no_change=2,
        tol=0.01,
        random_state=None,
        selection_unlabeled=10_000,
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
        init=None,
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
        self.init = init
        self.max_rounds = max_rounds
        self.cv = cv
        self.scoring = scoring
        self.early_stopping = early_stopping
        self.n_iter_no_change = n_iter_no_change
        self.tol = tol
        self.random_state = random_state
        self.selection_unlabeled = selection_unlabeled

    @unfitted_on_failure
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, *, X_unlabeled=None, X_dev=None, y_dev=None, sample_weight=None):
        """Train by self-training, choosing the settings not given.

        Parameters
        ----------
        X : list of sequences of feature dicts, list of feature matrices, or SequenceMatrix
            The training sequences, labelled and unlabelled.
        y : list of label sequences
            The labels of ``X``; None marks an unlabelled sequence, and a None label a
            token whose label is unknown (partial annotation, as in `CRF`).
        X_unlabeled : iterable of sequences of the same kind as X, default=None
            More unlabelled sequences: a list, or any iterable such as a generator, read
            once and featurised 2,000 sequences at a time, as in `EntropyRegularizedCRF`.
            Their feature rows are held (sparse, not as dicts) for the rounds' relabelling.
        X_dev, y_dev : optional
            A development set on which the settings are chosen instead of by
            cross-validation; the round with the best dev score is kept.

        sample_weight : array-like of shape (n_sequences,), default=None
            Weight of each sequence of X in the labelled likelihood, as in `CRF`.

        Returns
        -------
        self : SelfTrainingCRF
            The fitted estimator.
        """
        return self._fit_path(X, y, X_unlabeled, X_dev, y_dev, sample_weight)

    def _max_phase_iterations(self):
        return self.max_rounds

    def _prepare(self, X, y, X_unlabeled, sample_weight=None):
        sequences, labelled, codes, streamed = self._fit_inputs_and_stream(
            X, y, () if X_unlabeled is None else X_unlabeled, self.min_freq)
        unlabeled = unlabeled_sequences(sequences, labelled)
        # Parts laid end to end: the unlabelled sequences of X, then the stream's blocks.
        parts = [sequences[unlabeled], *streamed]
        problem = _SelfTrainingProblem(**vars(self._labelled_problem(
            sequences, labelled, codes, y, sample_weight)), parts=parts)
        del sequences, streamed
        problem.sample = self._selection_sample(parts)
        # Chunked once, so that a cluster's workers receive them once per fit. (Chunking
        # empties the list of parts it is given, hence the copy.)
        problem.unlabeled = self._chunked(list(parts))
        return problem

    def _fold(self, problem, train, sampled=False):
        fold = super()._fold(problem, train, sampled)
        return _SelfTrainingFold(**vars(fold), parts=problem.parts if fold.sample is None
                                 else fold.sample.parts)

    def _semi_supervised_phase(self, fold, theta, strength, max_iterations, iterates):
        unlabeled, parts = fold.unlabeled, fold.parts
        scale = 1.0 if fold.sample is None else fold.sample.scale
        log, rounds, pseudo = [], [], None
        round_, n_iter = 0, 0
        reason, message = "max_iter", f"stopped at its cap of {max_iterations} rounds"
        scores, stopped = iterates.record(0, theta)
        while True:
            labels = self._viterbi(unlabeled, fold.layout, theta, self.constraints_)
            changed = None if pseudo is None else int(np.count_nonzero(labels != pseudo))
            rounds.append(dict({"round": round_, "changed_tokens": changed,
                                "n_iter": n_iter}, **scores))
            if changed == 0 or not labels.size:
                reason, message = "converged", "pseudo-labels unchanged"
                break
            if stopped is not None or round_ == max_iterations:
                reason, message = stopped or (reason, message)
                break
            pseudo, round_ = labels, round_ + 1
            weights = fold.weights
            if weights is not None or scale != 1.0:
                # Pseudo-labelled sequences weigh 1, or what a fold's sample stands for.
                weights = np.concatenate([
                    np.ones(len(fold.sequences)) if weights is None else weights,
                    np.full(sum(map(len, parts)), scale)])
            data = self._chunked([fold.sequences, *parts],
                                 np.concatenate([fold.codes, pseudo]),
                                 weights=weights)
            # On a cross-validation fold the rounds stop as its other fits do: they rank.
            result = self._minimize(self._supervised_objective(replace(fold, labelled=data)),
                                    theta, c1=fold.c1, delta=self._stop_delta(fold))
            theta, n_iter = result.x, result.n_iter
            log += [dict(entry, round=round_) for entry in result.log]
            scores, stopped = iterates.record(round_, theta)
        return Phase(theta, log, round_, reason, message, rounds)

    def _finish(self, problem, fold, result):
        self.rounds_ = result.state

    @staticmethod
    def _viterbi(data, layout, theta, constraints):
        """Label index of every token of ``data`` (a `ChunkedSequences`), in order, within
        ``constraints`` (a `LabelConstraints` or None)."""
        state, transition = layout.unpack(theta)
        with single_threaded_blas():
            paths = data.map(_chunk_viterbi, state, transition, constraints)
        return np.concatenate(paths) if paths else np.zeros(0, dtype=np.int64)


def _chunk_viterbi(chunk, workspace, state, transition, constraints):
    return decode(chunk, *constrained(constraints, chunk.layout, chunk.unary(state),
                                      transition))


@dataclass
class _SelfTrainingProblem(Problem):
    """The training data, and the unlabeled sequences' feature rows in parts laid end to
    end (the unlabeled sequences of X, then the stream's blocks), which every round packs
    again with its pseudo-labels."""

    parts: list = None


@dataclass
class _SelfTrainingFold(Fold):
    """A run's data, and its unlabeled sequences' feature rows in parts (the problem's, or
    its sample's on a cross-validation fold), which every round packs again."""

    parts: list = None
